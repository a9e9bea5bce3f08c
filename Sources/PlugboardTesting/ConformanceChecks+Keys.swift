import PlugboardAPI

extension ConformanceChecks {
    static let keyRules: [Definition] = [
        Definition("key_empty_refused",
                   "put, get, head and delete of the empty key fail with storage.invalid_key.",
                   { c in try await expectKeyRefused(c, "") }),
        Definition("key_1025_bytes_refused",
                   "Keys of 1025 bytes (1025 ASCII characters, or 513 characters of which 512 are two-byte) fail with storage.invalid_key in put, get, head and delete.",
                   keyTooLong),
        Definition("key_nul_refused",
                   "Keys containing NUL (alone, inside, at the end) fail with storage.invalid_key in put, get, head and delete.",
                   keyNUL),
        Definition("key_1024_bytes_no_slash_ok",
                   "Keys of exactly 1024 bytes with no \"/\" (ASCII, and with four-byte characters) are stored, read and listed.",
                   key1024),
        Definition("key_dotdot_ok",
                   "\"..\", \".\", \"../x\", \"x/../../y\" and \"x/./y\" are ordinary keys: stored and read as given, and \"x/a/../b\" is a different object from \"x/b\".",
                   keyDotDot),
        Definition("key_leading_slash_ok",
                   "Keys starting with \"/\" or \"//\", ending with \"/\" or holding \"//\" are ordinary keys, each a different object from the key without the extra slash.",
                   keyLeadingSlash),
        Definition("key_a_and_a_slash_b_coexist",
                   "\"a\" and \"a/b\" both exist whichever is written first, and deleting one leaves the other.",
                   keyFileAndFolder),
        Definition("key_unicode_equivalents_distinct",
                   "Keys that are canonically equivalent but different bytes (\"caf\\u{E9}\" and \"cafe\\u{301}\", \"\\u{212B}\" and \"\\u{C5}\") are different objects.",
                   keyUnicodeEquivalents),
        Definition("key_case_sensitive",
                   "\"Key\", \"key\" and \"KEY\" are three different objects.",
                   keyCaseSensitive),
        Definition("unicode_keys",
                   "Keys with accents, CJK, right-to-left text, emoji sequences, four-byte characters, U+FFFD, U+FEFF and U+10FFFF are stored, read and listed byte for byte.",
                   unicodeKeys),
        Definition("key_special_characters_ok",
                   "Keys with spaces, %, +, ?, #, &, =, \\, quotes, tab, newline, carriage return, DEL and other URL or shell specials are stored, read and listed byte for byte.",
                   specialCharacterKeys),
    ]

    /// Every operation taking a key refuses `key` with `storage.invalid_key`.
    private static func expectKeyRefused(_ c: ConformanceContext, _ key: String) async throws {
        try await c.expectError(.storageInvalidKey, "put of key \(c.show(key))") {
            _ = try await c.storage.put(key, data: Array("x".utf8), contentType: nil, metadata: [:])
        }
        try await c.expectError(.storageInvalidKey, "get of key \(c.show(key))") {
            _ = try await c.storage.get(key)
        }
        try await c.expectError(.storageInvalidKey, "head of key \(c.show(key))") {
            _ = try await c.storage.head(key)
        }
        try await c.expectError(.storageInvalidKey, "delete of key \(c.show(key))") {
            try await c.storage.delete(key)
        }
    }

    /// Each key is stored, read back exactly, and listed with exactly its bytes.
    private static func expectKeysWork(_ c: ConformanceContext, _ keys: [String], listPrefix: String? = nil) async throws {
        for (index, key) in keys.enumerated() {
            try await c.put(key, c.bytes(16 + index, seed: index))
        }
        for (index, key) in keys.enumerated() {
            try await c.expectStored(key, c.bytes(16 + index, seed: index))
        }
        if let listPrefix {
            let listed = Set(try await c.listAll(prefix: listPrefix).map { Array($0.key.utf8) })
            for key in keys where !listed.contains(Array(key.utf8)) {
                throw ConformanceCheckFailure("list of prefix \(c.show(listPrefix)): expected key \(c.show(key)) with exactly its bytes, found it missing among \(listed.count) keys")
            }
        }
    }

    private static func keyTooLong(_ c: ConformanceContext) async throws {
        let ascii = c.base + String(repeating: "k", count: 1025 - c.base.utf8.count)
        let twoByte = "a" + String(repeating: "\u{E9}", count: 512)
        for key in [ascii, twoByte] {
            c.track(key)
            try c.expectEqual(key.utf8.count, 1025, "the suite's own key length")
            try await expectKeyRefused(c, key)
        }
    }

    private static func keyNUL(_ c: ConformanceContext) async throws {
        for key in ["\u{0}", c.key("a\u{0}b"), c.key("end\u{0}")] {
            c.track(key)
            try await expectKeyRefused(c, key)
        }
    }

