// libFuzzer target: the S3 endpoint's multipart/form-data reader (PostObject's body, which
// anyone can send before any signature is checked), fed in chunks whose sizes the input
// picks, with the same bytes also fed whole: both must reach the same events or the same
// refusal (docs/SECURITY.md). Built by Tests/Fuzz/build.sh with Wire/MultipartParser.swift.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzS3Form(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    guard let first = bytes.first else { return 0 }
    let body = Array(bytes.dropFirst())
    // The first byte picks the chunk size, so splits fall everywhere across runs.
    let chunkSize = Int(first % 64) + 1
    let whole = outcome(body, chunkSize: max(body.count, 1))
    let split = outcome(body, chunkSize: chunkSize)
    if whole != split { fatalError("events differ when the body is fed in chunks of \(chunkSize): \(whole) against \(split)") }
    return 0
}

/// The events, with content joined (chunking may split it differently), or the refusal's code.
private func outcome(_ body: [UInt8], chunkSize: Int) -> String {
    do {
        var parser = try MultipartParser(boundary: "xYzZY")
        var events: [String] = []
        var content: [UInt8] = []
        func flush() {
            if !content.isEmpty { events.append("content \(content.count) \(content.reduce(0) { ($0 &* 31) &+ Int($1) })") }
            content = []
        }
        var start = 0
        while start < body.count {
            let end = min(start + chunkSize, body.count)
            for event in try parser.feed(Array(body[start..<end])) {
                switch event {
                case .content(let bytes): content += bytes
                case .partBegan(let head): flush(); events.append("part \(head.name) \(head.filename ?? "-") \(head.contentType ?? "-")")
                case .partEnded: flush(); events.append("end")
                }
            }
            start = end
        }
        flush()
        try parser.finish()
        return events.joined(separator: "|")
    } catch {
        return "refused \(error.code)"
    }
}
