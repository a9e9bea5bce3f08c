/// The checked arguments of one ``ObjectStorage/list(prefix:limit:continuationToken:)``
/// call, and the continuation-token scheme a backend may use.
///
/// Every backend refuses the same listing arguments with the same error by building one
/// of these first:
///
/// ```swift
/// func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
///     let request = try ListingRequest(prefix: prefix, limit: limit, continuationToken: continuationToken)
///     // keys k with request.includes(k), in UTF-8 byte order, at most request.limit of them;
///     // when more follow: ListingRequest.continuationToken(after: lastKeyReturned)
/// }
/// ```
///
/// The token scheme is the simplest that works: the last key of the page, base64url
/// encoded. A backend whose store has its own tokens (S3) may pass those through instead,
/// and then checks only ``validate(prefix:limit:)``.
public struct ListingRequest: Sendable, Hashable {
    /// The largest page: 1000 objects, as S3.
    public static let maxLimit = 1000

    /// Only keys starting with these bytes are listed; empty lists every key.
    public let prefix: String
    /// The most objects the page may hold, 1 to ``maxLimit``.
    public let limit: Int
    /// The last key of the previous page, decoded from the continuation token; the page
    /// starts after it. `nil` for the first page.
    public let startAfter: String?

    /// Checks the arguments of a `list` call and decodes its continuation token.
    ///
    /// - Parameters:
    ///   - prefix: Only keys starting with it (byte for byte) are listed. At most 1024
    ///     bytes and free of NUL; empty lists every key.
    ///   - limit: The page size, 1 to ``maxLimit``.
    ///   - continuationToken: `nil` for the first page, otherwise a token made by
    ///     ``continuationToken(after:)``.
    /// - Throws: `storage.invalid_argument` for a page size out of range, a prefix that no
    ///   key can start with, or a token this scheme did not make.
    public init(prefix: String, limit: Int, continuationToken: String?) throws(PlugboardError) {
        try Self.validate(prefix: prefix, limit: limit)
        self.prefix = prefix
        self.limit = limit
        if let continuationToken {
            self.startAfter = try Self.decode(continuationToken)
        } else {
            self.startAfter = nil
        }
    }

    /// Checks a listing's page size and prefix, for backends with their own tokens.
    ///
    /// - Throws: `storage.invalid_argument` when `limit` is not within 1 to ``maxLimit``,
    ///   or `prefix` is longer than 1024 bytes or contains NUL.
    public static func validate(prefix: String, limit: Int) throws(PlugboardError) {
        guard (1...maxLimit).contains(limit) else {
            throw PlugboardError(
                .storageInvalidArgument, "invalid page size \(limit)",
                detail: "A listing page holds 1 to \(maxLimit) objects; \(limit) was asked for.",
                hint: "Ask for 1 to \(maxLimit) objects and follow the continuation token for more.")
        }
        let count = prefix.utf8.count
        if count > ObjectKey.maxByteCount {
            throw PlugboardError(
                .storageInvalidArgument, "listing prefix \(StorageText.quote(prefix)) is too long",
                detail: "No key is longer than \(ObjectKey.maxByteCount) bytes; this prefix has \(count) bytes.",
                hint: "Use a prefix of at most \(ObjectKey.maxByteCount) bytes.")
        }
        if prefix.utf8.contains(0) {
            throw PlugboardError(
                .storageInvalidArgument, "listing prefix \(StorageText.quote(prefix)) contains NUL",
                detail: "No key contains NUL (U+0000); this prefix does.",
                hint: "Remove the NUL character from the prefix.")
        }
    }

    /// The token that continues a listing after `key`, the last key of a page.
    public static func continuationToken(after key: String) -> String {
        Base64URL.encode(key.utf8)
    }

    /// Whether the page may hold `key`: it starts with ``prefix`` and comes after
    /// ``startAfter`` in UTF-8 byte order.
    public func includes(_ key: String) -> Bool {
        guard ObjectKey.hasPrefix(key, prefix) else { return false }
        guard let startAfter else { return true }
        return ObjectKey.precedes(startAfter, key)
    }

    /// Byte-wise equality of ``prefix`` and ``startAfter`` (not `String ==`, which treats
    /// canonically equivalent strings as equal).
    public static func == (lhs: ListingRequest, rhs: ListingRequest) -> Bool {
        lhs.limit == rhs.limit
            && ObjectKey.isSame(lhs.prefix, as: rhs.prefix)
            && lhs.startAfter.map { Array($0.utf8) } == rhs.startAfter.map { Array($0.utf8) }
    }

    /// Hashes the UTF-8 bytes of ``prefix`` and ``startAfter`` and the limit.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(Array(prefix.utf8))
        hasher.combine(limit)
        hasher.combine(startAfter.map { Array($0.utf8) })
    }

    private static func decode(_ token: String) throws(PlugboardError) -> String {
        guard let bytes = Base64URL.decode(token), !bytes.isEmpty else {
            throw invalidToken(token, because: "It is not a token this storage returned.")
        }
        do {
            return try ObjectKey.validate(bytes: bytes)
        } catch {
            throw invalidToken(token, because: "It does not name a position in a listing.")
        }
    }

    private static func invalidToken(_ token: String, because reason: String) -> PlugboardError {
        PlugboardError(
            .storageInvalidArgument, "invalid continuation token \(StorageText.quote(token))",
            detail: reason,
            hint: "Pass the nextContinuationToken of the previous page unchanged, or nil for the first page.")
    }
}
