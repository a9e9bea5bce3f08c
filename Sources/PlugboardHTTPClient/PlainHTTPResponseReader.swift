import PlugboardHTTPCodec

/// Where a response's bytes come from: a socket, or a list of chunks in tests.
protocol PlainHTTPByteSource {
    /// Reads at most `buffer.count` bytes into `buffer`; 0 means the peer closed the stream.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(PlainHTTPError) -> Int
}

/// How much of a response this client holds in memory.
public struct PlainHTTPLimits: Sendable {
    /// The status line and headers together (and a chunked body's trailers).
    public var maxHeaderBytes: Int
    /// The body, whether framed by Content-Length, chunks or the end of the stream: 5 GiB,
    /// S3's single-PUT limit, the largest object Plugboard's storages write.
    public var maxBodyBytes: Int

    public init(maxHeaderBytes: Int = 64 * 1024, maxBodyBytes: Int = 5 << 30) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
    }
}

/// One response: status, headers with lower-case names (repeated ones joined with ", ",
/// as URLSession does), body, and whether the connection may carry another request.
public struct PlainHTTPResponse: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]
    public var reusable: Bool
}

/// A response's status and headers, read before its body.
struct PlainHTTPResponseHead: Sendable {
    var status: Int
    var headers: [String: String]
    /// The Content-Length the body is framed by; nil for a chunked or close-delimited body.
    var contentLength: Int?
}

/// Reads one HTTP/1.x response from `source`. The body ends where Content-Length or the
/// last chunk says, or, with neither, where the server closes the connection.
///
/// The body comes whole (``read(method:)``) or in pieces (``readHead(method:)``, then
/// ``nextBodyChunk(maxBytes:)`` until nil): both walk the same framing, so a streamed body
/// is refused exactly where a whole one would be.
struct PlainHTTPResponseReader<Source: PlainHTTPByteSource> {
    private(set) var source: Source
    private let limits: PlainHTTPLimits
    private var buffer: [UInt8] = []
    /// Where reads land before `buffer` takes what arrived.
    private var scratch = [UInt8](repeating: 0, count: 1 << 16)
    private var start = 0
    private var ended = false
    /// Whether any byte arrived: a reused connection that breaks before the first one
    /// was closed by the server while idle, and the request may go again on a new one.
    private(set) var receivedAny = false
    private var body = BodyState.done
    /// Whether the head allowed another request on the connection once the body is read.
    private var keepAlive = false
    /// The body bytes handed out so far, for the limits and for what an error reports.
    private(set) var bodyBytesRead = 0

    /// Where the reader is in a body. A chunked body's `left` counts the current chunk's
    /// data still to come, `size` its size; `opened` says a chunk's CRLF is still owed.
    private enum BodyState {
        case length(left: Int, total: Int)
        case chunked(left: Int, size: Int, opened: Bool)
        case toEnd
        case done
    }

    init(_ source: Source, limits: PlainHTTPLimits = PlainHTTPLimits()) {
        self.source = source
        self.limits = limits
    }

    /// The response to a request whose method was `method`; interim 1xx responses skipped.
    mutating func read(method: String) throws(PlainHTTPError) -> PlainHTTPResponse {
        try readBody(of: try readHead(method: method))
    }

    /// The response `head` began, its body read whole.
    mutating func readBody(of head: PlainHTTPResponseHead) throws(PlainHTTPError) -> PlainHTTPResponse {
        var body: [UInt8] = []
        // Room for at most 1 MiB up front: the length is the server's word, and a response
        // announcing gigabytes and sending a few bytes must not commit that memory (the
        // s3-response fuzz target found `Content-Length: 000...03442882186`).
        if let length = head.contentLength { body.reserveCapacity(min(length, 1 << 20)) }
        while try appendBody(to: &body, upTo: Int.max) {}
        return PlainHTTPResponse(status: head.status, headers: head.headers, body: body, reusable: isReusable)
    }

