/// Where a response's bytes come from: a socket, or a list of chunks in tests.
protocol PlainHTTPByteSource {
    /// Reads at most `buffer.count` bytes into `buffer`; 0 means the peer closed the stream.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(PlainHTTPError) -> Int
}

/// How much of a response this client holds in memory.
struct PlainHTTPLimits: Sendable {
    /// The status line and headers together (and a chunked body's trailers).
    var maxHeaderBytes = 64 * 1024
    /// The body, whether framed by Content-Length, chunks or the end of the stream: 5 GiB,
    /// S3's single-PUT limit, the largest object this plugin writes.
    var maxBodyBytes = 5 << 30
}

/// One response: status, headers with lower-case names (repeated ones joined with ", ",
/// as URLSession does), body, and whether the connection may carry another request.
struct PlainHTTPResponse: Sendable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    var reusable: Bool
}

/// Reads one HTTP/1.x response from `source`. The body ends where Content-Length or the
/// last chunk says, or, with neither, where the server closes the connection.
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

    init(_ source: Source, limits: PlainHTTPLimits = PlainHTTPLimits()) {
        self.source = source
        self.limits = limits
    }

    /// The response to a request whose method was `method`; interim 1xx responses skipped.
    mutating func read(method: String) throws(PlainHTTPError) -> PlainHTTPResponse {
        var head = try readHead()
        while (100..<200).contains(head.status) {
            guard head.status != 101 else {
                throw .badResponse(expected: "a final response", found: "101 Switching Protocols")
            }
            head = try readHead()
        }
        let headers = head.headers
        var reusable = head.keepAlive
        let body: [UInt8]
        if method == "HEAD" || head.status == 204 || head.status == 304 {
            body = []
        } else if let codings = headers["transfer-encoding"] {
            let last = codings.split(separator: ",").last.map { $0.trimmingSpaces.lowercased() }
            if last == "chunked" {
                body = try readChunked()
            } else {
                body = try readToEnd()
                reusable = false
            }
        } else if let text = headers["content-length"] {
            body = try readExactly(try Self.contentLength(text))
        } else {
            body = try readToEnd()
            reusable = false
        }
        // Bytes past the response (nothing asked for them) make the connection's state unknown.
        if start < buffer.count { reusable = false }
        return PlainHTTPResponse(status: head.status, headers: headers, body: body, reusable: reusable)
    }

    private struct Head {
        var status: Int
        var headers: [String: String]
        var keepAlive: Bool
    }

    private mutating func readHead() throws(PlainHTTPError) -> Head {
        let block = try readBlock()
        var lines = Self.lines(block)
        guard !lines.isEmpty else { throw .badResponse(expected: "an HTTP/1.x status line", found: "an empty line") }
        let statusLine = lines.removeFirst()
        let (minor, status) = try Self.statusLine(statusLine)
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  let first = line.first, first != UInt8(ascii: " "), first != UInt8(ascii: "\t"),
                  !line[..<colon].contains(UInt8(ascii: " ")) else {
                throw .badResponse(expected: "a \"Name: value\" header line", found: Self.shown(line))
            }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = String(String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces)
            headers[name] = headers[name].map { $0 + ", " + value } ?? value
        }
        let connection = headers["connection"]?.lowercased() ?? ""
        let keepAlive = minor >= 1 ? !connection.contains("close") : connection.contains("keep-alive")
        return Head(status: status, headers: headers, keepAlive: keepAlive)
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

    private mutating func readChunked() throws(PlainHTTPError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine()
            let sizeText = line.prefix { $0 != UInt8(ascii: ";") }
            let digits = String(decoding: sizeText, as: UTF8.self).trimmingSpaces
            // Hex digits only (RFC 9112 section 7.1): Int(_:radix:) also takes a sign, and
            // "-6" was a negative count that trapped below (found by Tests/Fuzz/s3-response).
            let hex = { (b: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b | 0x20) }
            guard !digits.isEmpty, digits.count <= 15, digits.utf8.allSatisfy(hex), let size = Int(digits, radix: 16) else {
                throw .badResponse(expected: "a hexadecimal chunk size", found: Self.shown(line))
            }
            if size == 0 { break }
            guard body.count + size <= limits.maxBodyBytes else {
                throw .tooLarge(what: "response body", limit: limits.maxBodyBytes, found: body.count + size)
            }
            body += try readExactly(size)
            let end = try readLine()
            guard end.isEmpty else { throw .badResponse(expected: "CRLF after a chunk's data", found: Self.shown(end)) }
        }
        // Trailers: read and dropped, up to the blank line.
        var trailerBytes = 0
        while true {
            let line = try readLine()
            if line.isEmpty { return body }
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

    private mutating func readExactly(_ count: Int) throws(PlainHTTPError) -> [UInt8] {
        guard count <= limits.maxBodyBytes else {
            throw .tooLarge(what: "response body", limit: limits.maxBodyBytes, found: count)
        }
        var body: [UInt8] = []
        body.reserveCapacity(count)
        while true {
            let take = min(count - body.count, buffer.count - start)
            body += buffer[start..<(start + take)]
            start += take
            if body.count == count { return body }
            guard try fill() else {
                throw .connectionLost("the server closed the connection after \(body.count) of \(count) body bytes")
            }
        }
    }

    private mutating func readToEnd() throws(PlainHTTPError) -> [UInt8] {
        var body: [UInt8] = []
        repeat {
            body += buffer[start...]
            start = buffer.count
            guard body.count <= limits.maxBodyBytes else {
                throw .tooLarge(what: "response body", limit: limits.maxBodyBytes, found: body.count)
            }
        } while try fill()
        return body
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
        let values = Set(text.split(separator: ",").map { $0.trimmingSpaces })
        guard values.count == 1, let only = values.first, !only.isEmpty, only.count <= 18,
              only.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }), let length = Int(only) else {
            throw .badResponse(expected: "a Content-Length of decimal digits", found: "\"\(text.prefix(40))\"")
        }
        return length
    }

    private static func statusLine(_ line: ArraySlice<UInt8>) throws(PlainHTTPError) -> (minor: Int, status: Int) {
        let bytes = Array(line)
        let digit = { (byte: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        guard bytes.count >= 12, bytes.starts(with: Array("HTTP/1.".utf8)), digit(bytes[7]), bytes[8] == UInt8(ascii: " "),
              digit(bytes[9]), digit(bytes[10]), digit(bytes[11]), bytes.count == 12 || bytes[12] == UInt8(ascii: " ") else {
            throw .badResponse(expected: "an HTTP/1.x status line", found: shown(line))
        }
        let status = bytes[9...11].reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        return (Int(bytes[7] - UInt8(ascii: "0")), status)
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
