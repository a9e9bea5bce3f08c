import PlugboardAPI

extension ConformanceChecks {
    static let listingRules: [Definition] = [
        Definition("list_utf8_byte_order",
                   "list returns keys in ascending UTF-8 byte order, not Swift String order, UTF-16 order or a locale's order (\"B\" < \"a\" < \"e\\u{301}\" < \"f\" < \"z\" < \"\\u{E9}\" < \"\\u{FFFD}\" < \"\\u{1D11E}\"), on one page and across pages.",
                   listByteOrder),
        Definition("list_prefix",
                   "list returns exactly the keys starting with the prefix byte for byte (\"cafe\" matches \"cafe\\u{301}\"), whether or not the prefix ends with \"/\"; an empty prefix lists keys.",
                   listPrefix),
        Definition("list_pagination_all_pages_no_dups",
                   "Following continuation tokens with page sizes 1, 7 and 1000 yields every key exactly once, in order, with no page larger than asked.",
                   listPagination),
        Definition("list_last_page_has_no_token",
                   "A page that ends the listing has no continuation token, also when it is exactly full; a prefix matching nothing gives an empty page without a token.",
                   listLastPage),
        Definition("list_limit_bounds_refused",
                   "Page sizes 0, -1, 1001, Int.max and Int.min are refused with storage.invalid_argument; 1 and 1000 are accepted.",
                   listLimitBounds),
        Definition("list_bad_token_refused",
                   "Continuation tokens the backend did not issue (empty, garbage, with NUL or spaces) are refused with storage.invalid_argument.",
                   listBadToken),
        Definition("list_bad_prefix_refused",
                   "A prefix over 1024 bytes or containing NUL, which no key can start with, is refused with storage.invalid_argument.",
                   listBadPrefix),
        Definition("list_entries_match_head",
                   "Each listed object's key, size and ETag equal head's, its lastModified is within a second of head's, and its contentType and metadata equal head's unless the entry names them in `unknown`.",
                   listEntriesMatchHead),
        Definition("list_reflects_puts_and_deletes",
                   "A key put is listed at once; a key deleted is no longer listed.",
                   listReflectsWrites),
    ]

    /// Keys whose UTF-8 byte order differs from Swift `String <`, from UTF-16 order and
    /// from case-insensitive or locale order; in the order a listing must return them.
    private static let orderedNames = [
        "B", "a", "e\u{301}", "f", "z", "\u{E9}", "\u{FF5E}", "\u{FFFD}", "\u{1D11E}", "\u{1F600}",
    ]

    private static func listByteOrder(_ c: ConformanceContext) async throws {
        let prefix = c.key("")
        let expected = orderedNames.map { prefix + $0 }
        for (index, key) in expected.reversed().enumerated() {
            try await c.put(key, c.bytes(4, seed: index))
        }
        for limit in [1000, 3] {
            let found = try await c.listAll(prefix: prefix, limit: limit).map(\.key)
            try expectSameKeys(c, found, expected, after: prefix, "list of prefix \(c.show(prefix)) with limit \(limit)")
        }
    }

    /// Fails unless `found` holds exactly the bytes of `expected`, in order. Keys are shown
    /// after `prefix`, which they all start with: `prefix + ["B", "a", ...]`.
    private static func expectSameKeys(_ c: ConformanceContext, _ found: [String], _ expected: [String],
                                       after prefix: String, _ what: String) throws {
        let foundBytes = found.map { Array($0.utf8) }
        let expectedBytes = expected.map { Array($0.utf8) }
        guard foundBytes != expectedBytes else { return }
        func shown(_ keys: [String]) -> String {
            let parts = keys.map { key -> String in
                guard ObjectKey.hasPrefix(key, prefix) else { return c.show(key) }
                return ConformanceText.quote(String(decoding: key.utf8.dropFirst(prefix.utf8.count), as: UTF8.self))
            }
            return "[" + parts.joined(separator: ", ") + "]"
        }
        throw ConformanceCheckFailure("\(what): expected keys \(c.show(prefix)) + \(shown(expected)), found \(c.show(prefix)) + \(shown(found))")
    }

