import PlugboardAPI
import PlugboardEtcd
import Testing

/// `etcd://HOST:PORT[,HOST:PORT...]/PREFIX`, without etcd.
struct EtcdClusterURLTests {
    @Test func parsesSeveralEndpoints_andNormalisesThePrefix() throws {
        let url = try EtcdClusterURL.parse("etcd://127.0.0.1:2379,etcd-b:22379,[::1]:32379//fleet/one/")
        #expect(url.endpoints == [EtcdEndpoint(host: "127.0.0.1", port: 2379), EtcdEndpoint(host: "etcd-b", port: 22379),
                                  EtcdEndpoint(host: "::1", port: 32379)])
        #expect(url.prefix == "/fleet/one")
        #expect(url.description == "etcd://127.0.0.1:2379,etcd-b:22379,[::1]:32379/fleet/one")
        #expect(try EtcdClusterURL.parse(url.description) == url)
    }

    @Test func takesEtcdsClientPort_whenNoneIsWritten() throws {
        let url = try EtcdClusterURL.parse("etcd://localhost,[::1]/p")
        #expect(url.endpoints.map(\.port) == [2379, 2379])
    }

    @Test(arguments: [
        ("http://127.0.0.1:2379/fleet", "etcd://"),
        ("etcd://127.0.0.1:2379", "a prefix"),
        ("etcd://127.0.0.1:2379/", "a prefix"),
        ("etcd://127.0.0.1:2379///", "a prefix"),
        ("etcd:///fleet", "at least one HOST:PORT"),
        ("etcd://127.0.0.1:0/fleet", "a port from 1 to 65535"),
        ("etcd://127.0.0.1:99999/fleet", "a port from 1 to 65535"),
        ("etcd://127.0.0.1:x/fleet", "a port"),
        ("etcd://a,,b/fleet", "a host name"),
        ("etcd://::1:2379/fleet", "in brackets"),
        ("etcd://[::1/fleet", "closed by \"]\""),
        ("etcd://[::1]x/fleet", "\":PORT\""),
        ("etcd://[not-v6]:1/fleet", "an IPv6 address"),
        ("etcd://h:1/fl eet", "without spaces"),
    ])
    func refuses_namingWhatWasExpected(text: String, expected: String) {
        #expect {
            try EtcdClusterURL.parse(text)
        } throws: { error in
            guard let error = error as? PlugboardError else { return false }
            return error.code == .fleetURLInvalid && (error.detail ?? "").contains(expected) && error.message.contains("invalid fleet URL")
        }
    }
}
