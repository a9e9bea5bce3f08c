import PlugboardHTTPCodec

/// A response the server writes: status, header fields and body, either whole
/// (`body`) or produced while it is sent (`stream`). `Content-Length`, `Connection` and
/// `Date` are added by the serializer.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]
    /// For a HEAD answer: the `Content-Length` the GET would have (the body stays empty).
    public var headLength: Int?
    /// A body sent as it is produced; `body` is then empty.
    public var stream: ResponseStream?
    /// What the handler calls this exchange (an S3 operation's name), handed to
    /// ``HTTPHandler/completed(_:)`` for its log line and metric, so the request need not
    /// be parsed again there. Never sent.
    public var label: String?

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = [], headLength: Int? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.headLength = headLength
    }

    public init(status: Int, headers: [(String, String)] = [], stream: ResponseStream) {
        self.init(status: status, headers: headers)
        self.stream = stream
    }

    /// The length `Content-Length` announces.
    var contentLength: Int { stream?.length ?? body.count }

    /// Whether the status carries no content at all (RFC 9110 section 6.4.1).
    var forbidsContent: Bool { status == 204 || status == 304 || (100..<200).contains(status) }

    /// The response as bytes on the wire (for a streamed body, its head only). For HEAD the
    /// body is left out and the length header says what GET would send.
    public func serialize(head: Bool, keepAlive: Bool, version: HTTPVersion = .http11, date: String) -> [UInt8] {
        var out: [UInt8] = []
        writeHead(into: &out, head: head, keepAlive: keepAlive, version: version, date: date,
                  then: !head && !forbidsContent ? body : [])
        return out
    }

    /// Whether ``body`` goes on the wire after the head.
    func sendsBody(head: Bool) -> Bool { !head && !forbidsContent && !body.isEmpty }

    /// A body up to this size is copied behind its head, into the head's buffer, and
    /// leaves in a `send` of one buffer; a larger one is a buffer of its own beside the
    /// head's, both in one `sendmsg`, so that it is never copied. Near this size the copy
    /// costs what queueing and sending a second piece does (measured both ways:
    /// docs/BENCHMARKS.md, "Request heads as bytes").
    static let copiedBodyLimit = 512

    /// Writes what the server sends first into `out`: the status line and the header
    /// section, and ``body`` behind them when it is at most ``copiedBodyLimit`` bytes.
    /// True when the body is still to send, as a buffer of its own.
    func write(into out: inout [UInt8], head: Bool, keepAlive: Bool, version: HTTPVersion, date: String) -> Bool {
        let copied = sendsBody(head: head) && body.count <= Self.copiedBodyLimit
        writeHead(into: &out, head: head, keepAlive: keepAlive, version: version, date: date, then: copied ? body : [])
        return sendsBody(head: head) && !copied
    }

    /// The status line and header section, and `then` after them, written at the end of
    /// `out`: each piece copied once into storage made for all of them
    /// (``HTTPHeadWriter/InPlace``). The room is a guess from the number of fields, which
    /// most heads fit; a head that does not is sized exactly and written again. (Sizing
    /// every head first walked the fields twice, retaining every name and value twice.)
    func writeHead(into out: inout [UInt8], head: Bool, keepAlive: Bool, version: HTTPVersion, date: String,
                   then after: [UInt8] = []) {
        let reason = Self.reason(status)
        let length = head ? headLength ?? contentLength : contentLength
        let connection: String? = !keepAlive ? "close" : version == .http10 ? "keep-alive" : nil
        var written = writeHead(room: 160 + headers.count * 64 + after.count, reason: reason, length: length,
                                version: version, connection: connection, date: date, then: after)
        if written.isEmpty {
            typealias Writer = HTTPHeadWriter.InPlace
            var size = Writer.statusLineSize(status: status, reason: reason) + Writer.fieldSize("Date", date) + Writer.endSize
            for (name, value) in headers { size += Writer.fieldSize(name, value) }
            if !forbidsContent { size += Writer.fieldSize("Content-Length", decimal: length) }
            if let connection { size += Writer.fieldSize("Connection", connection) }
            written = writeHead(room: size + after.count, reason: reason, length: length, version: version,
                                connection: connection, date: date, then: after)
            precondition(written.count == size + after.count, "a head sized apart from what was written")
        }
        if out.isEmpty {
            out = written
        } else {
            out.append(contentsOf: written)
        }
    }

    /// The head and `after` in storage of `room` bytes; empty when they do not fit.
    private func writeHead(room: Int, reason: String, length: Int, version: HTTPVersion, connection: String?,
                           date: String, then after: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: room) { buffer, count in
            var out = HTTPHeadWriter.InPlace(buffer)
            out.statusLine(minorVersion: version == .http10 ? 0 : 1, status: status, reason: reason)
            // A stored value with a CR or LF would split the header: such bytes go out as spaces.
            for (name, value) in headers { out.field(name, replacingControls: value) }
            if !forbidsContent { out.field("Content-Length", decimal: length) }
            if let connection { out.field("Connection", replacingControls: connection) }
            out.field("Date", replacingControls: date)
            out.end()
            after.withUnsafeBufferPointer { out.bytes($0) }
            count = out.overflowed ? 0 : out.written(since: buffer)
        }
    }

    /// `HTTP/1.1 100 Continue`, sent before reading a body the client holds back.
    public static let continueLine: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 200: return "OK"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 416: return "Range Not Satisfiable"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 423: return "Locked"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 451: return "Unavailable For Legal Reasons"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        default: return "Status \(status)"
        }
    }
}