    private static func listPrefix(_ c: ConformanceContext) async throws {
        let names = ["ab", "ab/", "ab/c", "ab/c/d", "abc", "abd", "a", "b", "cafe", "cafe\u{301}", "caf\u{E9}", "cafeteria"]
        for (index, name) in names.enumerated() {
            try await c.put(c.key(name), c.bytes(3, seed: index))
        }
        let cases: [(String, [String])] = [
            ("ab", ["ab", "ab/", "ab/c", "ab/c/d", "abc", "abd"]),
            ("ab/", ["ab/", "ab/c", "ab/c/d"]),
            ("ab/c/", ["ab/c/d"]),
            ("abc", ["abc"]),
            ("a", ["a", "ab", "ab/", "ab/c", "ab/c/d", "abc", "abd"]),
            ("cafe", ["cafe", "cafe\u{301}", "cafeteria"]),
            ("caf\u{E9}", ["caf\u{E9}"]),
            ("zzz", []),
            ("", names),
        ]
        for (suffix, expected) in cases {
            let prefix = c.key(suffix)
            let found = try await c.listAll(prefix: prefix).map(\.key)
            let ordered = expected.map { c.key($0) }.sorted(by: ObjectKey.precedes)
            try expectSameKeys(c, found, ordered, after: prefix, "list of prefix \(c.show(prefix))")
        }
        let whole = try await c.list(prefix: "", limit: 1, token: nil)
        try c.expectEqual(whole.objects.count, 1, "list of the empty prefix with limit 1, with at least \(names.count) objects stored: number of objects")
    }

    private static func listPagination(_ c: ConformanceContext) async throws {
        let prefix = c.key("")
        let expected = (0..<25).map { prefix + "item-" + ($0 < 10 ? "0" : "") + String($0) }
        for (index, key) in expected.shuffled().enumerated() {
            try await c.put(key, c.bytes(2, seed: index))
        }
        for limit in [1, 7, 1000] {
            let found = try await c.listAll(prefix: prefix, limit: limit).map(\.key)
            let unique = Set(found.map { Array($0.utf8) })
            try c.expect(unique.count == found.count,
                         "list of prefix \(c.show(prefix)) with limit \(limit): expected each key once across pages, found \(found.count - unique.count) repeated")
            try expectSameKeys(c, found, expected, after: prefix, "list of prefix \(c.show(prefix)) with limit \(limit), all pages")
        }
    }

    private static func listLastPage(_ c: ConformanceContext) async throws {
        let prefix = c.key("")
        for index in 0..<5 {
            try await c.put(prefix + "k\(index)", c.bytes(1, seed: index))
        }
        let full = try await c.list(prefix: prefix, limit: 5, token: nil)
        try c.expectEqual(full.objects.count, 5, "list of prefix \(c.show(prefix)) holding 5 keys with limit 5: number of objects")
        try c.expect(full.nextContinuationToken == nil,
                     "list of prefix \(c.show(prefix)) holding 5 keys with limit 5: expected no continuation token, found \(full.nextContinuationToken.map(c.show) ?? "nil")")
        let first = try await c.list(prefix: prefix, limit: 4, token: nil)
        guard let token = first.nextContinuationToken else {
            throw ConformanceCheckFailure("list of prefix \(c.show(prefix)) holding 5 keys with limit 4: expected a continuation token, found nil")
        }
        let rest = try await c.list(prefix: prefix, limit: 4, token: token)
        try c.expect(rest.nextContinuationToken == nil,
                     "second page of prefix \(c.show(prefix)) holding 5 keys with limit 4: expected no continuation token, found \(rest.nextContinuationToken.map(c.show) ?? "nil")")
        try c.expectEqual(first.objects.count + rest.objects.count, 5, "list of prefix \(c.show(prefix)) holding 5 keys with limit 4: objects on both pages")
        let nothing = c.key("nothing-here/")
        let empty = try await c.list(prefix: nothing, limit: 10, token: nil)
        try c.expect(empty.objects.isEmpty && empty.nextContinuationToken == nil,
                     "list of prefix \(c.show(nothing)) matching no key: expected an empty page without token, found \(empty.objects.count) objects and token \(empty.nextContinuationToken.map(c.show) ?? "nil")")
    }

