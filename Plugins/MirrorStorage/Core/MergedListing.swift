import PlugboardAPI
import PlugboardBytes

/// A listing of the mirror: the new backend's keys and the old one's merged in key order,
/// each key once (the new backend's entry when both have it).
///
/// The continuation token names, for each backend, the page the listing stands in (the
/// backend's own token for it, or "from the start", or "done") and the last key returned:
/// the next call fetches those pages again and skips what is not past that key. So the
/// backends' tokens are used only as they issued them.
struct MergedListing {
    let new: any ObjectStorage
    let old: any ObjectStorage

    private enum Cursor: Equatable {
        case start
        case at(String)
        case done
    }

    private struct Side {
        var cursor: Cursor
        var buffer: ArraySlice<ObjectInfo> = []
        var next: String?
        var loaded = false
    }

    func page(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try ListingRequest.validate(prefix: prefix, limit: limit)
        var newSide = Side(cursor: .start), oldSide = Side(cursor: .start)
        var after: String?
        if let continuationToken {
            guard let decoded = Self.decode(continuationToken) else {
                throw PlugboardError(.storageInvalidArgument, "continuation token was not issued by this listing",
                    detail: "Expected a token from a previous listing of the mirror, found \(PlugboardError.quoted(continuationToken)).",
                    hint: "Pass the nextContinuationToken of the previous page unchanged, or none to list from the start.")
            }
            (newSide.cursor, oldSide.cursor, after) = (decoded.new, decoded.old, decoded.after)
        }
        var objects: [ObjectInfo] = []
        while objects.count < limit {
            try await fill(&newSide, new, prefix, after)
            try await fill(&oldSide, old, prefix, after)
            let taken: ObjectInfo
            switch (newSide.buffer.first, oldSide.buffer.first) {
            case (nil, nil):
                return ObjectListing(objects: objects, nextContinuationToken: nil)
            case (let a?, nil):
                taken = a
                newSide.buffer.removeFirst()
            case (nil, let b?):
                taken = b
                oldSide.buffer.removeFirst()
            case (let a?, let b?):
                if ObjectKey.isSame(a.key, as: b.key) {
                    taken = a
                    newSide.buffer.removeFirst()
                    oldSide.buffer.removeFirst()
                } else if ObjectKey.precedes(a.key, b.key) {
                    taken = a
                    newSide.buffer.removeFirst()
                } else {
                    taken = b
                    oldSide.buffer.removeFirst()
                }
            }
            objects.append(taken)
            after = taken.key
        }
        try await fill(&newSide, new, prefix, after)
        try await fill(&oldSide, old, prefix, after)
        guard let after, !(newSide.buffer.isEmpty && oldSide.buffer.isEmpty) else {
            return ObjectListing(objects: objects, nextContinuationToken: nil)
        }
        return ObjectListing(objects: objects, nextContinuationToken: Self.encode(newSide.cursor, oldSide.cursor, after))
    }

    /// Loads pages until the side has a key past `after` or has none left.
    private func fill(_ side: inout Side, _ storage: any ObjectStorage, _ prefix: String, _ after: String?) async throws {
        while side.buffer.isEmpty && side.cursor != .done {
            if side.loaded {
                guard let next = side.next else {
                    side.cursor = .done
                    return
                }
                side.cursor = .at(next)
                side.loaded = false
            }
            let token: String? = if case .at(let t) = side.cursor { t } else { nil }
            let page = try await storage.list(prefix: prefix, limit: ListingRequest.maxLimit, continuationToken: token)
            side.buffer = page.objects.filter { object in after.map { ObjectKey.precedes($0, object.key) } ?? true }[...]
            side.next = page.nextContinuationToken
            side.loaded = true
        }
    }

    private static func encode(_ new: Cursor, _ old: Cursor, _ after: String) -> String {
        func cursor(_ c: Cursor) -> String {
            switch c {
            case .start: "s"
            case .done: "d"
            case .at(let token): "t" + Base64.encodeURL(Array(token.utf8))
            }
        }
        return ["m1", cursor(new), cursor(old), Base64.encodeURL(Array(after.utf8))].joined(separator: ".")
    }

    private static func decode(_ token: String) -> (new: Cursor, old: Cursor, after: String)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "m1", let after = Base64.decodeURL(parts[3]), !after.isEmpty else { return nil }
        func cursor(_ s: Substring) -> Cursor? {
            if s == "s" { return .start }
            if s == "d" { return .done }
            guard s.first == "t", let bytes = Base64.decodeURL(s.dropFirst()) else { return nil }
            return .at(String(decoding: bytes, as: UTF8.self))
        }
        guard let n = cursor(parts[1]), let o = cursor(parts[2]) else { return nil }
        return (n, o, String(decoding: after, as: UTF8.self))
    }
}
