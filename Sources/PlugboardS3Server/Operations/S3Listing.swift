import PlugboardAPI
import PlugboardBytes

/// The walk behind ListObjectsV2, ListObjects (V1) and ListObjectVersions: the storage's
/// pages of `bucket/prefix`, `bucket/` stripped, keys under the delimiter folded into
/// common prefixes (each answered once, each counting toward max-keys as in S3), and
/// stopped as soon as max-keys entries are answered and one more is known to follow.
struct S3Listing: Sendable {
    enum Entry: Sendable {
        /// An object: its key in the bucket and the storage's information.
        case object(key: String, info: ObjectInfo)
        case commonPrefix(String)

        /// The key or the common prefix.
        var name: String {
            switch self {
            case .object(let key, _): return key
            case .commonPrefix(let prefix): return prefix
            }
        }
    }

    /// Where a walk starts: a storage page and what to skip on it.
    struct Position: Sendable, Equatable {
        /// The storage's token for the page to read first; nil for the prefix's start.
        var storageToken: String?
        /// Keys up to this one (in UTF-8 byte order) are skipped; nil skips nothing.
        var after: String?
        /// `after` is a common prefix already answered: keys under it are skipped too.
        var afterIsPrefix: Bool
        /// `storageToken` was made here (ListingRequest's scheme) rather than issued by the
        /// storage: a storage that refuses it is read from the prefix's start instead.
        var synthetic: Bool

        static let start = Position(storageToken: nil, after: nil, afterIsPrefix: false, synthetic: false)

        /// After `key` (start-after, marker, key-marker): through the storage's own token
        /// scheme when it takes ListingRequest's, else skipped on the way.
        static func after(_ key: String, bucket: String, isPrefix: Bool) -> Position {
            guard !key.isEmpty else { return .start }
            let storageKey = S3Namespace.objectKey(bucket: bucket, key: key)
            let usable = storageKey.utf8.count <= ObjectKey.maxByteCount && !storageKey.utf8.contains(0)
            return Position(storageToken: usable ? ListingRequest.continuationToken(after: storageKey) : nil,
                            after: key, afterIsPrefix: isPrefix, synthetic: usable)
        }
    }

    struct Page: Sendable {
        var entries: [Entry]
        /// Where the next walk starts; nil when nothing follows.
        var next: Position?
        var isTruncated: Bool { next != nil }
    }

    let bucket: String
    let prefix: String
    /// nil or empty: no folding.
    let delimiter: String?
    let maxKeys: Int

    /// The common prefix `key` folds into, or nil when it is listed as itself.
    func commonPrefix(of key: String) -> String? {
        guard let delimiter, !delimiter.isEmpty else { return nil }
        let keyBytes = Array(key.utf8), prefixCount = prefix.utf8.count, delimiterBytes = Array(delimiter.utf8)
        guard keyBytes.count >= prefixCount + delimiterBytes.count else { return nil }
        var i = prefixCount
        while i + delimiterBytes.count <= keyBytes.count {
            if keyBytes[i..<(i + delimiterBytes.count)].elementsEqual(delimiterBytes) {
                // A match of whole UTF-8 sequences ends on a character boundary.
                return String(decoding: keyBytes[..<(i + delimiterBytes.count)], as: UTF8.self)
            }
            i += 1
        }
        return nil
    }

    /// One answer's entries from `position`.
    func walk(_ storage: any ObjectStorage, from position: Position) async throws -> Page {
        let storagePrefix = S3Namespace.objectKey(bucket: bucket, key: prefix)
        // No key can start with a prefix longer than a key, or with NUL: nothing to read.
        guard maxKeys > 0, storagePrefix.utf8.count <= ObjectKey.maxByteCount, !storagePrefix.utf8.contains(0) else {
            return Page(entries: [], next: nil)
        }
        let strip = bucket.utf8.count + 1
        var entries: [Entry] = []
        entries.reserveCapacity(min(maxKeys, 1000))
        var token = position.storageToken
        var synthetic = position.synthetic
        var skipUnder: String? = position.afterIsPrefix ? position.after : nil
        var pages = 0
        while true {
            let pageToken = token
            let page: ObjectListing
            do {
                page = try await storage.list(prefix: storagePrefix, limit: ListingRequest.maxLimit, continuationToken: pageToken)
            } catch let error as PlugboardError where error.code == .storageInvalidArgument && synthetic {
                // This storage has tokens of its own: walk from the start, skipping.
                synthetic = false
                token = nil
                continue
            }
            synthetic = false
            for info in page.objects {
                let key = String(decoding: info.key.utf8.dropFirst(strip), as: UTF8.self)
                if let after = position.after, !ObjectKey.precedes(after, key) { continue }
                if let skipUnder, ObjectKey.hasPrefix(key, skipUnder) { continue }
                let entry: Entry = commonPrefix(of: key).map { .commonPrefix($0) } ?? .object(key: key, info: info)
                if entries.count == maxKeys {
                    // One more follows: the next answer starts on this page, after the
                    // last entry answered.
                    let last = entries[entries.count - 1]
                    let isPrefix: Bool
                    if case .commonPrefix = last { isPrefix = true } else { isPrefix = false }
                    return Page(entries: entries,
                                next: Position(storageToken: pageToken, after: last.name, afterIsPrefix: isPrefix, synthetic: false))
                }
                entries.append(entry)
                if case .commonPrefix(let folded) = entry { skipUnder = folded }
            }
            guard let nextToken = page.nextContinuationToken else { break }
            pages += 1
            if nextToken == pageToken || pages > 1_000_000 {
                throw S3Error.internalError("The storage's listing of \(storagePrefix.prefix(200)) does not advance: expected a new continuation token, found the same one again (or more than a million pages).")
            }
            token = nextToken
        }
        return Page(entries: entries, next: nil)
    }

