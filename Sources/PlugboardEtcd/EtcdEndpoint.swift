/// One etcd member's client address: where its JSON gateway answers (`--listen-client-urls`).
public struct EtcdEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// A name or an address; an IPv6 address without brackets.
    public var host: String
    /// The client port (etcd's default is 2379).
    public var port: Int

    /// An endpoint; `host` an IPv6 address without brackets when it is one.
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`, an IPv6 address in brackets: as a URL's authority and a Host header write it.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}
