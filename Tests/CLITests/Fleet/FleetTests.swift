#if canImport(Glibc)
import Glibc
#endif
import PlugboardHost
import PlugboardJSON
import PlugboardTestSupport
import Synchronization
import Testing

/// The fleet end to end: a real three-member etcd, real `plugboard serve --fleet` hosts and
/// the `plugboard fleet` commands, one story in order (one cluster start for all of it):
/// set, a rollout that converges, one the preflight refuses, etcd gone, a restart from
/// the local copy.
@Suite(.serialized, .enabled(if: EtcdCluster.isInstalled, "etcd not installed: apt-get install etcd-server"))
struct FleetTests {
    static let good = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage"}"#], environment: "testing")
    static let next = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage", "rank": 5}"#], environment: "testing")
    /// Names a product no build has: the host's reload refuses it before anything loads.
    static let missing = ManifestText.make([#"{"name": "Mem", "product": "NoSuchStorage"}"#], environment: "testing")

    /// Passes its preflight, but answers every GET of an object 503.
    static let failing = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage", "config": {"failOperations": ["get"]}}"#],
                                           environment: "testing")

    static let other = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage", "rank": 7}"#], environment: "testing")

    /// A fleet host, with its state folder outside its own sandbox so that a second
    /// process can start from it.
    static func host(_ id: String, fleet: String, state: String) throws -> ServerProcess {
        try ServerProcess(arguments: ["--fleet", fleet, "--host-id", id, "--fleet-state", state, "--log-level", "notice"])
    }

    static func readyz(_ host: ServerProcess) throws -> Int {
        try host.client().request("GET", "/readyz").status
    }

    @Test func setRolloutRefusalOutageAndRestart() async throws {
        let cluster = try await EtcdCluster.start()
        defer { cluster.stopAll() }
        let admin = try Sandbox("fleet-admin")
        defer { admin.remove() }
        let fleet = "etcd://\(cluster.endpointList)/fleet-test"
        let good = try admin.write("good.json", Self.good), next = try admin.write("next.json", Self.next)
        let missing = try admin.write("missing.json", Self.missing), failing = try admin.write("failing.json", Self.failing)

        // The first manifest, then two hosts that start from it.
        let set = await admin.runExactly(["fleet", "set", good, "--fleet", fleet])
        #expect(set.status == 0, "\(set.stderr)")
        let stable = String(set.stdout.split(separator: " ").last ?? "").filter(\.isHexDigit)
        #expect(stable.count == 64)
        let h1 = try Self.host("h1", fleet: fleet, state: admin.path("state-h1"))
        let h2 = try Self.host("h2", fleet: fleet, state: admin.path("state-h2"))
        for (id, host) in [("h1", h1), ("h2", h2)] {
            #expect(host.waitForStderr(containing: "fleet: host \"\(id)\" registered at"), "\(host.stderr)")
            #expect(host.stderr.contains("fleet: starting from manifest \(stable) from etcd"))
            #expect(try Self.readyz(host) == 200)
        }
        let status = await admin.runExactly(["fleet", "status", "--fleet", fleet, "--json"])
        #expect(status.status == 0)
        let hosts = try status.json()["hosts"]?.elements ?? []
        #expect(hosts.compactMap { $0["id"]?.string } == ["h1", "h2"])
        #expect(hosts.allSatisfy { $0["manifestDigest"]?.string == stable })

        // A good rollout converges: exit 0, every host applied it, and it is stable.
        let rollout = await admin.runExactly(["fleet", "rollout", next, "--fleet", fleet, "--waves", "1,100%", "--bake", "0.2", "--json"])
        #expect(rollout.status == 0, "\(rollout.stderr)")
        let record = try rollout.json()["rollout"]
        #expect(record?["state"]?.string == "succeeded")
        let candidate = try #require(record?["candidate"]?.string)
        for host in [h1, h2] {
            #expect(host.waitForStderr(containing: "fleet: applied manifest \(candidate)"), "\(host.stderr)")
        }

        // A refused candidate stops at the first wave (h1), rolls it back, leaves h2 alone
        // (past the preflight fleet rollout runs where it runs, which would refuse it first).
        let refused = await admin.runExactly(["fleet", "rollout", missing, "--fleet", fleet, "--waves", "1,100%", "--bake", "0", "--no-preflight"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("host \"h1\" refused the candidate in wave 1"), "\(refused.stderr)")
        #expect(refused.stderr.contains("loader.product_not_found"))
        #expect(h1.stderr.contains("fleet: refused manifest"))
        #expect(!h2.stderr.contains("fleet: refused manifest"))
        let after = await admin.runExactly(["fleet", "status", "--fleet", fleet, "--json"])
        #expect(try after.json()["stable"]?["digest"]?.string == candidate)
        #expect(try after.json()["rollout"]?["state"]?.string == "rolled back")
        #expect(try Self.readyz(h1) == 200)

        // A candidate that fails its requests is rolled back by the error-rate gate while
        // its first wave bakes; requests reach h1 the whole time.
        let done = StopFlag()
        let port = h1.port
        let load = OwnThread.start {
            while !done.value.load(ordering: .relaxed) {
                _ = try? RawClient(port: port).request("GET", "/v1/objects/probe")
            }
        }
        let gated = await admin.runExactly(["fleet", "rollout", failing, "--fleet", fleet, "--waves", "1,100%", "--bake", "3",
                                            "--max-error-rate", "0.2"])
        done.value.store(true, ordering: .relaxed)
        await load.value
        #expect(gated.status == 1)
        #expect(gated.stderr.contains("error rate of wave 1"), "\(gated.stderr)")
        #expect(gated.stderr.contains("host \"h1\""))
        #expect(!h2.stderr.contains("fleet: applied manifest \(try Digest.sha256Hex(Array(Self.failing.utf8)))"))

        // --abort stops a rollout that bakes: h1 goes back, the rollout exits 1, aborted.
        let other = try admin.write("other.json", Self.other)
        let otherDigest = try Digest.sha256Hex(Array(Self.other.utf8))
        let backBefore = h1.stderrLines(containing: "fleet: applied manifest \(candidate)")
        let long = Task { await admin.runExactly(["fleet", "rollout", other, "--fleet", fleet, "--waves", "1,100%", "--bake", "600"]) }
        #expect(h1.waitForStderr(containing: "fleet: applied manifest \(otherDigest)"), "\(h1.stderr)")
        let abort = await admin.runExactly(["fleet", "rollout", "--abort", "--fleet", fleet])
        #expect(abort.status == 0, "\(abort.stderr)")
        #expect(abort.stdout.contains("aborted"))
        let aborted = await long.value
        #expect(aborted.status == 1)
        #expect(aborted.stderr.contains("aborted by plugboard fleet rollout --abort"))
        #expect(h1.waitForStderr(containing: "fleet: applied manifest \(candidate)", times: backBefore + 1), "\(h1.stderr)")

        // etcd gone: the hosts serve on, and h1 restarted starts from its local copy.
        cluster.stopAll()
        #expect(h1.waitForStderr(containing: "fleet: etcd unreachable"), "\(h1.stderr)")
        #expect(try Self.readyz(h2) == 200)
        #expect(h1.stop() == 0)
        let again = try Self.host("h1", fleet: fleet, state: admin.path("state-h1"))
        #expect(again.stderr.contains("fleet: starting from the local copy of manifest \(candidate)"), "\(again.stderr)")
        #expect(try Self.readyz(again) == 200)
        let down = await admin.runExactly(["fleet", "status", "--fleet", fleet])
        #expect(down.status == 1)
        #expect(down.stderr.contains("etcd"))
    }
}

/// Tells the load's thread to stop.
final class StopFlag: Sendable {
    let value = Atomic<Bool>(false)
}
