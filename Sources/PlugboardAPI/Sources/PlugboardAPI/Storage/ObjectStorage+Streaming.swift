/// The default streaming forms: what a backend built against PlugboardAPI 1.1 or earlier
/// gets, and what a new backend gets until it implements them.
///
/// Library evolution makes a requirement with a default an additive change: a plugin
/// compiled before 1.2 has no entry for these in its conformance, and the runtime fills
/// them in from here. They keep every rule of the contract except the one they cannot:
/// the body is held in memory, and a conditional write is refused (never faked with a
/// `head` followed by a `put`, which two racing writers would both pass).
extension ObjectStorage {
    /// Collects `body` (at most ``ObjectBody/wholeObjectLimit`` bytes) and stores it with
    /// the whole-object `put`, for `condition: .none`; refuses any other condition with
    /// `storage.unsupported`.
    public func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
                    condition: WriteCondition) async throws -> ObjectInfo {
        try ObjectKey.validate(key)
        _ = try ObjectContentType.resolve(contentType)
        try ObjectMetadata.validate(metadata)
        guard condition == .none else {
            throw PlugboardError.conditionUnsupported(
                key: key, condition: condition, backend: "this storage backend",
                hint: "The backend's plugin implements only the whole-object put (PlugboardAPI 1.1 or earlier); rebuild it against PlugboardAPI 1.2 and implement put(_:body:contentType:metadata:condition:), or write without a condition.")
        }
        let data = try await body.collect(upTo: ObjectBody.wholeObjectLimit)
        return try await put(key, data: data, contentType: contentType, metadata: metadata)
    }

    /// Reads the whole object with the whole-object `get` and returns the bytes `range`
    /// selects.
    public func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try ObjectKey.validate(key)
        try range?.validate()
        let object = try await get(key)
        return try ObjectStream(object, key: key, range: range)
    }
}

/// The default read without waiting: a backend built against PlugboardAPI 1.3 or earlier,
/// or one that does not implement it, is always read through ``ObjectStorage/get(_:range:)``.
extension ObjectStorage {
    /// Returns `nil`: answering would wait.
    public func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        nil
    }
}
