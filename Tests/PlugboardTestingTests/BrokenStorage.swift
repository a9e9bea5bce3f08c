import Foundation
import PlugboardAPI
import PlugboardTesting

/// An in-memory storage with one deliberate flaw, to prove that the conformance suite
/// names the rule each flaw breaks.
struct BrokenStorage: ObjectStorage {
    enum Flaw: Sendable {
        /// `delete` of a missing key throws `storage.not_found` (not idempotent).
        case deleteOfMissingKeyThrows
        /// `list` orders keys by Swift `String <` instead of UTF-8 bytes.
        case listsInStringOrder
        /// Keys are normalized to NFC, so canonically equivalent keys collide.
        case keysCompareAsStrings
        /// ETags come back quoted and upper-case, as a careless S3 client passes them on.
        case quotedUppercaseETag
        /// Metadata keys are lower-cased instead of refused.
        case lowercasesMetadataKeys
        /// The last page of a listing still carries a token, leading to an empty page.
        case tokenOnLastPage
        /// `get` never returns (until cancelled).
        case getHangs
        /// Listings report `lastModified` two seconds later than `head` does.
        case listedLastModifiedLater
        /// Listings claim the default content type and no metadata, as S3Storage's did
        /// before PlugboardAPI 1.3 (ListObjectsV2 has neither).
        case listedDefaultsAsKnown
        /// Not a flaw: listings say they do not know content type and metadata.
        case listedTypesUnknown
        /// `getWithoutWaiting` answers every read with the whole object, whatever range
        /// was asked (an unsatisfiable one included).
        case readyIgnoresRange
    }

    let flaw: Flaw
    private let base = InMemoryObjectStorage()

    init(_ flaw: Flaw) { self.flaw = flaw }

    private func mapKey(_ key: String) -> String {
        flaw == .keysCompareAsStrings ? key.precomposedStringWithCanonicalMapping : key
    }

    private func mapInfo(_ info: ObjectInfo) -> ObjectInfo {
        guard flaw == .quotedUppercaseETag else { return info }
        var info = info
        info.etag = "\"" + info.etag.uppercased() + "\""
        return info
    }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        var metadata = metadata
        if flaw == .lowercasesMetadataKeys {
            metadata = Dictionary(metadata.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        return mapInfo(try await base.put(mapKey(key), data: data, contentType: contentType, metadata: metadata))
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        var metadata = metadata
        if flaw == .lowercasesMetadataKeys {
            metadata = Dictionary(metadata.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        }
        var condition = condition
        if case .matches(let etag) = condition {
            // The ETags it hands out are the base's, decorated: it takes them back as such.
            condition = .matches(etag: etag.trimmingCharacters(in: ["\""]).lowercased())
        }
        return mapInfo(try await base.put(mapKey(key), body: body, contentType: contentType, metadata: metadata,
                                          condition: condition))
    }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        if flaw == .getHangs {
            try await Task.sleep(for: .seconds(3600))
        }
        var stream = try await base.get(mapKey(key), range: range)
        stream.info = mapInfo(stream.info)
        return stream
    }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        guard flaw == .readyIgnoresRange else { return nil }
        guard let ready = try base.getWithoutWaiting(mapKey(key), range: nil) else { return nil }
        return ReadyObject(info: ready.info, range: range == nil ? nil : 0..<ready.bytes.count, bytes: ready.bytes)
    }

    func get(_ key: String) async throws -> StoredObject {
        if flaw == .getHangs {
            try await Task.sleep(for: .seconds(3600))
        }
        let object = try await base.get(mapKey(key))
        return StoredObject(info: mapInfo(object.info), data: object.data)
    }

    func head(_ key: String) async throws -> ObjectInfo {
        mapInfo(try await base.head(mapKey(key)))
    }

    func delete(_ key: String) async throws {
        if flaw == .deleteOfMissingKeyThrows, try await !base.exists(key) {
            throw PlugboardError.objectNotFound(key: key)
        }
        try await base.delete(mapKey(key))
    }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        switch flaw {
        case .listsInStringOrder:
            try ListingRequest.validate(prefix: prefix, limit: limit)
            let all = try await base.list(prefix: prefix).sorted { $0.key < $1.key }
            guard let offset = continuationToken.map({ Int($0) }) ?? 0, (0...all.count).contains(offset) else {
                throw PlugboardError(.storageInvalidArgument, "invalid continuation token")
            }
            let end = min(offset + limit, all.count)
            return ObjectListing(objects: Array(all[offset..<end]), nextContinuationToken: end < all.count ? String(end) : nil)
        case .tokenOnLastPage:
            let page = try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
            let token = page.nextContinuationToken ?? page.objects.last.map { ListingRequest.continuationToken(after: $0.key) }
            return ObjectListing(objects: page.objects, nextContinuationToken: token)
        default:
            let page = try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
            var objects = page.objects.map(mapInfo)
            if flaw == .listedDefaultsAsKnown || flaw == .listedTypesUnknown {
                objects = objects.map { info in
                    ObjectInfo(key: info.key, size: info.size, etag: info.etag, lastModified: info.lastModified,
                               unknown: flaw == .listedTypesUnknown ? [.contentType, .metadata] : [])
                }
            }
            if flaw == .listedLastModifiedLater {
                for index in objects.indices {
                    let t = objects[index].lastModified
                    objects[index].lastModified = Timestamp(secondsSince1970: t.seconds + 2, nanoseconds: t.nanoseconds)
                }
            }
            return ObjectListing(objects: objects, nextContinuationToken: page.nextContinuationToken)
        }
    }
}