    /// Whether the connection may carry another request: the body was read to its end,
    /// the head allowed it, and nothing arrived past the response (nothing asked for such
    /// bytes, so the connection's state is unknown).
    var isReusable: Bool {
        bodyEnded && keepAlive && start == buffer.count
    }

    /// The head of the response to a request whose method was `method` (interim 1xx
    /// responses skipped), leaving its body to ``nextBodyChunk(maxBytes:)``.
    mutating func readHead(method: String) throws(PlainHTTPError) -> PlainHTTPResponseHead {
        var head = try readHeadBlock()
        while (100..<200).contains(head.status) {
            guard head.status != 101 else {
                throw .badResponse(expected: "a final response", found: "101 Switching Protocols")
            }
            head = try readHeadBlock()
        }
        let headers = head.headers
        keepAlive = head.keepAlive
        bodyBytesRead = 0
        var contentLength: Int?
        if method == "HEAD" || head.status == 204 || head.status == 304 {
            body = .done
        } else if let codings = headers["transfer-encoding"] {
            let last = codings.split(separator: ",").last.map { $0.trimmingOWS().lowercased() }
            if last == "chunked" {
                body = .chunked(left: 0, size: 0, opened: false)
            } else {
                body = .toEnd
                keepAlive = false
            }
        } else if let text = headers["content-length"] {
            let length = try Self.contentLength(text)
            guard length <= limits.maxBodyBytes else {
                throw .tooLarge(what: "response body", limit: limits.maxBodyBytes, found: length)
            }
            // An empty body is over already: no piece to wait for, the connection free.
            body = length == 0 ? .done : .length(left: length, total: length)
            contentLength = length
        } else {
            body = .toEnd
            keepAlive = false
        }
        return PlainHTTPResponseHead(status: head.status, headers: headers, contentLength: contentLength)
    }

    /// The next piece of the body, at most `maxBytes` (and fewer only at its end), or nil
    /// once it has ended. Reads no further than the piece needs, bar the few bytes a chunk
    /// header line brings along: a consumer that stops asking stops the reading. With
    /// `whatArrived`, the piece is what one read brought (at least a byte): a body that
    /// never ends (a stream of events) hands each event over as it comes.
    mutating func nextBodyChunk(maxBytes: Int, whatArrived: Bool = false) throws(PlainHTTPError) -> [UInt8]? {
        var chunk: [UInt8] = []
        chunk.reserveCapacity(min(maxBytes, 1 << 20))
        while chunk.count < maxBytes, try appendBody(to: &chunk, upTo: maxBytes - chunk.count) {
            if whatArrived { break }
        }
        // A body framed by its length is over with its last byte: say so now, so that the
        // connection can be reused without waiting for a consumer to ask once more.
        if case .length(0, _) = body { body = .done }
        return chunk.isEmpty ? nil : chunk
    }

    /// Whether the body has been read to its end.
    var bodyEnded: Bool {
        if case .done = body { return true }
        return false
    }

    private struct Head {
        var status: Int
        var headers: [String: String]
        var keepAlive: Bool
    }

