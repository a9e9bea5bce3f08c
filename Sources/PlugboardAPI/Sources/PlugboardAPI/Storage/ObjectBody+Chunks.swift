extension ObjectBody {
    /// A body that yields this body's chunks, each passed through `transform` as it is
    /// read: how a storage that wraps another one (a layer) sees, counts or checks the
    /// bytes of a body on their way through, without holding the object (PlugboardAPI 1.6).
    ///
    /// ```swift
    /// func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
    ///          condition: WriteCondition) async throws -> ObjectInfo {
    ///     let counted = body.mapChunks { chunk in
    ///         try quota.reserve(chunk.count)   // throws past the limit: the put stores nothing
    ///         return chunk
    ///     }
    ///     return try await backing.put(key, body: counted, contentType: contentType,
    ///                                  metadata: metadata, condition: condition)
    /// }
    /// ```
    ///
    /// The new body promises this body's ``length``: a `transform` that changes how many
    /// bytes a chunk holds must use ``mapChunks(length:_:)`` instead, or the consumer
    /// refuses the body for yielding more or fewer bytes than its length. Like this body,
    /// the new one is read once, from one task at a time; reading it reads this one.
    ///
    /// - Parameter transform: Called with each chunk, in order, from the task reading the
    ///   new body; what it returns is yielded in its place, and what it throws ends the
    ///   new body with that error (a consumer then stores nothing).
    public func mapChunks(_ transform: @escaping @Sendable ([UInt8]) async throws -> [UInt8]) -> ObjectBody {
        mapChunks(length: length, transform)
    }

    /// A body that yields this body's chunks passed through `transform`, and promises
    /// `length` bytes in all: for a `transform` that changes the bytes' number
    /// (compression, encryption with a header), `nil` when that is not known in advance.
    ///
    /// - Parameters:
    ///   - length: The number of bytes the new body yields in all, or `nil`.
    ///   - transform: As for ``mapChunks(_:)``.
    public func mapChunks(length: Int?, _ transform: @escaping @Sendable ([UInt8]) async throws -> [UInt8]) -> ObjectBody {
        let source = makeAsyncIterator()
        return ObjectBody(length: length) {
            // Every copy of an iterator reads the same source: this one is its reader.
            var reader = source
            guard let chunk = try await reader.next() else { return nil }
            return try await transform(chunk)
        }
    }
}
