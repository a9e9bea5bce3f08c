#if canImport(Glibc)
import Glibc
#endif
import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import PlugboardTesting
import Testing

/// A storage that answers every ranged or whole GET with a region of a file, as FileStorage
/// does for objects of more than one chunk: the bytes are written to a temporary file and
/// the body is that file's region (PlugboardAPI 1.7).
private struct RegionStorage: ForwardingStorage {
    let base: InMemoryObjectStorage

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        let stream = try await base.get(key, range: range)
        let bytes = try await stream.body.collect(upTo: 1 << 30)
        var template = Array("/tmp/plugboard-s3-region-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw PlugboardError(.storageFailed, "mkstemp failed") }
        unlink(String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
        // A header before the data, as an object file has: the region starts after it.
        let padded = [UInt8](repeating: 0, count: 100) + bytes
        guard padded.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == padded.count else {
            close(fd)
            throw PlugboardError(.storageFailed, "short write")
        }
        let region = try ObjectFileRegion(descriptor: fd, offset: 100, length: bytes.count)
        return ObjectStream(info: stream.info, range: stream.range, body: ObjectBody(region))
    }
}

@Suite struct FileRegionAnswerTests {
    static let object: [UInt8] = (0..<(1 << 20)).map { UInt8($0 % 251) }

    func fixture() async throws -> (S3Fixture, S3Context) {
        let s3 = S3Fixture()
        try await s3.makeBucket("docs")
        _ = try await s3.storage.put(S3Objects.storageKey(bucket: "docs", key: "big"), data: Self.object, contentType: nil,
                                     metadata: [:])
        var context = s3.context
        context.storage = RegionStorage(base: s3.storage)
        return (s3, context)
    }

    @Test func aRangedGet_isAnsweredWithTheFileRegion_ofTheRangesBytes() async throws {
        let (s3, context) = try await fixture()
        let response = try await ObjectOperations.getObject(
            context, s3.request("GET", bucket: "docs", key: "big", headers: [("Range", "bytes=1000-600999")]))
        #expect(response.status == 206)
        #expect(response.header("Content-Range") == "bytes 1000-600999/\(1 << 20)")
        let file = try #require(response.stream?.file)
        #expect(file.offset == 100)
        #expect(file.length == 600_000)
        #expect(try file.read(count: file.length, at: 0) == Array(Self.object[1000..<601_000]))
    }

    @Test func aWholeGet_isAnsweredWithTheFileRegion_andItsBytesStillIterate() async throws {
        let (s3, context) = try await fixture()
        let response = try await ObjectOperations.getObject(context, s3.request("GET", bucket: "docs", key: "big"))
        #expect(response.status == 200)
        #expect(response.stream?.file?.length == 1 << 20)
        #expect(try await response.allBytes() == Self.object)
    }
}
