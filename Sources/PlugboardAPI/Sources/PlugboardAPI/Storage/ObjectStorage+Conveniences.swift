extension ObjectStorage {
    /// Stores `data` under `key` with no metadata, replacing any object there.
    ///
    /// - Parameters:
    ///   - key: The object's key.
    ///   - data: The object's content.
    ///   - contentType: The media type to store; `nil` (the default) stores
    ///     `application/octet-stream`.
    /// - Returns: The stored object's information.
    @discardableResult
    public func put(_ key: String, data: [UInt8], contentType: String? = nil) async throws -> ObjectInfo {
        try await put(key, data: data, contentType: contentType, metadata: [:])
    }

    /// Stores `data` under `key` as `application/octet-stream` with `metadata`.
    ///
    /// - Returns: The stored object's information.
    @discardableResult
    public func put(_ key: String, data: [UInt8], metadata: [String: String]) async throws -> ObjectInfo {
        try await put(key, data: data, contentType: nil, metadata: metadata)
    }

    /// Returns the data of the object under `key`.
    ///
    /// - Throws: `storage.not_found` when no object is stored under `key`.
    public func data(for key: String) async throws -> [UInt8] {
        try await get(key).data
    }

    /// Whether an object is stored under `key`.
    ///
    /// - Returns: `false` when `head` fails with `storage.not_found`.
    /// - Throws: Any other error of `head`, such as `storage.invalid_key`.
    public func exists(_ key: String) async throws -> Bool {
        do {
            _ = try await head(key)
            return true
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return false
        }
    }

    /// Returns every object whose key starts with `prefix`, following all pages.
    ///
    /// Fetches pages of 1000; for very large listings prefer paging yourself with
    /// ``list(prefix:limit:continuationToken:)``.
    ///
    /// - Parameter prefix: Only keys starting with these bytes are listed; `""` (the
    ///   default) lists all.
    /// - Returns: The objects in UTF-8 byte order of their keys.
    /// - Throws: The first error of a page, or `storage.failed` when the backend's pages
    ///   do not advance (a repeated token, or keys not in increasing order).
    public func list(prefix: String = "") async throws -> [ObjectInfo] {
        var all: [ObjectInfo] = []
        var token: String?
        var seenTokens: Set<String> = []
        var emptyPagesInARow = 0
        repeat {
            let page = try await list(prefix: prefix, limit: ListingRequest.maxLimit, continuationToken: token)
            for object in page.objects {
                if let last = all.last, !ObjectKey.precedes(last.key, object.key) {
                    throw PlugboardError(
                        .storageFailed, "listing of prefix \(StorageText.quote(prefix)) is out of order",
                        detail: "Key \(StorageText.quote(object.key)) came after \(StorageText.quote(last.key)), which it does not follow in UTF-8 byte order.",
                        hint: "The storage backend breaks the listing rules; run the ObjectStorage conformance suite against it.")
                }
                all.append(object)
            }
            emptyPagesInARow = page.objects.isEmpty ? emptyPagesInARow + 1 : 0
            token = page.nextContinuationToken
            if let token, !seenTokens.insert(token).inserted || emptyPagesInARow > 100 {
                throw PlugboardError(
                    .storageFailed, "listing of prefix \(StorageText.quote(prefix)) does not advance",
                    detail: "After \(all.count) objects the backend returned a continuation token it had returned before, or more than 100 empty pages in a row.",
                    hint: "The storage backend breaks the listing rules; run the ObjectStorage conformance suite against it.")
            }
        } while token != nil
        return all
    }
}

extension ObjectStorage {
    /// Stores `data` under `key` when `condition` holds: the streaming `put` with the
    /// whole body in hand, for a conditional write of bytes already in memory.
    ///
    /// - Throws: `storage.precondition_failed` when `condition` does not hold,
    ///   `storage.unsupported` when the backend cannot check it atomically, or any error
    ///   of ``put(_:body:contentType:metadata:condition:)``.
    @discardableResult
    public func put(_ key: String, data: [UInt8], contentType: String? = nil, metadata: [String: String] = [:],
                    condition: WriteCondition) async throws -> ObjectInfo {
        try await put(key, body: ObjectBody(data), contentType: contentType, metadata: metadata, condition: condition)
    }
}