    private mutating func readHeadBlock() throws(PlainHTTPError) -> Head {
        let block = try readBlock()
        var lines = Self.lines(block)
        guard !lines.isEmpty else { throw .badResponse(expected: "an HTTP/1.x status line", found: "an empty line") }
        let statusLine = lines.removeFirst()
        let status: HTTPStatusLine
        do throws(HTTPSyntaxError) {
            status = try HTTPStatusLine.parse(statusLine)
        } catch {
            throw .badResponse(expected: error.expected, found: Self.shown(statusLine))
        }
        var headers: [String: String] = [:]
        for line in lines {
            // The same field grammar the server reads requests by; the lines are slices
            // of `buffer`, so their indices are the buffer's.
            let field: HTTPFieldLine
            do throws(HTTPSyntaxError) {
                field = try HTTPFieldLine.parse(buffer, line.startIndex..<line.endIndex)
            } catch {
                throw .badResponse(expected: error.expected, found: Self.shown(line))
            }
            let name = field.lowercasedName(in: buffer)
            let value = field.value(in: buffer)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        let keepAlive = HTTPPersistence.keepAlive(minorVersion: status.minorVersion, connection: headers["connection"].map { [$0] } ?? [])
        return Head(status: status.status, headers: headers, keepAlive: keepAlive)
    }

    /// The bytes up to the blank line that ends a header block, without it.
    private mutating func readBlock() throws(PlainHTTPError) -> ArraySlice<UInt8> {
        // How far past `start` the search got: `fill` may move the pending bytes to the front.
        var searched = 0
        while true {
            if let end = Self.blankLine(in: buffer, from: start + searched, start: start) {
                guard end.next - start <= limits.maxHeaderBytes else {
                    throw .tooLarge(what: "response header", limit: limits.maxHeaderBytes, found: end.next - start)
                }
                let block = buffer[start..<end.blockEnd]
                start = end.next
                return block
            }
            let pending = buffer.count - start
            guard pending <= limits.maxHeaderBytes else {
                throw .tooLarge(what: "response header", limit: limits.maxHeaderBytes, found: pending)
            }
            searched = max(0, pending - 3)
            guard try fill() else {
                if pending == 0 { throw .connectionLost("the server closed the connection before answering") }
                throw .badResponse(expected: "a header block ending in a blank line", found: "the end of the stream after \(pending) bytes")
            }
        }
    }

    /// Appends up to `count` bytes of the body to `out`, from one read at most; false
    /// once the body has ended (nothing appended then).
    private mutating func appendBody(to out: inout [UInt8], upTo count: Int) throws(PlainHTTPError) -> Bool {
        switch body {
        case .done:
            return false
        case .toEnd:
            guard try appendBytes(to: &out, upTo: count) > 0 else {
                body = .done
                return false
            }
            guard bodyBytesRead <= limits.maxBodyBytes else {
                throw .tooLarge(what: "response body", limit: limits.maxBodyBytes, found: bodyBytesRead)
            }
            return true
        case .length(let left, let total):
            guard left > 0 else {
                body = .done
                return false
            }
            let read = try appendBytes(to: &out, upTo: min(count, left))
            guard read > 0 else {
                throw .connectionLost("the server closed the connection after \(total - left) of \(total) body bytes")
            }
            body = .length(left: left - read, total: total)
            return true
        case .chunked(var left, var size, let opened):
            if left == 0 {
                if opened {
                    let end = try readLine()
                    guard end.isEmpty else { throw .badResponse(expected: "CRLF after a chunk's data", found: Self.shown(end)) }
                }
                size = try readChunkSize()
                guard size > 0 else {
                    try readTrailers()
                    body = .done
                    return false
                }
                guard bodyBytesRead + size <= limits.maxBodyBytes else {
                    throw .tooLarge(what: "response body", limit: limits.maxBodyBytes, found: bodyBytesRead + size)
                }
                left = size
            }
            let read = try appendBytes(to: &out, upTo: min(count, left))
            guard read > 0 else {
                throw .connectionLost("the server closed the connection after \(size - left) of a chunk's \(size) bytes (\(bodyBytesRead) body bytes in all)")
            }
            body = .chunked(left: left - read, size: size, opened: true)
            return true
        }
    }

    /// Appends at most `count` bytes to `out`: those already buffered, else those of one
    /// read of at most `count` bytes from the source (never past the body's framing, so
    /// nothing of a next response is taken); 0 at the end of the stream.
    private mutating func appendBytes(to out: inout [UInt8], upTo count: Int) throws(PlainHTTPError) -> Int {
        let buffered = min(count, buffer.count - start)
        if buffered > 0 {
            out += buffer[start..<(start + buffered)]
            start += buffered
            bodyBytesRead += buffered
            return buffered
        }
        if ended { return 0 }
        let wanted = min(count, scratch.count)
        var read = 0
        var failure: PlainHTTPError?
        scratch.withUnsafeMutableBytes { bytes in
            do throws(PlainHTTPError) {
                read = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: bytes[..<wanted]))
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        if read == 0 {
            ended = true
            return 0
        }
        // Through `scratch`, not straight into `out`: growing `out` first would fill it
        // element by element, which costs more than this copy in a debug build.
        out += scratch[..<read]
        receivedAny = true
        bodyBytesRead += read
        return read
    }

    private mutating func readChunkSize() throws(PlainHTTPError) -> Int {
        let line = try readLine()
        do throws(HTTPSyntaxError) {
            return try HTTPNumber.chunkSize(line)
        } catch {
            throw .badResponse(expected: error.expected, found: Self.shown(line))
        }
    }

    /// Trailers: read and dropped, up to the blank line.
    private mutating func readTrailers() throws(PlainHTTPError) {
        var trailerBytes = 0
        while true {
            let line = try readLine()
            if line.isEmpty { return }
            trailerBytes += line.count
            guard trailerBytes <= limits.maxHeaderBytes else {
                throw .tooLarge(what: "chunked trailer", limit: limits.maxHeaderBytes, found: trailerBytes)
            }
        }
    }

    /// One line without its CRLF (or bare LF).
    private mutating func readLine() throws(PlainHTTPError) -> ArraySlice<UInt8> {
        var searched = 0
        while true {
            if let newline = buffer[(start + searched)...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                if end > start, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = buffer[start..<end]
                start = newline + 1
                return line
            }
            guard buffer.count - start <= limits.maxHeaderBytes else {
                throw .tooLarge(what: "chunk header line", limit: limits.maxHeaderBytes, found: buffer.count - start)
            }
            searched = buffer.count - start
            guard try fill() else {
                throw .connectionLost("the server closed the connection in the middle of a chunked body")
            }
        }
    }

    /// Appends what the source has to `buffer`; false at the end of the stream.
    private mutating func fill() throws(PlainHTTPError) -> Bool {
        if ended { return false }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start >= 1 << 16 {
            buffer.removeFirst(start)
            start = 0
        }
        var read = 0
        var failure: PlainHTTPError?
        scratch.withUnsafeMutableBytes { bytes in
            do throws(PlainHTTPError) {
                read = try source.read(into: bytes)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        if read == 0 {
            ended = true
            return false
        }
        buffer += scratch[..<read]
        receivedAny = true
        return true
    }

    private static func contentLength(_ text: String) throws(PlainHTTPError) -> Int {
        // A repeated header arrives joined ("5, 5"); all copies must agree.
        let values = Set(text.split(separator: ",").map { $0.trimmingOWS() })
        do throws(HTTPSyntaxError) {
            guard values.count == 1, let only = values.first else {
                throw HTTPSyntaxError(.invalidNumber, "Content-Length copies disagree", expected: "")
            }
            return try HTTPNumber.contentLength(only.utf8)
        } catch {
            throw .badResponse(expected: "a Content-Length of decimal digits", found: "\"\(text.prefix(40))\"")
        }
    }

    /// Where the first blank line at or after `from` is: the block's end and the next byte.
    private static func blankLine(in buffer: [UInt8], from: Int, start: Int) -> (blockEnd: Int, next: Int)? {
        var index = max(from, start)
        while index < buffer.count {
            if buffer[index] == UInt8(ascii: "\n") {
                if index + 1 < buffer.count, buffer[index + 1] == UInt8(ascii: "\n") { return (index, index + 2) }
                if index + 2 < buffer.count, buffer[index + 1] == UInt8(ascii: "\r"), buffer[index + 2] == UInt8(ascii: "\n") {
                    return (index, index + 3)
                }
            }
            index += 1
        }
        return nil
    }

    private static func lines(_ block: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        block.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
    }

    private static func shown(_ bytes: ArraySlice<UInt8>) -> String {
        let text = String(decoding: bytes.prefix(60), as: UTF8.self)
        let printable = String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return "\"" + printable + (bytes.count > 60 ? "..." : "") + "\""
    }
}