    private static func key1024(_ c: ConformanceContext) async throws {
        let ascii = c.base + "-" + String(repeating: "k", count: 1024 - c.base.utf8.count - 1)
        let clefs = c.base + "-"
            + String(repeating: "\u{1D11E}", count: (1024 - c.base.utf8.count - 1) / 4)
        let wide = clefs + String(repeating: "x", count: 1024 - clefs.utf8.count)
        for key in [ascii, wide] {
            try c.expectEqual(key.utf8.count, 1024, "the suite's own key length")
            try c.expect(!key.utf8.contains(UInt8(ascii: "/")), "the suite's own key has no slash")
        }
        try await expectKeysWork(c, [ascii, wide], listPrefix: c.base + "-")
    }

    private static func keyDotDot(_ c: ConformanceContext) async throws {
        let keys = ["..", ".", "../\(c.base)", c.key("../../../escape"), c.key("./x"),
                    c.key("a/../b"), c.key("b"), c.key(".."), c.key("...")]
        await c.preserve("..")
        await c.preserve(".")
        try await expectKeysWork(c, keys)
        let listed = try await c.listAll(prefix: c.key("")).map(\.key)
        try c.expectEqual(listed.count, 6, "list of prefix \(c.show(c.key(""))) holding \"../../../escape\", \"./x\", \"a/../b\", \"b\", \"..\" and \"...\": number of objects")
    }

    private static func keyLeadingSlash(_ c: ConformanceContext) async throws {
        let keys = ["/" + c.base, "//" + c.base, c.base, c.key(""), c.key("/x"), c.key("x"), c.key("x/")]
        try await expectKeysWork(c, keys)
        let listed = try await c.listAll(prefix: c.base).map(\.key)
        try c.expectEqual(listed.count, 5, "list of prefix \(c.show(c.base)) holding the key itself, \"/\", \"//x\", \"/x\" and \"/x/\" after it: number of objects")
    }

    private static func keyFileAndFolder(_ c: ConformanceContext) async throws {
        let a = c.key("a"), ab = c.key("a/b")
        let d = c.key("c/d"), cc = c.key("c")
        try await expectKeysWork(c, [a, ab])
        try await c.put(d, c.bytes(5, seed: 1))
        try await c.put(cc, c.bytes(6, seed: 2))
        try await c.expectStored(d, c.bytes(5, seed: 1))
        try await c.expectStored(cc, c.bytes(6, seed: 2))
        try await c.delete(a)
        try await c.expectStored(ab, c.bytes(17, seed: 1))
        try await c.delete(d)
        try await c.expectStored(cc, c.bytes(6, seed: 2))
    }

    private static func keyUnicodeEquivalents(_ c: ConformanceContext) async throws {
        let pairs = [("caf\u{E9}", "cafe\u{301}"), ("\u{212B}", "\u{C5}"), ("\u{1E9B}\u{323}", "\u{17F}\u{323}\u{307}")]
        for (index, (first, second)) in pairs.enumerated() {
            let k1 = c.key("\(index)-" + first), k2 = c.key("\(index)-" + second)
            try await c.put(k1, Array("first".utf8))
            try await c.put(k2, Array("second".utf8))
            try await c.expectStored(k1, Array("first".utf8))
            try await c.expectStored(k2, Array("second".utf8))
        }
        let listed = try await c.listAll(prefix: c.key("")).count
        try c.expectEqual(listed, pairs.count * 2, "list of prefix \(c.show(c.key(""))) holding \(pairs.count) pairs of canonically equivalent keys: number of objects")
    }

    private static func keyCaseSensitive(_ c: ConformanceContext) async throws {
        try await expectKeysWork(c, [c.key("Key"), c.key("key"), c.key("KEY")], listPrefix: c.key(""))
        let listed = try await c.listAll(prefix: c.key("")).count
        try c.expectEqual(listed, 3, "list of prefix \(c.show(c.key(""))) holding \"Key\", \"key\" and \"KEY\": number of objects")
    }

    private static func unicodeKeys(_ c: ConformanceContext) async throws {
        let names = ["r\u{E9}sum\u{E9}", "\u{65E5}\u{672C}\u{8A9E}/\u{6587}\u{66F8}", "\u{5E9}\u{5DC}\u{5D5}\u{5DD}",
                     "\u{1F469}\u{200D}\u{1F4BB}", "\u{1F1EB}\u{1F1F7}", "\u{1D11E}", "\u{FFFD}", "\u{FEFF}bom",
                     "\u{10FFFF}", "e\u{301}\u{302}\u{303}", "\u{D55C}\u{AD6D}\u{C5B4}", "\u{2028}\u{2029}"]
        try await expectKeysWork(c, names.map { c.key($0) }, listPrefix: c.key(""))
    }

    private static func specialCharacterKeys(_ c: ConformanceContext) async throws {
        let names = ["with space", "100%", "%2F", "%", "a+b", "what?", "#hash", "a&b=c", "back\\slash",
                     "\"quoted\"", "'single'", "tab\there", "new\nline", "carriage\rreturn", "del\u{7F}",
                     "bell\u{7}", "<tag>", "pipe|star*", "colon:semi;", "~tilde", "$HOME", "`tick`", "{braces}[]"]
        try await expectKeysWork(c, names.map { c.key($0) }, listPrefix: c.key(""))
    }
}
