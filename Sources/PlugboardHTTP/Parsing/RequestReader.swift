import PlugboardAPI

/// Reads requests, one after another, from a ``ByteSource``, through a ``RequestDecoder``:
/// the pull form of the decoder the server's event loops push bytes into, for tests, the
/// fuzzer and blocking callers. Pipelined requests are kept in the buffer for the next call.
public struct RequestReader<Source: ByteSource> {
    public var source: Source
    public let limits: HTTPLimits
    private var decoder: RequestDecoder
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0

    public init(source: Source, limits: HTTPLimits = HTTPLimits(), initialBufferSize: Int = 8192) {
        self.source = source
        self.limits = limits
        decoder = RequestDecoder(limits: limits)
        buffer = [UInt8](repeating: 0, count: max(64, initialBufferSize))
    }

    /// Whether bytes of a next (pipelined) request are already buffered.
    public var hasBufferedBytes: Bool { end > start }

    /// Reads the next request line and header section; nil when the connection ends
    /// cleanly between requests.
    public mutating func nextHead() throws(HTTPError) -> RequestHead? {
        while true {
            if start == end { start = 0; end = 0 }
            switch try decoder.next(buffer, start: &start, end: end) {
            case .head(let head): return head
            // The end of a request without a body, or of one whose body was read.
            case .end: continue
            case .body:
                throw HTTPError(500, PlugboardError(.httpInternal, "nextHead() called before the previous body was read"))
            case .needMore:
                let idle = decoder.isBetweenMessages && end == start
                if try fill(phase: idle ? .idle : .head, cap: decoder.headCapacity) == 0 {
                    if let error = decoder.errorAtEndOfInput() { throw error }
                    return nil
                }
            }
        }
    }

    /// Reads the body `head` announces (none, a length, or chunks) and returns it decoded.
    public mutating func body(for head: RequestHead) throws(HTTPError) -> [UInt8] {
        var body: [UInt8] = []
        if case .length(let n) = head.framing {
            // Reserved up to 1 MiB only: a client announcing a large body and sending
            // nothing must not make the server commit memory for it.
            body.reserveCapacity(min(n, 1 << 20))
        }
        while true {
            switch try decoder.next(buffer, start: &start, end: end) {
            case .body(let range): body.append(contentsOf: buffer[range])
            case .end: return body
            case .head:
                throw HTTPError(500, PlugboardError(.httpInternal, "a head where a body was expected"))
            case .needMore:
                if start == end { start = 0; end = 0 }
                // A chunk size or trailer line may need more room than the buffer has.
                if try fill(phase: .body, cap: max(buffer.count, limits.maxHeaderBytes + 64)) == 0 {
                    throw decoder.errorAtEndOfInput() ?? HTTPError.badRequest("connection closed before the body ended")
                }
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

    private func headersTooLarge() -> HTTPError { decoder.headersTooLarge() }
}

