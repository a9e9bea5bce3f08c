/// Where S3 requests go: scheme, host and port, from S3Storage's `endpoint` config key, a
/// remote plugin source's `AWS_ENDPOINT_URL_S3`, or AWS's regional endpoint. Parsed by hand so that a user name or password in the URL, a path or
/// a query is refused rather than silently sent or dropped.
public struct S3Endpoint: Sendable, Equatable, CustomStringConvertible {
    /// `http` or `https`.
    public var scheme: String
    /// A DNS name, an IPv4 address or a bracketed IPv6 address.
    public var host: String
    /// The port when the URL names one that is not the scheme's default.
    public var port: Int?
    /// Whether this is AWS's own endpoint (virtual-hosted addressing is the default there).
    public var isAWS: Bool

    public init(scheme: String, host: String, port: Int?, isAWS: Bool) {
        self.scheme = scheme
        self.host = host
        self.port = port
        self.isAWS = isAWS
    }

    /// AWS's regional endpoint, `https://s3.<region>.amazonaws.com`.
    public static func aws(region: String) -> S3Endpoint {
        S3Endpoint(scheme: "https", host: "s3.\(region).amazonaws.com", port: nil, isAWS: true)
    }

    /// `host` or `host:port`, as the Host header and the signature carry it.
    public var authority: String {
        port.map { "\(host):\($0)" } ?? host
    }

    public var description: String { "\(scheme)://\(authority)" }

    /// Why `text` is not an endpoint, or nil; on success `parsed` holds it.
    public enum Problem: Error, Equatable {
        case scheme, userInfo, path, host, port
    }

    /// Parses `http://host[:port][/]` or `https://...`.
    public static func parse(_ text: String) throws(Problem) -> S3Endpoint {
        let scheme: String
        let rest: Substring
        if text.hasPrefix("https://") {
            scheme = "https"
            rest = text.dropFirst("https://".count)
        } else if text.hasPrefix("http://") {
            scheme = "http"
            rest = text.dropFirst("http://".count)
        } else {
            throw .scheme
        }
        var authority = rest
        if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            guard rest[slash...] == "/" else { throw .path }
            authority = rest[..<slash]
        }
        if authority.contains("@") { throw .userInfo }
        var host = authority
        var port: Int?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .host }
            host = authority[...close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw .host }
                port = try parsePort(after.dropFirst())
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            port = try parsePort(authority[authority.index(after: colon)...])
        }
        let hostBytes = host.utf8
        let allowed = hostBytes.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || [UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: ":")].contains(byte)
        }
        guard !hostBytes.isEmpty, allowed else { throw .host }
        if port == (scheme == "https" ? 443 : 80) { port = nil }
        return S3Endpoint(scheme: scheme, host: host.lowercased(), port: port, isAWS: false)
    }

    private static func parsePort(_ text: Substring) throws(Problem) -> Int {
        guard !text.isEmpty, text.count <= 5, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
              let port = Int(text), (1...65535).contains(port) else { throw .port }
        return port
    }
}
