import PlugboardBytes

/// The URLs of the `/v1/objects` API under one base URL (docs/http-contract: keys are
/// percent-encoded byte by byte, everything except `A-Z a-z 0-9 - _ ~`).
public struct Endpoint: Sendable, Equatable {
    /// The base URL without a trailing `/`, such as `http://127.0.0.1:8080` or
    /// `https://storage.example/plugboard`.
    public let base: String

    public init(base: String) {
        var trimmed = Substring(base)
        while trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        self.base = String(trimmed)
    }

    /// `{base}/v1/objects/{key}`.
    public func object(_ key: String) -> String {
        base + "/v1/objects/" + Self.percentEncode(key)
    }

    /// `{base}/v1/objects?prefix=P&limit=N[&cursor=C]`; `cursor` is sent whenever it is not
    /// nil, the empty string included, so that the server refuses a token it did not issue.
    public func listing(prefix: String, limit: Int, cursor: String?) -> String {
        var url = base + "/v1/objects?prefix=" + Self.percentEncode(prefix) + "&limit=" + String(limit)
        if let cursor { url += "&cursor=" + Self.percentEncode(cursor) }
        return url
    }

    /// Every byte of `text`'s UTF-8 as `%XX` (upper-case hex) except the unreserved
    /// `A-Z a-z 0-9 - _ ~`. `.` and `/` are encoded too, so that no client library or
    /// proxy can fold `.`, `..` or `//` path segments away.
    public static func percentEncode(_ text: String) -> String {
        PercentEncoding.encode(text, encodingDots: true)
    }

    /// The host (`[v6]` with its brackets) and the port text, if any, of an authority
    /// (`host`, `host:port`, `[v6]`, `[v6]:port`); nil when a bracket is not closed or
    /// something other than a port follows it.
    static func split(_ authority: Substring) -> (host: Substring, port: Substring?)? {
        guard authority.hasPrefix("[") else {
            guard let colon = authority.firstIndex(of: ":") else { return (authority, nil) }
            return (authority[..<colon], authority[authority.index(after: colon)...])
        }
        guard let close = authority.firstIndex(of: "]") else { return nil }
        let after = authority[authority.index(after: close)...]
        guard !after.isEmpty else { return (authority[...close], nil) }
        guard after.hasPrefix(":") else { return nil }
        return (authority[...close], after.dropFirst())
    }

    /// A port of 1 to 65535 in decimal digits.
    static func portNumber(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy(\.isASCII), let number = Int(text),
              (1...65535).contains(number) else { return nil }
        return number
    }
}
