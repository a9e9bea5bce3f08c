import PlugboardAPI

extension ConformanceChecks {
    static let metadataRules: [Definition] = [
        Definition("metadata_roundtrip",
                   "Metadata comes back exactly as given (keys with digits and \"-\", values with inner spaces, every printable ASCII character, empty values) from put, head and get.",
                   metadataRoundtrip),
        Definition("metadata_bad_key_refused",
                   "Metadata keys that are empty or hold uppercase, \"_\", \".\", space or non-ASCII are refused with storage.invalid_metadata and nothing is stored.",
                   metadataBadKey),
        Definition("metadata_bad_value_refused",
                   "Metadata values holding control characters, DEL or non-ASCII, or starting or ending with a space, are refused with storage.invalid_metadata and nothing is stored.",
                   metadataBadValue),
        Definition("metadata_2kb_ok",
                   "Metadata of exactly 2048 bytes (keys plus values) is stored and comes back unchanged.",
                   metadataAtLimit),
        Definition("metadata_over_2kb_refused",
                   "Metadata of 2049 bytes (keys plus values) is refused with storage.invalid_metadata and nothing is stored.",
                   metadataOverLimit),
    ]

    private static func metadataRoundtrip(_ c: ConformanceContext) async throws {
        let printable = String(decoding: (0x21...0x7E).map { UInt8($0) }, as: UTF8.self)
        let metadata = [
            "owner": "conformance suite",
            "x-amz-like-name": "value with  two  spaces",
            "n0-9": "0123456789",
            "printable": printable,
            "empty": "",
            "-": "dash only key",
        ]
        let key = c.key("object")
        let put = try await c.put(key, Array("x".utf8), metadata: metadata)
        try c.expectEqual(put.metadata, metadata, "metadata from put of key \(c.show(key))")
        try c.expectEqual(try await c.head(key).metadata, metadata, "metadata from head of key \(c.show(key))")
        try c.expectEqual(try await c.get(key).info.metadata, metadata, "metadata from get of key \(c.show(key))")
        let plain = c.key("plain")
        try await c.put(plain, Array("x".utf8))
        try c.expectEqual(try await c.head(plain).metadata, [:], "metadata from head of key \(c.show(plain)) written without metadata")
    }

    private static func expectMetadataRefused(_ c: ConformanceContext, _ metadata: [String: String], index: Int) async throws {
        let key = c.key("refused-\(index)")
        c.track(key)
        let shown = metadata.map { "\(c.show($0.key)): \(c.show($0.value))" }.sorted().joined(separator: ", ")
        try await c.expectError(.storageInvalidMetadata, "put of key \(c.show(key)) with metadata [\(shown)]") {
            _ = try await c.storage.put(key, data: Array("x".utf8), contentType: nil, metadata: metadata)
        }
        try await c.expectAbsent(key, "after a put with invalid metadata was refused")
    }

    private static func metadataBadKey(_ c: ConformanceContext) async throws {
        let keys = ["", "Owner", "OWNER", "snake_case", "dotted.key", "with space", "caf\u{E9}", "tab\t", "new\nline", "colon:"]
        for (index, key) in keys.enumerated() {
            try await expectMetadataRefused(c, ["good": "ok", key: "value"], index: index)
        }
    }

    private static func metadataBadValue(_ c: ConformanceContext) async throws {
        let values = ["line\nbreak", "carriage\rreturn", "tab\there", "nul\u{0}", "del\u{7F}", "caf\u{E9}",
                      "\u{1F600}", " leading", "trailing ", " "]
        for (index, value) in values.enumerated() {
            try await expectMetadataRefused(c, ["good": "ok", "bad": value], index: index)
        }
    }

    /// Metadata whose keys and values take exactly `total` bytes.
    private static func metadata(totalBytes total: Int) -> [String: String] {
        var metadata: [String: String] = [:]
        var remaining = total
        var index = 0
        while remaining > 0 {
            let key = "k\(index)"
            let valueLength = min(500, max(remaining - key.utf8.count, 0))
            metadata[key] = String(repeating: "v", count: valueLength)
            remaining -= key.utf8.count + valueLength
            index += 1
        }
        return metadata
    }

    private static func metadataAtLimit(_ c: ConformanceContext) async throws {
        let metadata = metadata(totalBytes: 2048)
        let total = metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        try c.expectEqual(total, 2048, "the suite's own metadata size")
        let key = c.key("object")
        try await c.put(key, Array("x".utf8), metadata: metadata)
        try c.expectEqual(try await c.head(key).metadata, metadata, "metadata of 2048 bytes from head of key \(c.show(key))")
    }

    private static func metadataOverLimit(_ c: ConformanceContext) async throws {
        let metadata = metadata(totalBytes: 2049)
        let total = metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        try c.expectEqual(total, 2049, "the suite's own metadata size")
        let key = c.key("object")
        c.track(key)
        try await c.expectError(.storageInvalidMetadata, "put of key \(c.show(key)) with 2049 bytes of metadata") {
            _ = try await c.storage.put(key, data: Array("x".utf8), contentType: nil, metadata: metadata)
        }
        try await c.expectAbsent(key, "after a put with 2049 bytes of metadata was refused")
        let single = ["big": String(repeating: "v", count: 2046)]
        try await c.expectError(.storageInvalidMetadata, "put of key \(c.show(key)) with one entry of 3 + 2046 bytes") {
            _ = try await c.storage.put(key, data: Array("x".utf8), contentType: nil, metadata: single)
        }
    }
}
