import PlugboardHTTPCodec
/// An incremental (push) HTTP/1.1 request decoder: the event loop hands it whatever bytes
/// have arrived, and it says what they complete: a head, a piece of body, the end of a
/// message, or that it needs more. Every split of the same input decodes to the same
/// events (the property tests feed it byte by byte and in random pieces), every length is
/// checked against ``HTTPLimits`` before the bytes it guards are kept, and every malformed
/// input becomes an ``HTTPError``; no input can trap.
///
/// The decoder keeps no bytes of its own. The caller owns the buffer and passes the live
/// part, `buffer[start..<end]`; the decoder moves `start` past what it consumed and keeps
/// its scan position relative to `start`, so the caller may compact the buffer (move the
/// live bytes to offset 0) between calls.
public struct RequestDecoder: Sendable {
    public enum Event {
        /// A complete request line and header section; the body's pieces (if any) and
        /// `.end` follow, `.end` at once for a request without a body.
        case head(RequestHead)
        /// Body bytes, decoded (chunk framing removed): `buffer[range]`. Copy them out
        /// before the next call.
        case body(Range<Int>)
        /// The message is complete; the next bytes begin the next request.
        case end
        /// Nothing more can be decoded from the bytes given.
        case needMore
    }

    private enum State: Sendable {
        /// Scanning a head: offsets from `start`.
        case head(scan: Int, lineStart: Int, requestLineEnd: Int?, emptyLinesSkipped: Int)
        case fixed(remaining: Int)
        case chunkSize(scan: Int)
        case chunkData(remaining: Int)
        case chunkDataEnd(scan: Int)
        case trailers(scan: Int, bytes: Int, fields: Int)
        /// The message's last byte is consumed; `.end` comes next.
        case messageEnd
    }

    public let limits: HTTPLimits
    private var state: State = .head(scan: 0, lineStart: 0, requestLineEnd: nil, emptyLinesSkipped: 0)
    /// Decoded bytes of the current chunked body, for the body limit.
    private var chunkedTotal = 0
    /// The most a head may take in the buffer: the two head limits and their line ends.
    public let headCapacity: Int

    public init(limits: HTTPLimits = HTTPLimits()) {
        self.limits = limits
        let (sum, overflow) = limits.maxRequestLineBytes.addingReportingOverflow(limits.maxHeaderBytes)
        headCapacity = overflow ? Int.max / 2 : sum + 8
    }

    /// Whether the decoder is between messages with nothing of the next one consumed.
    public var isBetweenMessages: Bool {
        if case .head(let scan, _, nil, _) = state { return scan == 0 }
        return false
    }


