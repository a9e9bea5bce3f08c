import Foundation
import PlugboardAPI
import PlugboardCrypto
import PlugboardTestSupport
import Testing
import PlugboardHTTPClient
@testable import S3StorageClient

/// get(_:range:) over http://: bodies read from the connection a piece at a time, against
/// moto_server (libS3Storage.so through the host's loader) and the misbehaving stub.
/// Serialized, on one bucket: boto3's bucket setup blocks a thread of the cooperative pool
/// while Python starts, and a multi-MiB object each at once would crowd the two cores.
@Suite(.serialized, .pythonTools) struct S3StorageStreamedGetTests {
    /// Every piece of `body`, in order.
    static func pieces(_ body: ObjectBody) async throws -> [[UInt8]] {
        var pieces: [[UInt8]] = []
        for try await piece in body { pieces.append(piece) }
        return pieces
    }

    static let pieceBytes = PlainHTTPResponseBody.chunkBytes

    /// Bytes without a short period, so that a piece delivered twice or skipped shows.
    static func data(_ count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var state: UInt64 = 0x2545_F491_4F6C_DD1D
            for index in 0..<count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                buffer[index] = UInt8(truncatingIfNeeded: state)
            }
            initialized = count
        }
    }

    /// libS3Storage.so on a new bucket of the shared moto server, with `count` bytes
    /// stored under `key`.
    static let bucket = Result { try MotoServer.get().makeBucket("stream-get") }

    static func storage(with key: String, count: Int) async throws -> (any ObjectStorage, [UInt8], ObjectInfo) {
        let server = try MotoServer.get()
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: try bucket.get(), server: server))
        let data = Self.data(count)
        return (storage, data, try await storage.put(key, data: data))
    }

    @Test func aMultiMiBObjectStreamsInPiecesEqualToWhatWasWritten() async throws {
        let (storage, data, written) = try await Self.storage(with: "big.bin", count: (12 << 20) + 12_345)
        let stream = try await storage.get("big.bin", range: nil)
        #expect(stream.range == nil && stream.body.length == data.count)
        #expect(stream.info == (try await storage.head("big.bin")) && stream.info.etag == written.etag)
        let pieces = try await Self.pieces(stream.body)
        #expect(pieces.count == data.count / Self.pieceBytes + 1)
        #expect(pieces.allSatisfy { $0.count <= Self.pieceBytes })
        #expect(Array(pieces.joined()) == data)
        try await storage.delete("big.bin")
    }

    @Test func anEmptyObjectIsAnEmptyBody() async throws {
        let (storage, _, written) = try await Self.storage(with: "empty", count: 0)
        let stream = try await storage.get("empty", range: nil)
        #expect(stream.body.length == 0 && stream.info.etag == written.etag)
        #expect(try await stream.body.collect(upTo: 1).isEmpty)
        try await storage.delete("empty")
    }

    @Test func rangeReadsStream() async throws {
        let (storage, data, _) = try await Self.storage(with: "ranged.bin", count: 8 << 20)
        let cases: [(ByteRange, Range<Int>)] = [(.closed(first: 1_000_000, last: 5_999_999), 1_000_000..<6_000_000),
                                                (.from(data.count - 10), (data.count - 10)..<data.count),
                                                (.suffix(700_000), (data.count - 700_000)..<data.count)]
        for (range, offsets) in cases {
            let stream = try await storage.get("ranged.bin", range: range)
            #expect(stream.range == offsets && stream.body.length == offsets.count && stream.info.size == data.count)
            let pieces = try await Self.pieces(stream.body)
            #expect(pieces.count == (offsets.count + Self.pieceBytes - 1) / Self.pieceBytes, "\(range)")
            #expect(Array(pieces.joined()) == Array(data[offsets]), "\(range)")
        }
        try await storage.delete("ranged.bin")
    }

    @Test func aGetDroppedHalfWayLeavesTheStorageWorking() async throws {
        let (storage, data, _) = try await Self.storage(with: "dropped.bin", count: 4 << 20)
        for _ in 0..<3 {
            var iterator = try await storage.get("dropped.bin", range: nil).body.makeAsyncIterator()
            #expect(try await iterator.next() == Array(data[0..<Self.pieceBytes]))
        }
        #expect(try await storage.get("dropped.bin", range: nil).body.collect(upTo: data.count) == data)
        try await storage.delete("dropped.bin")
    }

    @Test func aBodyCutShortIsAStorageErrorNamingTheBytes() async throws {
        let stub = try S3Stub.get()
        let storage = try S3StorageFailureTests.storage("cut", endpoint: stub.endpoint)
        let stream = try await storage.get("k", range: nil)
        #expect(stream.body.length == 1 << 20)
        await S3StorageFailureTests.expectError(.storageFailed, containing: "Expected 1048576 bytes, received 300000 bytes") {
            _ = try await stream.body.collect(upTo: 1 << 20)
        }
    }

    @Test func aStreamedObjectThatDoesNotMatchItsETagFailsBeforeItsLastPiece() async throws {
        let stub = try S3Stub.get()
        let storage = try S3StorageFailureTests.storage("corrupt", endpoint: stub.endpoint)
        var iterator = try await storage.get("k", range: nil).body.makeAsyncIterator()
        await S3StorageFailureTests.expectError(.storageFailed, containing: "the data does not match its ETag") {
            _ = try await iterator.next()
        }
    }
}
