import PlugboardAPI
import PlugboardTesting
import Synchronization
import Testing

/// A layer in front of another storage, as a plugin author writes one: it counts the
/// bytes of every streamed put on their way through (``ObjectBody/mapChunks(_:)``) and
/// refuses a body past `limit`, without holding the object. The target builds in Swift 6
/// mode with complete strict concurrency, so this compiling is half the test.
private final class CountingStorage: ForwardingStorage {
    let base = InMemoryObjectStorage()
    let counted = Atomic<Int>(0)
    let limit: Int

    init(limit: Int = .max) { self.limit = limit }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        let limit = self.limit
        let counted = body.mapChunks { [self] chunk in
            let total = self.counted.add(chunk.count, ordering: .relaxed).newValue
            guard total <= limit else {
                throw PlugboardError(.storageInvalidArgument, "quota exceeded",
                                     detail: "Expected at most \(limit) bytes, found at least \(total).")
            }
            return chunk
        }
        return try await base.put(key, body: counted, contentType: contentType, metadata: metadata, condition: condition)
    }
}

@Suite struct ObjectBodyWrappingTests {
    /// A body of `chunks` streamed through an `AsyncThrowingStream`, as a socket's would be.
    static func streamed(_ chunks: [[UInt8]], length: Int?) -> ObjectBody {
        let (stream, continuation) = AsyncThrowingStream<[UInt8], any Error>.makeStream()
        for chunk in chunks { continuation.yield(chunk) }
        continuation.finish()
        return ObjectBody(length: length, stream)
    }

    static let chunks: [[UInt8]] = [Array(repeating: 1, count: 1000), Array(repeating: 2, count: 24), Array(repeating: 3, count: 4096)]
    static var total: Int { chunks.map(\.count).reduce(0, +) }

    @Test func aWrapperCountsEveryByteOfAStreamedPut_andTheBackingStoresThemAll() async throws {
        let storage = CountingStorage()
        let info = try await storage.put("k", body: Self.streamed(Self.chunks, length: Self.total), contentType: nil,
                                         metadata: [:], condition: .none)
        #expect(info.size == Self.total)
        #expect(storage.counted.load(ordering: .relaxed) == Self.total)
        #expect(try await storage.base.get("k").data == Self.chunks.flatMap { $0 })
    }

    @Test func aWrappedBody_keepsItsLength_soABodyOfUnknownLengthStaysUnknown() {
        #expect(Self.streamed(Self.chunks, length: Self.total).mapChunks { $0 }.length == Self.total)
        #expect(Self.streamed(Self.chunks, length: nil).mapChunks { $0 }.length == nil)
    }

    @Test func whatTheTransformThrows_endsTheBody_andNothingIsStored() async throws {
        let storage = CountingStorage(limit: 1500)
        await #expect { try await storage.put("k", body: Self.streamed(Self.chunks, length: Self.total), contentType: nil,
                                               metadata: [:], condition: .none) } throws: { error in
            (error as? PlugboardError)?.message == "quota exceeded"
        }
        await #expect(throws: PlugboardError.self) { try await storage.base.head("k") }
    }

    @Test func aTransformThatChangesTheBytesCount_givesTheNewLength() async throws {
        let doubled = Self.streamed(Self.chunks, length: Self.total).mapChunks(length: 2 * Self.total) { $0 + $0 }
        let bytes = try await doubled.collect(upTo: .max)
        #expect(bytes.count == 2 * Self.total)
        #expect(Array(bytes.prefix(2000)) == Self.chunks[0] + Self.chunks[0])
    }

    /// The iterator is Sendable, so a hand-written wrapper may read the body it wraps from
    /// the `@Sendable` source of the body it hands on.
    @Test func theIterator_canBeTheSourceOfANewBody() async throws {
        let body = Self.streamed(Self.chunks, length: Self.total)
        let iterator = body.makeAsyncIterator()
        let seen = Atomic<Int>(0)
        let wrapped = ObjectBody(length: body.length) {
            var reader = iterator
            let chunk = try await reader.next()
            seen.add(chunk?.count ?? 0, ordering: .relaxed)
            return chunk
        }
        #expect(try await wrapped.collect(upTo: .max) == Self.chunks.flatMap { $0 })
        #expect(seen.load(ordering: .relaxed) == Self.total)
    }
}