    /// Decodes what it can from `buffer[start..<end]`, advancing `start` past what it
    /// consumed. Call again after each event other than `.needMore`.
    public mutating func next(_ buffer: [UInt8], start: inout Int, end: Int) throws(HTTPError) -> Event {
        switch state {
        case .head(let scan, let lineStart, let requestLineEnd, let skipped):
            return try head(buffer, &start, end, scan, lineStart, requestLineEnd, skipped)
        case .fixed(let remaining):
            guard end > start else { return .needMore }
            let n = min(remaining, end - start)
            let range = start..<(start + n)
            start += n
            state = remaining == n ? .messageEnd : .fixed(remaining: remaining - n)
            return .body(range)
        case .messageEnd:
            state = Self.fresh
            return .end
        case .chunkSize(let scan):
            guard let line = try line(buffer, &start, end, scan: scan, maxBytes: 1024,
                                      tooLong: HTTPError.badRequest("chunk size line too long"),
                                      bareLF: "bare LF in a chunked body", save: { .chunkSize(scan: $0) }) else {
                return .needMore
            }
            let size: Int
            do throws(HTTPSyntaxError) {
                size = try HTTPNumber.chunkSize(buffer[line])
            } catch {
                throw HTTPError.badRequest(error)
            }
            let (total, overflow) = chunkedTotal.addingReportingOverflow(size)
            guard !overflow, total <= limits.maxBodyBytes else {
                throw HTTPError.payloadTooLarge(limit: limits.maxBodyBytes, found: "more in chunks")
            }
            chunkedTotal = total
            state = size == 0 ? .trailers(scan: 0, bytes: 0, fields: 0) : .chunkData(remaining: size)
            return try next(buffer, start: &start, end: end)
        case .chunkData(let remaining):
            guard end > start else { return .needMore }
            let n = min(remaining, end - start)
            let range = start..<(start + n)
            start += n
            state = remaining == n ? .chunkDataEnd(scan: 0) : .chunkData(remaining: remaining - n)
            return .body(range)
        case .chunkDataEnd(let scan):
            let longer = HTTPError.badRequest("chunk data longer than its size")
            guard let line = try line(buffer, &start, end, scan: scan, maxBytes: 0, tooLong: longer,
                                      bareLF: "bare LF in a chunked body", save: { .chunkDataEnd(scan: $0) }) else {
                return .needMore
            }
            guard line.isEmpty else { throw longer }
            state = .chunkSize(scan: 0)
            return try next(buffer, start: &start, end: end)
        case .trailers(let scan, let bytes, let fields):
            let tooLarge = headersTooLarge()
            guard let line = try line(buffer, &start, end, scan: scan, maxBytes: limits.maxHeaderBytes, tooLong: tooLarge,
                                      bareLF: "bare LF in a chunked body",
                                      save: { .trailers(scan: $0, bytes: bytes, fields: fields) }) else {
                return .needMore
            }
            if line.isEmpty {
                state = Self.fresh
                return .end
            }
            // Trailer fields: checked like header fields, then dropped (none is used).
            let total = bytes + line.count + 2
            guard total <= limits.maxHeaderBytes else { throw tooLarge }
            _ = try RequestHeadParser.field(buffer, line)
            guard fields + 1 <= limits.maxHeaderCount else { throw tooLarge }
            state = .trailers(scan: 0, bytes: total, fields: fields + 1)
            return try next(buffer, start: &start, end: end)
        }
    }

    /// The error for input that ends (the peer closed) in the middle of a message, or nil
    /// when it ended cleanly between messages.
    public func errorAtEndOfInput() -> HTTPError? {
        switch state {
        case .head(let scan, _, let requestLineEnd, _):
            return scan == 0 && requestLineEnd == nil ? nil : HTTPError.badRequest("connection closed in the middle of a request head")
        case .fixed: return HTTPError.badRequest("connection closed before the body ended")
        case .messageEnd: return nil
        default: return HTTPError.badRequest("connection closed before the chunked body ended")
        }
    }

    private static let fresh = State.head(scan: 0, lineStart: 0, requestLineEnd: nil, emptyLinesSkipped: 0)