    private static func listLimitBounds(_ c: ConformanceContext) async throws {
        let prefix = c.key("")
        try await c.put(prefix + "one", Array("1".utf8))
        for limit in [0, -1, 1001, Int.max, Int.min] {
            try await c.expectError(.storageInvalidArgument, "list of prefix \(c.show(prefix)) with limit \(limit)") {
                _ = try await c.storage.list(prefix: prefix, limit: limit, continuationToken: nil)
            }
        }
        for limit in [1, 1000] {
            let page = try await c.list(prefix: prefix, limit: limit, token: nil)
            try c.expectEqual(page.objects.count, 1, "list of prefix \(c.show(prefix)) holding one key with limit \(limit): number of objects")
        }
    }

    private static func listBadToken(_ c: ConformanceContext) async throws {
        let prefix = c.key("")
        for index in 0..<3 {
            try await c.put(prefix + "k\(index)", Array("x".utf8))
        }
        let tokens = ["", "%%% not a token %%%", "\u{0}", "token with spaces", "\u{FFFD}\u{FFFD}", "====", "!"]
        for token in tokens {
            try await c.expectError(.storageInvalidArgument, "list of prefix \(c.show(prefix)) with continuation token \(c.show(token))") {
                _ = try await c.storage.list(prefix: prefix, limit: 1, continuationToken: token)
            }
        }
    }

    private static func listBadPrefix(_ c: ConformanceContext) async throws {
        let long = c.base + String(repeating: "p", count: max(1025 - c.base.utf8.count, 1))
        for prefix in [long, c.key("a\u{0}"), "\u{0}"] {
            try await c.expectError(.storageInvalidArgument, "list of prefix \(c.show(prefix)) (\(prefix.utf8.count) bytes)") {
                _ = try await c.storage.list(prefix: prefix, limit: 10, continuationToken: nil)
            }
        }
    }

    private static func listEntriesMatchHead(_ c: ConformanceContext) async throws {
        let prefix = c.key("")
        for index in 0..<4 {
            try await c.put(prefix + "k\(index)", c.bytes(index * 1000, seed: index),
                            contentType: "text/plain", metadata: ["n": "\(index)"])
        }
        let listed = try await c.listAll(prefix: prefix)
        try c.expectEqual(listed.count, 4, "list of prefix \(c.show(prefix)) holding 4 keys: number of objects")
        for object in listed {
            let head = try await c.head(object.key)
            try c.expectEqual(object.size, head.size, "size of \(c.show(object.key)) from list compared with head")
            try c.expectEqual(object.etag, head.etag, "etag of \(c.show(object.key)) from list compared with head")
            // A listing may leave them out (ObjectInfo.unknown); what it does report is the object's.
            if let contentType = object.knownContentType {
                try c.expectEqual(contentType, head.contentType, "contentType of \(c.show(object.key)) from list compared with head")
            }
            if let metadata = object.knownMetadata {
                try c.expectEqual(metadata, head.metadata, "metadata of \(c.show(object.key)) from list compared with head")
            }
            let gap = abs(c.seconds(from: head.lastModified, to: object.lastModified))
            try c.expect(gap <= 1, "lastModified of \(c.show(object.key)): expected list and head within a second, found \(object.lastModified) and \(head.lastModified)")
        }
    }

    private static func listReflectsWrites(_ c: ConformanceContext) async throws {
        let prefix = c.key("")
        let a = prefix + "a", b = prefix + "b"
        try await c.put(a, Array("a".utf8))
        try expectSameKeys(c, try await c.listAll(prefix: prefix).map(\.key), [a], after: prefix, "list of prefix \(c.show(prefix)) after put of \(c.show(a))")
        try await c.put(b, Array("b".utf8))
        try expectSameKeys(c, try await c.listAll(prefix: prefix).map(\.key), [a, b], after: prefix, "list of prefix \(c.show(prefix)) after put of \(c.show(b))")
        try await c.delete(a)
        try expectSameKeys(c, try await c.listAll(prefix: prefix).map(\.key), [b], after: prefix, "list of prefix \(c.show(prefix)) after delete of \(c.show(a))")
        try await c.delete(b)
        try expectSameKeys(c, try await c.listAll(prefix: prefix).map(\.key), [], after: prefix, "list of prefix \(c.show(prefix)) after delete of \(c.show(b))")
    }
}
