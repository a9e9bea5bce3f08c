import PlugboardHTTPCodec

/// One HTTP response: the status, the header fields by lower-cased name, the body.
public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    /// Header fields keyed by their lower-cased name.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// The value of the header `name` (any case) with optional whitespace trimmed, or nil.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()].map { $0.trimmingOWS() }
    }

    /// `Retry-After` as delay-seconds (RFC 9110, 10.2.3), or nil when absent or a date:
    /// the servers these clients talk to send seconds.
    public var retryAfterSeconds: Int? {
        header("retry-after").flatMap { Int($0) }
    }
}