    /// The S3 ETags of a page's objects, in order (``etag(_:_:)`` of each, the heads a
    /// few at a time).
    static func etags(_ page: Page, _ storage: any ObjectStorage) async throws -> [String] {
        let infos = page.entries.compactMap { entry -> ObjectInfo? in
            if case .object(_, let info) = entry { return info }
            return nil
        }
        if !infos.contains(where: { $0.unknown.contains(.metadata) }) { return infos.map { S3Objects.etag($0) } }
        return try await S3OperationSupport.mapConcurrently(infos) { info in try await etag(info, storage) }
    }

    /// The S3 ETag of a listed object: listings may not carry metadata (``ObjectListing``),
    /// and the multipart ETag lives there, so such an entry is asked for with `head`.
    static func etag(_ info: ObjectInfo, _ storage: any ObjectStorage) async throws -> String {
        guard info.unknown.contains(.metadata) else { return S3Objects.etag(info) }
        do {
            let full = try await storage.head(info.key)
            return full.etag == info.etag ? S3Objects.etag(full) : S3Objects.etag(info)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return S3Objects.etag(info)
        }
    }

    // MARK: The front end's continuation token

    private static let magic: [UInt8] = [0x70, 0x62, 0x73, 0x33, 0x01] // "pbs3", version 1

    /// What a token is good for: this bucket, prefix and delimiter (S3 refuses a token
    /// with other arguments too). FNV-1a over the three, NUL-separated.
    var scope: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in Array(bucket.utf8) + [0] + Array(prefix.utf8) + [0] + Array((delimiter ?? "").utf8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// `position` as an opaque token: base64url of the magic, a flag byte, the
    /// listing's ``scope``, the storage token (length-prefixed; absent for the prefix's
    /// start) and the last name answered.
    func token(_ position: Position) -> String {
        var bytes = Self.magic
        bytes.append(position.afterIsPrefix ? 1 : 0)
        let scope = self.scope
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: scope >> UInt64(shift))) }
        if let storageToken = position.storageToken {
            let count = UInt32(storageToken.utf8.count)
            bytes.append(contentsOf: [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)])
            bytes.append(contentsOf: storageToken.utf8)
        } else {
            bytes.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF])
        }
        bytes.append(contentsOf: (position.after ?? "").utf8)
        return Base64.encodeURL(bytes)
    }

    /// The position a token of ``token(_:)`` names; `InvalidArgument` for any other text.
    func position(fromToken text: String) throws(S3Error) -> Position {
        let magic = Self.magic
        func invalid(_ why: String) -> S3Error {
            .invalidArgument("The continuation token provided is incorrect: expected a NextContinuationToken this endpoint answered, found one that \(why).",
                             name: "continuation-token", value: text)
        }
        guard let bytes = Base64.decodeURL(text), bytes.count >= magic.count + 13,
              bytes.starts(with: magic) else { throw invalid("it did not issue") }
        var at = magic.count
        guard bytes[at] <= 1 else { throw invalid("it did not issue") }
        let isPrefix = bytes[at] == 1
        at += 1
        var tokenScope: UInt64 = 0
        for byte in bytes[at..<(at + 8)] { tokenScope = tokenScope << 8 | UInt64(byte) }
        guard tokenScope == scope else { throw invalid("belongs to a listing of another bucket, prefix or delimiter") }
        at += 8
        let count = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
        at += 4
        var storageToken: String?
        if count != 0xFFFF_FFFF {
            guard count <= bytes.count - at, let decoded = String(validating: bytes[at..<(at + count)], as: UTF8.self) else {
                throw invalid("is cut short")
            }
            storageToken = decoded
            at += count
        }
        guard let after = String(validating: bytes[at...], as: UTF8.self) else { throw invalid("does not name a key") }
        guard !after.isEmpty else { throw invalid("does not name a key") }
        return Position(storageToken: storageToken, after: after, afterIsPrefix: isPrefix, synthetic: false)
    }
}
