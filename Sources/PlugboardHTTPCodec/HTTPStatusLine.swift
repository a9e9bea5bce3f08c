/// `HTTP/1.x SP 3DIGIT [SP reason]` (RFC 9112 section 4); the reason is not read.
public struct HTTPStatusLine: Sendable, Equatable {
    /// The `x` of `HTTP/1.x`.
    public var minorVersion: Int
    public var status: Int

    public init(minorVersion: Int, status: Int) {
        self.minorVersion = minorVersion
        self.status = status
    }

    public static func parse(_ line: ArraySlice<UInt8>) throws(HTTPSyntaxError) -> HTTPStatusLine {
        let b = Array(line)
        guard b.count >= 12, b.starts(with: "HTTP/1.".utf8), HTTPByte.isDigit(b[7]), b[8] == HTTPByte.space,
              HTTPByte.isDigit(b[9]), HTTPByte.isDigit(b[10]), HTTPByte.isDigit(b[11]),
              b.count == 12 || b[12] == HTTPByte.space else {
            throw HTTPSyntaxError(.invalidStatusLine, "malformed status line", expected: "an HTTP/1.x status line")
        }
        let status = b[9...11].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        return HTTPStatusLine(minorVersion: Int(b[7] - 0x30), status: status)
    }
}

/// The `Connection` field's part in persistence (RFC 9112 section 9.3): HTTP/1.1 keeps a
/// connection open unless `close` is listed, HTTP/1.0 only when `keep-alive` is.
public enum HTTPPersistence {
    /// `values`: every `Connection` field's value, each a comma-separated list of options.
    public static func keepAlive<Values: Sequence<String>>(minorVersion: Int, connection values: Values) -> Bool {
        let options = values.flatMap { $0.split(separator: ",") }.map { $0.trimmingOWS().lowercased() }
        return minorVersion >= 1 ? !options.contains("close") : options.contains("keep-alive")
    }
}
