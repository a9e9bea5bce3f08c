/// Reads requests, one after another, from a ``ByteSource``: pipelined requests are kept
/// in the buffer for the next call. Every length is checked against ``HTTPLimits`` as
/// bytes arrive, with overflow-checked arithmetic, and every malformed input becomes an
/// ``HTTPError``; no input can trap.
public struct RequestReader<Source: ByteSource> {
    public var source: Source
    public let limits: HTTPLimits
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    /// The most the head buffer grows to: the two head limits and their line ends.
    private let headCapacity: Int

    public init(source: Source, limits: HTTPLimits = HTTPLimits(), initialBufferSize: Int = 8192) {
        self.source = source
        self.limits = limits
        buffer = [UInt8](repeating: 0, count: max(64, initialBufferSize))
        let (sum, overflow) = limits.maxRequestLineBytes.addingReportingOverflow(limits.maxHeaderBytes)
        headCapacity = overflow ? Int.max / 2 : sum + 8
    }

    /// Whether bytes of a next (pipelined) request are already buffered.
    public var hasBufferedBytes: Bool { end > start }

    /// Reads the next request line and header section; nil when the connection ends
    /// cleanly between requests.
    public mutating func nextHead() throws(HTTPError) -> RequestHead? {
        if start == end { start = 0; end = 0 }
        var scan = 0                  // offsets from `start`
        var lineStart = 0
        var requestLineEnd: Int? = nil
        var emptyLinesSkipped = 0
        while true {
            while start + scan < end {
                let b = buffer[start + scan]
                if b == ByteClass.lf {
                    guard scan > lineStart, buffer[start + scan - 1] == ByteClass.cr else {
                        throw HTTPError.badRequest("bare LF in the request head", detail: "Lines end with CRLF (RFC 9112 section 2.2).")
                    }
                    let cr = scan - 1
                    if let lineEnd = requestLineEnd {
                        if cr == lineStart {
                            let head = try RequestHeadParser.parse(buffer, start..<(start + scan + 1),
                                                                   requestLineEnd: start + lineEnd, limits: limits)
                            start += scan + 1
                            return head
                        }
                    } else if cr == lineStart {
                        // RFC 9112 section 2.2: ignore empty lines before a request line.
                        emptyLinesSkipped += 1
                        guard emptyLinesSkipped <= 4 else {
                            throw HTTPError.badRequest("empty lines instead of a request line")
                        }
                        start += scan + 1
                        scan = 0
                        lineStart = 0
                        continue
                    } else {
                        requestLineEnd = cr
                    }
                    lineStart = scan + 1
                } else if b == ByteClass.cr, start + scan + 1 < end, buffer[start + scan + 1] != ByteClass.lf {
                    throw HTTPError.badRequest("bare CR in the request head", detail: "CR may only precede LF.")
                }
                scan += 1
                if let lineEnd = requestLineEnd {
                    if scan - (lineEnd + 2) > limits.maxHeaderBytes + 2 { throw headersTooLarge() }
                } else if scan > limits.maxRequestLineBytes + 1 {
                    throw uriTooLong()
                }
            }
            let began = end > start
            let n = try fill(phase: began ? .head : .idle, cap: headCapacity)
            if n == 0 {
                if !began { return nil }
                throw HTTPError.badRequest("connection closed in the middle of a request head")
            }
        }
    }

    /// Reads the body `head` announces (none, a length, or chunks) and returns it decoded.
    public mutating func body(for head: RequestHead) throws(HTTPError) -> [UInt8] {
        switch head.framing {
        case .none: return []
        case .length(let n):
            var body: [UInt8] = []
            // Reserved up to 1 MiB only: a client announcing a large body and sending
            // nothing must not make the server commit memory for it.
            body.reserveCapacity(min(n, 1 << 20))
            try take(n, into: &body)
            return body
        case .chunked:
            return try chunkedBody()
        }
    }

