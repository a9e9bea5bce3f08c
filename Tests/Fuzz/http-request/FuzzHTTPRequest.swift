// libFuzzer target: plugboard serve's request reader and head parser, the bytes every
// client sends (docs/SECURITY.md). Built by Tests/Fuzz/build.sh together with
// Sources/PlugboardHTTP/Parsing/ and Messages/.
import PlugboardAPI

/// The input handed over in pieces of one size, as a socket might deliver it: the
/// reader's buffer handling at every boundary is part of what is tested.
private struct PieceSource: ByteSource {
    let bytes: [UInt8]
    let piece: Int
    var offset = 0

    mutating func read(into buffer: UnsafeMutableRawBufferPointer, phase: ReadPhase) throws(HTTPError) -> Int {
        let n = min(buffer.count, bytes.count - offset, piece)
        guard n > 0 else { return 0 }
        for i in 0..<n { buffer[i] = bytes[offset + i] }
        offset += n
        return n
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    // The first byte picks the piece size and the limits; the rest is the stream.
    let control = data[0]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let piece = [1, 2, 3, 7, 64, 1 << 20][Int(control & 7) % 6]
    // Small limits on odd control bytes, so that 413, 414 and 431 are reachable.
    let limits = control & 8 == 0 ? HTTPLimits()
        : HTTPLimits(maxRequestLineBytes: 64, maxHeaderBytes: 128, maxHeaderCount: 4, maxBodyBytes: 256)
    var reader = RequestReader(source: PieceSource(bytes: bytes, piece: piece), limits: limits, initialBufferSize: 64)
    // As the server does: requests one after another until the end or a refusal.
    for _ in 0..<64 {
        do {
            guard let head = try reader.nextHead() else { break }
            _ = try reader.body(for: head)
            _ = try? PercentDecoding.decode(head.path)
            _ = try? PercentDecoding.queryItems(head.query)
            if !head.keepAlive { break }
        } catch {
            _ = error.status
            break
        }
    }
    return 0
}
