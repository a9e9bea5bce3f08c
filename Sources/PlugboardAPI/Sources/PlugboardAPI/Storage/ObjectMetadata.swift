/// The rules for user metadata (`[String: String]` stored with an object), shared by every
/// ``ObjectStorage`` backend so that all of them refuse the same metadata with the same
/// error.
///
/// The rules are S3's, tightened so that every entry survives a trip through an HTTP
/// header unchanged:
/// - A key is 1 or more lowercase ASCII letters, digits and `-` (`content-owner`). S3
///   lower-cases metadata keys, so only lowercase keys round-trip.
/// - A value is printable ASCII (0x20 to 0x7E), possibly empty, without a leading or
///   trailing space (HTTP drops those).
/// - Keys and values together take at most 2048 bytes (S3's 2 KB limit, counted as the
///   UTF-8 bytes of every key and value).
public enum ObjectMetadata {
    /// The most bytes all keys and values may take together: 2048.
    public static let maxTotalByteCount = 2048

    /// The bytes `metadata` takes, as the 2048-byte limit counts them: the UTF-8 bytes of
    /// every key and value (PlugboardAPI 1.8; what a quota counts beside the data).
    public static func byteCount(_ metadata: [String: String]) -> Int {
        metadata.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    /// Checks `metadata` against the rules above.
    ///
    /// Entries are checked in key order (by UTF-8 bytes), so the same bad metadata always
    /// gives the same error.
    ///
    /// - Throws: `storage.invalid_metadata` naming the first key or value that breaks a
    ///   rule, or the total size.
    public static func validate(_ metadata: [String: String]) throws(PlugboardError) {
        var total = 0
        for (key, value) in metadata.sorted(by: { ObjectKey.precedes($0.key, $1.key) }) {
            try validateKey(key)
            try validateValue(value, key: key)
            total += key.utf8.count + value.utf8.count
        }
        if total > maxTotalByteCount {
            throw PlugboardError(
                .storageInvalidMetadata, "object metadata is too large",
                detail: "Metadata keys and values may take at most \(maxTotalByteCount) bytes together; these take \(total) bytes in \(metadata.count) entries.",
                hint: "Keep large values in the object itself or in a separate object.")
        }
    }

    private static func validateKey(_ key: String) throws(PlugboardError) {
        if key.utf8.isEmpty {
            throw PlugboardError(
                .storageInvalidMetadata, "metadata key is empty",
                detail: "Metadata keys are 1 or more lowercase ASCII letters, digits and \"-\"; an empty key was given.",
                hint: "Give every metadata entry a name such as \"content-owner\".")
        }
        var offset = 0
        for byte in key.utf8 {
            let allowed = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-")
            if !allowed {
                throw PlugboardError(
                    .storageInvalidMetadata, "invalid metadata key \(StorageText.quote(key))",
                    detail: "Metadata keys are lowercase ASCII letters, digits and \"-\"; this key has the byte \(StorageText.hexByte(byte)) at offset \(offset).",
                    hint: "Use a lowercase key such as \"content-owner\".")
            }
            offset += 1
        }
    }

    private static func validateValue(_ value: String, key: String) throws(PlugboardError) {
        switch StorageText.headerTextProblem(value) {
        case .byte(let byte, let offset)?:
            throw PlugboardError(
                .storageInvalidMetadata, "invalid value for metadata key \(StorageText.quote(key))",
                detail: "Metadata values are printable ASCII (0x20 to 0x7E); this value has the byte \(StorageText.hexByte(byte)) at offset \(offset).",
                hint: "Percent-encode or base64-encode other characters before storing them.")
        case .edgeSpace?:
            throw PlugboardError(
                .storageInvalidMetadata, "invalid value for metadata key \(StorageText.quote(key))",
                detail: "Metadata values may not start or end with a space, because HTTP headers drop it; this value does.",
                hint: "Trim the value, or encode it if the spaces matter.")
        case nil:
            break
        }
    }
}
