import PlugboardAPI

/// A storage body read one chunk at a time by the server's writer, which calls `next`
/// from one task, one call after another.
final class ChunkReader: @unchecked Sendable {
    // @unchecked Sendable: `iterator` is used by the one task writing the answer, never
    // by two calls at once (the writer awaits each chunk before it asks for the next).
    private var iterator: ObjectBody.Iterator

    init(_ body: ObjectBody) {
        iterator = body.makeAsyncIterator()
    }

    func next() async throws -> [UInt8]? { try await iterator.next() }
}
