import PlugboardAPI
import PlugboardHTTP

/// Bytes handed to the reader in pieces of the given sizes (cycled), as a socket might.
struct ChunkedSource: ByteSource {
    var bytes: [UInt8]
    var pieces: [Int]
    var offset = 0
    var turn = 0

    init(_ bytes: [UInt8], pieces: [Int] = [1 << 20]) {
        self.bytes = bytes
        self.pieces = pieces.isEmpty ? [1 << 20] : pieces
    }

    mutating func read(into buffer: UnsafeMutableRawBufferPointer, phase: ReadPhase) throws(HTTPError) -> Int {
        let n = min(buffer.count, bytes.count - offset, max(1, pieces[turn % pieces.count]))
        turn += 1
        guard n > 0 else { return 0 }
        for i in 0..<n { buffer[i] = bytes[offset + i] }
        offset += n
        return n
    }
}

/// What reading one request from some bytes gave.
enum Outcome: Equatable {
    case request(method: String, target: String, body: [UInt8])
    case refused(Int, String)
    case end
}

func readAll(_ text: String, pieces: [Int] = [1 << 20], limits: HTTPLimits = HTTPLimits()) -> [Outcome] {
    readAll(Array(text.utf8), pieces: pieces, limits: limits)
}

/// Reads requests until the end or the first refusal, as the server does.
func readAll(_ bytes: [UInt8], pieces: [Int] = [1 << 20], limits: HTTPLimits = HTTPLimits()) -> [Outcome] {
    var reader = RequestReader(source: ChunkedSource(bytes, pieces: pieces), limits: limits, initialBufferSize: 64)
    var out: [Outcome] = []
    while out.count < 1000 {
        do throws(HTTPError) {
            guard let head = try reader.nextHead() else { out.append(.end); return out }
            let body = try reader.body(for: head)
            out.append(.request(method: head.method, target: head.target, body: body))
            if !head.keepAlive { return out }
        } catch {
            out.append(.refused(error.status, error.error.code.rawValue))
            return out
        }
    }
    return out
}

func head(_ text: String, limits: HTTPLimits = HTTPLimits()) throws(HTTPError) -> RequestHead? {
    var reader = RequestReader(source: ChunkedSource(Array(text.utf8)), limits: limits)
    return try reader.nextHead()
}
