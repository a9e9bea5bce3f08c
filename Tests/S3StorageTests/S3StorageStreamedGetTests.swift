import Foundation
import PlugboardAPI
import PlugboardCrypto
import Testing
@testable import S3StorageClient

/// get(_:range:) over http://: bodies read from the connection a piece at a time, against
/// moto_server (libS3Storage.so through the host's loader) and the misbehaving stub.
@Suite struct S3StorageStreamedGetTests {
    /// Every piece of `body`, in order.
    static func pieces(_ body: ObjectBody) async throws -> [[UInt8]] {
        var pieces: [[UInt8]] = []
        for try await piece in body { pieces.append(piece) }
        return pieces
    }

    static let pieceBytes = PlainHTTPResponseBody.chunkBytes

    @Test func aMultiMiBObjectStreamsInPiecesEqualToWhatWasWritten() async throws {
        let server = try MotoServer.get()
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: try server.makeBucket("stream-get"), server: server))
        let data = PlainHTTPResponseBodyTests.data((12 << 20) + 12_345)
        let written = try await storage.put("big.bin", data: data)
        let stream = try await storage.get("big.bin", range: nil)
        #expect(stream.range == nil && stream.body.length == data.count)
        #expect(stream.info == (try await storage.head("big.bin")) && stream.info.etag == written.etag)
        let pieces = try await Self.pieces(stream.body)
        #expect(pieces.count == data.count / Self.pieceBytes + 1)
        #expect(pieces.allSatisfy { $0.count <= Self.pieceBytes })
        #expect(Array(pieces.joined()) == data)
        try await storage.delete("big.bin")
    }

    @Test func rangeReadsStream() async throws {
        let server = try MotoServer.get()
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: try server.makeBucket("stream-range"), server: server))
        let data = PlainHTTPResponseBodyTests.data(8 << 20)
        _ = try await storage.put("ranged.bin", data: data)
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
        let server = try MotoServer.get()
        let storage = try await S3PluginFixture.storage(S3PluginFixture.config(bucket: try server.makeBucket("stream-drop"), server: server))
        let data = PlainHTTPResponseBodyTests.data(4 << 20)
        _ = try await storage.put("dropped.bin", data: data)
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