    private mutating func chunkedBody() throws(HTTPError) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try readLine(maxBytes: 1024, tooLong: HTTPError.badRequest("chunk size line too long"))
            let size = try ChunkSize.parse(sizeLine)
            let (total, overflow) = body.count.addingReportingOverflow(size)
            guard !overflow, total <= limits.maxBodyBytes else {
                throw HTTPError.payloadTooLarge(limit: limits.maxBodyBytes, found: "more in chunks")
            }
            if size == 0 { break }
            try take(size, into: &body)
            let crlf = try readLine(maxBytes: 0, tooLong: HTTPError.badRequest("chunk data longer than its size"))
            guard crlf.isEmpty else { throw HTTPError.badRequest("chunk data longer than its size") }
        }
        // Trailer fields: checked like header fields, then dropped (none is used).
        var trailers = HTTPHeaders()
        var trailerBytes = 0
        while true {
            let line = try readLine(maxBytes: limits.maxHeaderBytes, tooLong: headersTooLarge())
            if line.isEmpty { return body }
            trailerBytes += line.count + 2
            guard trailerBytes <= limits.maxHeaderBytes else { throw headersTooLarge() }
            try RequestHeadParser.field(line, 0..<line.count, into: &trailers)
            guard trailers.count <= limits.maxHeaderCount else { throw headersTooLarge() }
        }
    }

    /// Moves `count` body bytes from the buffer and the source to `out`.
    private mutating func take(_ count: Int, into out: inout [UInt8]) throws(HTTPError) {
        var remaining = count
        while remaining > 0 {
            if start == end {
                start = 0
                end = 0
                if try fill(phase: .body, cap: buffer.count) == 0 {
                    throw HTTPError.badRequest("connection closed before the body ended")
                }
            }
            let n = min(remaining, end - start)
            out.append(contentsOf: buffer[start..<(start + n)])
            start += n
            remaining -= n
        }
    }

    /// One CRLF-terminated line of a chunked body, without its CRLF.
    private mutating func readLine(maxBytes: Int, tooLong: HTTPError) throws(HTTPError) -> [UInt8] {
        var scan = 0
        while true {
            while start + scan < end {
                if buffer[start + scan] == ByteClass.lf {
                    guard scan > 0, buffer[start + scan - 1] == ByteClass.cr else {
                        throw HTTPError.badRequest("bare LF in a chunked body")
                    }
                    let line = Array(buffer[start..<(start + scan - 1)])
                    guard !line.contains(ByteClass.cr) else { throw HTTPError.badRequest("bare CR in a chunked body") }
                    start += scan + 1
                    return line
                }
                scan += 1
                if scan > maxBytes + 1 { throw tooLong }
            }
            if try fill(phase: .body, cap: max(buffer.count, maxBytes + 64)) == 0 {
                throw HTTPError.badRequest("connection closed before the chunked body ended")
            }
        }
    }

    /// Reads more bytes after `end`, compacting or growing the buffer (never beyond
    /// `cap`) when it is full.
    private mutating func fill(phase: ReadPhase, cap: Int) throws(HTTPError) -> Int {
        if end == buffer.count {
            if start > 0 {
                let live = end - start
                buffer.withUnsafeMutableBytes { raw in
                    guard let base = raw.baseAddress else { return }
                    base.copyMemory(from: base + start, byteCount: live)
                }
                start = 0
                end = live
            } else if buffer.count < cap {
                buffer.append(contentsOf: repeatElement(0, count: min(buffer.count, cap - buffer.count)))
            } else {
                throw headersTooLarge()
            }
        }
        let from = end
        var source = self.source
        defer { self.source = source }
        let result = buffer.withUnsafeMutableBytes { raw -> Result<Int, HTTPError> in
            do throws(HTTPError) {
                return .success(try source.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[from...]), phase: phase))
            } catch {
                return .failure(error)
            }
        }
        let n = try result.get()
        guard n >= 0, n <= buffer.count - end else { return 0 }
        end += n
        return n
    }

    private func headersTooLarge() -> HTTPError {
        HTTPError.make(431, .httpHeadersTooLarge, "request header section too large",
                       detail: "The limit is \(limits.maxHeaderBytes) bytes of header fields.",
                       hint: "Send fewer or shorter header fields.")
    }

    private func uriTooLong() -> HTTPError {
        HTTPError.make(414, .httpURITooLong, "request line too long",
                       detail: "The limit is \(limits.maxRequestLineBytes) bytes for the method, target and version.",
                       hint: "Use a shorter key or query.")
    }
}

/// `chunk-size [ chunk-ext ]` of RFC 9112 section 7.1.
enum ChunkSize {
    static func parse(_ line: [UInt8]) throws(HTTPError) -> Int {
        var size = 0
        var digits = 0
        var i = 0
        while i < line.count, let v = ByteClass.hexValue(line[i]) {
            digits += 1
            guard digits <= 15 else { throw HTTPError.badRequest("chunk size too large") }
            size = size &* 16 &+ v  // 15 hex digits never overflow Int64
            i += 1
        }
        guard digits > 0 else {
            throw HTTPError.badRequest("invalid chunk size", detail: "Expected hexadecimal digits.")
        }
        while i < line.count, line[i] == ByteClass.space || line[i] == ByteClass.tab { i += 1 }
        guard i == line.count || line[i] == UInt8(ascii: ";") else {
            throw HTTPError.badRequest("invalid chunk size", detail: "Expected hexadecimal digits, then ; or CRLF.")
        }
        // Extensions are ignored, but they must be ordinary field text.
        guard line[i...].allSatisfy(ByteClass.isFieldValue) else {
            throw HTTPError.badRequest("invalid byte in a chunk extension")
        }
        return size
    }
}
