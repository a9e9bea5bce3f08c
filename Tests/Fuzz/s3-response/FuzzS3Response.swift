// libFuzzer target: the plain-HTTP client's HTTP/1.1 response reader (S3Storage's and
// RESTStorage's for http:// endpoints), the bytes a server (or anyone between it and the
// host) sends back (docs/SECURITY.md). Built by Tests/Fuzz/build.sh together with
// Sources/PlugboardHTTPClient/.

/// The input handed over in pieces of one size, as a socket might deliver it.
private struct PieceSource: PlainHTTPByteSource {
    let bytes: [UInt8]
    let piece: Int
    var offset = 0

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(PlainHTTPError) -> Int {
        let n = min(buffer.count, bytes.count - offset, piece)
        guard n > 0 else { return 0 }
        for i in 0..<n { buffer[i] = bytes[offset + i] }
        offset += n
        return n
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzS3Response(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    // The first byte picks the piece size, the method and the limits; the rest is the stream.
    let control = data[0]
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let piece = [1, 2, 5, 64, 4096, 1 << 20][Int(control & 7) % 6]
    let method = control & 8 == 0 ? "GET" : "HEAD"
    // Small limits on some inputs, so that both "too large" refusals are reachable.
    let limits = control & 16 == 0 ? PlainHTTPLimits() : PlainHTTPLimits(maxHeaderBytes: 256, maxBodyBytes: 512)
    var reader = PlainHTTPResponseReader(PieceSource(bytes: bytes, piece: piece), limits: limits)
    // A kept-alive connection carries one response after another.
    for _ in 0..<16 {
        guard let response = try? reader.read(method: method), response.reusable else { break }
    }
    return 0
}
