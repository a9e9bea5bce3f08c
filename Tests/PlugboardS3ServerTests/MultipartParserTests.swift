import PlugboardAPI
@testable import PlugboardS3Server
import Testing

/// The multipart/form-data state machine, fed the same forms in every split: a delimiter,
/// a part's head or the blank line may end one chunk and go on in the next.
@Suite struct MultipartParserTests {
    static let boundary = "----pbBoundary7MA4YWxk"

    /// A form as a browser writes it: CRLF line ends, the file last unless `after` follows.
    static func form(_ fields: [(String, String)], file: (filename: String?, type: String?, content: [UInt8])? = nil,
                     after: [(String, String)] = [], boundary: String = boundary, epilogue: String = "") -> [UInt8] {
        var out: [UInt8] = []
        func part(_ name: String, filename: String? = nil, type: String? = nil, _ content: [UInt8]) {
            out += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"".utf8)
            if let filename { out += Array("; filename=\"\(filename)\"".utf8) }
            out += Array("\r\n".utf8)
            if let type { out += Array("Content-Type: \(type)\r\n".utf8) }
            out += Array("\r\n".utf8) + content + Array("\r\n".utf8)
        }
        for (name, value) in fields { part(name, Array(value.utf8)) }
        if let file { part("file", filename: file.filename, type: file.type, file.content) }
        for (name, value) in after { part(name, Array(value.utf8)) }
        out += Array("--\(boundary)--\r\n\(epilogue)".utf8)
        return out
    }

    /// What the parser makes of `chunks`: each part's head and its whole content.
    static func parse(_ chunks: [[UInt8]], boundary: String = boundary) throws -> [(MultipartPartHeaders, [UInt8])] {
        var parser = try MultipartParser(boundary: boundary)
        var parts: [(MultipartPartHeaders, [UInt8])] = []
        var open = false
        for chunk in chunks {
            for event in try parser.feed(chunk) {
                switch event {
                case .partBegan(let headers):
                    #expect(!open)
                    parts.append((headers, []))
                    open = true
                case .content(let bytes):
                    #expect(open && !bytes.isEmpty)
                    parts[parts.count - 1].1 += bytes
                case .partEnded:
                    #expect(open)
                    open = false
                }
            }
        }
        try parser.finish()
        #expect(!open)
        return parts
    }

    static let sampleFile: [UInt8] = Array("line one\r\n--not the boundary\r\n\r\n--\(boundary.dropLast())x\r\n-".utf8) + [0, 255, 13]

    static func expectSample(_ parts: [(MultipartPartHeaders, [UInt8])], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(parts.count == 3, sourceLocation: sourceLocation)
        guard parts.count == 3 else { return }
        #expect(parts[0].0 == MultipartPartHeaders(name: "key"), sourceLocation: sourceLocation)
        #expect(parts[0].1 == Array("uploads/${filename}".utf8), sourceLocation: sourceLocation)
        #expect(parts[1].0.name == "empty" && parts[1].1.isEmpty, sourceLocation: sourceLocation)
        #expect(parts[2].0 == MultipartPartHeaders(name: "file", filename: "a b.txt", contentType: "text/plain"), sourceLocation: sourceLocation)
        #expect(parts[2].1 == sampleFile, sourceLocation: sourceLocation)
    }

    static var sample: [UInt8] {
        form([("key", "uploads/${filename}"), ("empty", "")], file: ("a b.txt", "text/plain", sampleFile), epilogue: "ignored epilogue")
    }

    @Test func parsesAFormInOneChunk() throws {
        Self.expectSample(try Self.parse([Self.sample]))
    }

    @Test func parsesAFormSplitInTwoAtEveryPoint() throws {
        let bytes = Self.sample
        for cut in 0...bytes.count {
            Self.expectSample(try Self.parse([Array(bytes[..<cut]), Array(bytes[cut...])]))
        }
    }

    @Test func parsesAFormSplitInThreeAtEveryPairOfPointsAroundTheFile() throws {
        let bytes = Self.sample
        // Around the file part's delimiter: every first cut, then every second one after it.
        let end = bytes.count - "--\(Self.boundary)--\r\nignored epilogue".utf8.count
        for first in max(0, end - 40)...end {
            for second in first...min(bytes.count, end + 10) {
                Self.expectSample(try Self.parse([Array(bytes[..<first]), Array(bytes[first..<second]), Array(bytes[second...])]))
            }
        }
    }

    @Test func parsesAFormFedOneByteAtATime() throws {
        Self.expectSample(try Self.parse(Self.sample.map { [$0] }))
    }

    @Test func acceptsAPreambleTransportPaddingAndAnEpilogue() throws {
        let b = Self.boundary
        let text = "preamble text\r\n--\(b)  \t\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--\(b)--\r\nepilogue"
        var parser = try MultipartParser(boundary: b)
        let events = try parser.parseAll(text)
        #expect(events == [.partBegan(MultipartPartHeaders(name: "a")), .content(Array("1".utf8)), .partEnded])
        #expect(parser.isComplete)
        // A part with an empty head has no name: refused, as every part names its field.
        let headless = #expect(throws: S3Error.self) {
            var parser = try MultipartParser(boundary: b)
            _ = try parser.parseAll("--\(b)\r\n\r\nheadless\r\n--\(b)--")
        }
        #expect(headless?.message.contains("Content-Disposition") == true)
    }

    @Test func readsHeaderParameters() throws {
        let head = Array("content-disposition: form-data; name=\"file\"; filename=\"C:\\dir\\a \\\"q\\\".txt\"\r\ncontent-type:  image/png \r\nx-other: 1".utf8)
        let headers = try MultipartPartHeaders(head[...])
        #expect(headers.name == "file")
        #expect(headers.filename == "C:\\dir\\a \"q\".txt")
        #expect(headers.contentType == "image/png")
        #expect(MultipartFormReader.boundary(contentType: "multipart/form-data; boundary=\"a b\"") == "a b")
        #expect(MultipartFormReader.boundary(contentType: "Multipart/Form-Data;boundary=xyz") == "xyz")
        #expect(MultipartFormReader.boundary(contentType: "application/x-www-form-urlencoded") == nil)
        #expect(MultipartFormReader.boundary(contentType: "multipart/form-data; boundary=----=_Part_1; charset=utf-8") == "----=_Part_1")
    }

    @Test func refusesMalformedBodies() throws {
        let b = Self.boundary
        let cases: [(String, String)] = [
            ("no boundary at all", "just text"),
            ("truncated in the file", "--\(b)\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc"),
            ("no close delimiter", "--\(b)\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nabc\r\n--\(b)"),
            ("garbage after a delimiter", "--\(b)xyz\r\n"),
            ("head without a colon", "--\(b)\r\nnot a header\r\n\r\nx\r\n--\(b)--"),
            ("no Content-Disposition", "--\(b)\r\nContent-Type: text/plain\r\n\r\nx\r\n--\(b)--"),
            ("not form-data", "--\(b)\r\nContent-Disposition: attachment; name=\"a\"\r\n\r\nx\r\n--\(b)--"),
            ("head never ends", "--\(b)\r\nContent-Disposition: form-data; name=\"a\"\r\n"),
        ]
        for (what, text) in cases {
            let error = #expect(throws: S3Error.self, "\(what)") { var parser = try MultipartParser(boundary: b); _ = try parser.parseAll(text) }
            #expect(error?.code == "MalformedPOSTRequest", "\(what)")
            #expect(error?.message.contains("expected") == true, "\(what)")
        }
        #expect(throws: S3Error.self) { _ = try MultipartParser(boundary: "") }
        #expect(throws: S3Error.self) { _ = try MultipartParser(boundary: String(repeating: "b", count: 71)) }
    }

    @Test func boundsTheHeadAndThePreamble() throws {
        let b = Self.boundary
        let longHead = "--\(b)\r\nContent-Disposition: form-data; name=\"a\"\r\nX: \(String(repeating: "h", count: 9000))\r\n\r\nx\r\n--\(b)--"
        let head = #expect(throws: S3Error.self) { var parser = try MultipartParser(boundary: b); _ = try parser.parseAll(longHead) }
        #expect(head?.code == "MaxPostPreDataLengthExceededError")
        let preamble = #expect(throws: S3Error.self) {
            var parser = try MultipartParser(boundary: b)
            for _ in 0..<20 { _ = try parser.feed(Array(repeating: UInt8(ascii: "p"), count: 1000)) }
        }
        #expect(preamble?.code == "MalformedPOSTRequest")
    }

    @Test func formReader_readsFieldsThenStreamsTheFileAndIgnoresFieldsAfterIt() async throws {
        let file = Array(repeating: UInt8(ascii: "z"), count: 100_000)
        let bytes = Self.form([("key", "k"), ("Content-Type", "text/plain")], file: ("f.bin", nil, file), after: [("late", "ignored")])
        // Chunks of 7 bytes: delimiters split everywhere.
        let chunks = stride(from: 0, to: bytes.count, by: 7).map { Array(bytes[$0..<min($0 + 7, bytes.count)]) }
        let source = ChunkSource(chunks)
        let reader = try MultipartFormReader(ObjectBody(length: bytes.count) { source.next() }, boundary: Self.boundary)
        let form = try await reader.fields()
        #expect(form.fields == [.init(name: "key", value: "k"), .init(name: "Content-Type", value: "text/plain")])
        #expect(form.file == .init(filename: "f.bin", contentType: nil))
        var content: [UInt8] = []
        for try await chunk in reader.fileContent() {
            #expect(chunk.count <= 7 + Self.boundary.count + 4)
            content += chunk
        }
        #expect(content == file)
        await reader.discardRest(upTo: 1 << 20)
        #expect(source.next() == nil)
    }

    @Test func formReader_boundsFieldsAndRefusesATruncatedFile() async throws {
        let big = Self.form([("key", String(repeating: "k", count: 21 << 10))], file: (nil, nil, [1]))
        let tooBig = await #expect(throws: S3Error.self) { _ = try await MultipartFormReader(ObjectBody(big), boundary: Self.boundary).fields() }
        #expect(tooBig?.code == "MaxPostPreDataLengthExceededError")
        let many = Self.form((0..<65).map { ("f\($0)", "v") }, file: (nil, nil, [1]))
        let tooMany = await #expect(throws: S3Error.self) { _ = try await MultipartFormReader(ObjectBody(many), boundary: Self.boundary).fields() }
        #expect(tooMany?.code == "MaxPostPreDataLengthExceededError")

        let whole = Self.form([("key", "k")], file: (nil, nil, Array(repeating: 1, count: 1000)))
        let cut = Array(whole[..<(whole.count - 100)])
        let reader = try MultipartFormReader(ObjectBody(cut), boundary: Self.boundary)
        _ = try await reader.fields()
        let truncated = await #expect(throws: S3Error.self) { _ = try await reader.fileContent().collect(upTo: 1 << 20) }
        #expect(truncated?.code == "MalformedPOSTRequest")
    }
}

/// Chunks handed out one by one, from the one task that reads them.
final class ChunkSource: @unchecked Sendable {
    private var chunks: [[UInt8]]
    private var index = 0
    init(_ chunks: [[UInt8]]) { self.chunks = chunks }
    func next() -> [UInt8]? {
        guard index < chunks.count else { return nil }
        defer { index += 1 }
        return chunks[index]
    }
}

extension MultipartParser {
    /// Every event of `text` fed whole, then the end of the body.
    mutating func parseAll(_ text: String) throws(S3Error) -> [Event] {
        let events = try feed(Array(text.utf8))
        try finish()
        return events
    }
}