    private mutating func head(_ buffer: [UInt8], _ start: inout Int, _ end: Int, _ scanned: Int, _ lineStartAt: Int,
                               _ requestLineEndAt: Int?, _ skipped: Int) throws(HTTPError) -> Event {
        var scan = scanned, lineStart = lineStartAt, requestLineEnd = requestLineEndAt, emptyLinesSkipped = skipped
        while start + scan < end {
            // A byte that is neither CR nor LF, below the limit, only moves the scan on:
            // such runs are skipped in one tight pass over the buffer (the loop below is
            // costly per byte, and every byte of every head went through it: docs/BENCHMARKS.md,
            // "Instructions a request").
            let limit = requestLineEnd.map { Self.sum($0, 4, limits.maxHeaderBytes) } ?? Self.sum(limits.maxRequestLineBytes, 1, 0)
            let stop = min(end - start, limit)
            if scan < stop {
                let base = start, from = scan
                scan = buffer.withUnsafeBufferPointer { raw in
                    let p = raw.baseAddress! + base
                    var i = from
                    // Eight bytes at a time while a word holds neither CR nor LF (exact:
                    // the test has no false negatives), then byte by byte.
                    while i + 8 <= stop {
                        let word = UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self)
                        if Self.holds(word, HTTPByte.cr) || Self.holds(word, HTTPByte.lf) { break }
                        i += 8
                    }
                    while i < stop {
                        let c = p[i]
                        if c == HTTPByte.cr || c == HTTPByte.lf { break }
                        i += 1
                    }
                    return i
                }
                guard start + scan < end else { break }
            }
            var b = buffer[start + scan]
            if b == HTTPByte.cr, start + scan + 1 < end {
                guard buffer[start + scan + 1] == HTTPByte.lf else {
                    throw HTTPError.badRequest("bare CR in the request head", detail: "CR may only precede LF.")
                }
                // The CR's step, then its LF's in this same turn: a turn of the loop a line
                // fewer, every limit checked where it was.
                scan += 1
                try checkHeadLimits(scan, requestLineEnd)
                b = HTTPByte.lf
            }
            if b == HTTPByte.lf {
                guard scan > lineStart, buffer[start + scan - 1] == HTTPByte.cr else {
                    throw HTTPError.badRequest("bare LF in the request head", detail: "Lines end with CRLF (RFC 9112 section 2.2).")
                }
                let cr = scan - 1
                if let lineEnd = requestLineEnd {
                    if cr == lineStart {
                        let head = try RequestHeadParser.parse(buffer, start..<(start + scan + 1),
                                                               requestLineEnd: start + lineEnd, limits: limits)
                        start += scan + 1
                        switch head.framing {
                        case .none, .length(0): state = .messageEnd
                        case .length(let n): state = .fixed(remaining: n)
                        case .chunked:
                            chunkedTotal = 0
                            state = .chunkSize(scan: 0)
                        }
                        return .head(head)
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
            }
            scan += 1
            try checkHeadLimits(scan, requestLineEnd)
        }
        state = .head(scan: scan, lineStart: lineStart, requestLineEnd: requestLineEnd, emptyLinesSkipped: emptyLinesSkipped)
        return .needMore
    }

    /// A head scanned up to `scan` is still within its limits: the request line's until its
    /// end is known, then the header section's.
    @inline(__always)
    private func checkHeadLimits(_ scan: Int, _ requestLineEnd: Int?) throws(HTTPError) {
        if let lineEnd = requestLineEnd {
            if scan - (lineEnd + 2) > limits.maxHeaderBytes + 2 { throw headersTooLarge() }
        } else if scan > limits.maxRequestLineBytes + 1 {
            throw uriTooLong()
        }
    }

    /// One CRLF-terminated line of a chunked body, without its CRLF, as a range of
    /// `buffer`; nil (with the scan saved through `save`) when its end has not arrived.
    private mutating func line(_ buffer: [UInt8], _ start: inout Int, _ end: Int, scan scanned: Int, maxBytes: Int,
                               tooLong: HTTPError, bareLF: String, save: (Int) -> State) throws(HTTPError) -> Range<Int>? {
        var scan = scanned
        while start + scan < end {
            if buffer[start + scan] == HTTPByte.lf {
                guard scan > 0, buffer[start + scan - 1] == HTTPByte.cr else { throw HTTPError.badRequest(bareLF) }
                let line = start..<(start + scan - 1)
                guard !buffer[line].contains(HTTPByte.cr) else { throw HTTPError.badRequest("bare CR in a chunked body") }
                start += scan + 1
                return line
            }
            scan += 1
            if scan > maxBytes + 1 { throw tooLong }
        }
        state = save(scan)
        return nil
    }

    /// Whether one of the word's eight bytes is `byte` (the zero-byte test on `word ^ byte...`).
    @inline(__always)
    private static func holds(_ word: UInt64, _ byte: UInt8) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let x = word ^ (UInt64(byte) &* ones)
        return (x &- ones) & ~x & (ones << 7) != 0
    }

    /// `a + b + c`, at most `Int.max`.
    private static func sum(_ a: Int, _ b: Int, _ c: Int) -> Int {
        let (ab, o1) = a.addingReportingOverflow(b)
        let (abc, o2) = ab.addingReportingOverflow(c)
        return o1 || o2 ? Int.max : abc
    }

    func headersTooLarge() -> HTTPError {
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
