/// A response the server writes: status, header fields and body. `Content-Length`,
/// `Connection` and `Date` are added by the serializer.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// For a HEAD answer: the `Content-Length` the GET would have (the body stays empty).
    public var headLength: Int?

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], headLength: Int? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.headLength = headLength
    }

    /// Whether the status carries no content at all (RFC 9110 section 6.4.1).
    var forbidsContent: Bool { status == 204 || status == 304 || (100..<200).contains(status) }

    /// The response as bytes on the wire. For HEAD the body is left out and the length
    /// header says what GET would send.
    public func serialize(head: Bool, keepAlive: Bool, version: HTTPVersion = .http11, date: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(160 + body.count + headers.count * 40)
        out.append(contentsOf: "\(version == .http10 ? "HTTP/1.0" : "HTTP/1.1") \(status) \(Self.reason(status))\r\n".utf8)
        for (name, value) in headers {
            out.append(contentsOf: name.utf8)
            out.append(contentsOf: ": ".utf8)
            // A value can hold no CR or LF: a stored value with one would split the header.
            out.append(contentsOf: value.utf8.lazy.map { $0 == 13 || $0 == 10 ? 32 : $0 })
            out.append(contentsOf: "\r\n".utf8)
        }
        if !forbidsContent {
            out.append(contentsOf: "Content-Length: \(head ? headLength ?? body.count : body.count)\r\n".utf8)
        }
        if !keepAlive {
            out.append(contentsOf: "Connection: close\r\n".utf8)
        } else if version == .http10 {
            out.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        out.append(contentsOf: "Date: \(date)\r\n\r\n".utf8)
        if !head && !forbidsContent { out.append(contentsOf: body) }
        return out
    }

    /// `HTTP/1.1 100 Continue`, sent before reading a body the client holds back.
    public static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 204: return "No Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        default: return "Status \(status)"
        }
    }
}
