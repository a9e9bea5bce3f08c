extension PlugboardError {
    /// The `storage.not_found` error every backend raises for `get` or `head` of a key
    /// that holds no object, so that all of them say the same words.
    ///
    /// - Parameter key: The key that was asked for.
    public static func objectNotFound(key: String) -> PlugboardError {
        PlugboardError(
            .storageNotFound, "no object under key \(StorageText.quote(key))",
            detail: "The key has \(key.utf8.count) bytes; no object is stored under exactly these bytes.",
            hint: "Check the key, or list its prefix to see which keys exist.")
    }

    /// The `storage.precondition_failed` error of a conditional `put` whose condition did
    /// not hold, so that every backend says the same words.
    ///
    /// - Parameters:
    ///   - key: The key written.
    ///   - condition: The condition that did not hold.
    ///   - exists: Whether an object is under the key.
    ///   - currentETag: That object's ETag, when the backend knows it.
    public static func preconditionFailed(key: String, condition: WriteCondition, exists: Bool,
                                          currentETag: String? = nil) -> PlugboardError {
        let expected: String
        switch condition {
        case .none: expected = "no condition"
        case .absent: expected = "no object under the key"
        case .matches(let etag): expected = "an object with ETag \(StorageText.quote(etag))"
        }
        let found = !exists ? "no object under the key"
            : currentETag.map { "an object with ETag \(StorageText.quote($0))" } ?? "an object with another ETag"
        let what = exists ? "changed" : "deleted"
        return PlugboardError(
            .storagePreconditionFailed, "condition of put of key \(StorageText.quote(key)) does not hold; nothing was stored",
            detail: "Expected \(expected), found \(found).",
            hint: "Read the object again (head) and decide from its current state; another writer may have \(what) it.")
    }

    /// The `storage.range_not_satisfiable` error of a ranged `get` that selects no byte;
    /// the detail carries the object's size, which an HTTP 416 answer reports in
    /// `Content-Range: bytes */size`.
    ///
    /// - Parameters:
    ///   - key: The key read.
    ///   - range: The range asked for.
    ///   - size: The object's size in bytes.
    public static func rangeNotSatisfiable(key: String, range: ByteRange, size: Int) -> PlugboardError {
        PlugboardError(
            .storageRangeNotSatisfiable, "range \(range) of object \(StorageText.quote(key)) selects no byte",
            detail: "Expected a range that starts within the object's \(size) bytes (offsets 0 to \(size - 1)), found \(range); the object's size is \(size).",
            hint: "Ask for a range that starts before offset \(size), a non-zero suffix, or no range for the whole object.")
    }

    /// The `storage.unsupported` error of a backend asked for a ``WriteCondition`` it
    /// cannot check atomically.
    ///
    /// - Parameters:
    ///   - key: The key written.
    ///   - condition: The condition asked for.
    ///   - backend: What the backend is, for the message: `"this backend"`, `"S3Storage"`.
    ///   - hint: What to do instead.
    public static func conditionUnsupported(key: String, condition: WriteCondition, backend: String,
                                            hint: String) -> PlugboardError {
        PlugboardError(
            .storageUnsupported, "\(backend) cannot put key \(StorageText.quote(key)) with condition \(condition)",
            detail: "Expected a backend that checks the condition and stores the object in one atomic step, found one that does not.",
            hint: hint)
    }
}
