/// The rules for object keys, shared by every ``ObjectStorage`` backend so that all of them
/// accept and refuse the same keys with the same error.
///
/// A key is any valid UTF-8 string of 1 to 1024 bytes without NUL (U+0000), exactly as S3
/// allows. Keys are byte strings: two keys are the same key only when their UTF-8 bytes are
/// equal, and they sort in UTF-8 byte order.
///
/// - Important: Swift's `String` compares by Unicode canonical equivalence, so
///   `"caf\u{E9}" == "cafe\u{301}"` is `true`, `"cafe\u{301}".hasPrefix("cafe")` is `false`
///   and `<` does not follow byte order. Storage keys are different objects in those cases.
///   Backends compare, order and key dictionaries by `Array(key.utf8)`, or use
///   ``isSame(_:as:)``, ``precedes(_:_:)`` and ``hasPrefix(_:_:)``.
public enum ObjectKey {
    /// The longest key, in UTF-8 bytes: 1024.
    public static let maxByteCount = 1024

    /// Checks that `key` is a valid object key.
    ///
    /// A Swift `String` is always valid UTF-8, so this checks the length (1 to
    /// ``maxByteCount`` UTF-8 bytes) and that there is no NUL.
    ///
    /// - Throws: `storage.invalid_key` when the key is empty, longer than 1024 bytes or
    ///   contains NUL.
    public static func validate(_ key: String) throws(PlugboardError) {
        let count = key.utf8.count
        if count == 0 {
            throw PlugboardError(
                .storageInvalidKey, "object key is empty",
                detail: "Object keys are 1 to \(maxByteCount) bytes of UTF-8; this key has 0 bytes.",
                hint: "Give the object a non-empty key.")
        }
        if count > maxByteCount {
            throw PlugboardError(
                .storageInvalidKey, "object key \(StorageText.quote(key)) is too long",
                detail: "Object keys are at most \(maxByteCount) bytes of UTF-8; this key has \(count) bytes.",
                hint: "Use a key of at most \(maxByteCount) bytes.")
        }
        // Over the contiguous bytes: the generic search over the UTF-8 view walks index by
        // index, and every object request validates its key.
        let nul = key.utf8.withContiguousStorageIfAvailable { raw in raw.firstIndex(of: 0) }
            ?? key.utf8.firstIndex(of: 0).map { key.utf8.distance(from: key.utf8.startIndex, to: $0) }
        if let offset = nul {
            throw nulError(key: key, offset: offset)
        }
    }

    /// Checks raw bytes (from a file name, a URL path or a request body) and returns them
    /// as a key.
    ///
    /// The bytes must be valid UTF-8 (no overlong forms, no surrogates, nothing above
    /// U+10FFFF), 1 to ``maxByteCount`` long and free of NUL.
    ///
    /// - Returns: The key the bytes spell.
    /// - Throws: `storage.invalid_key` when the bytes are not a valid key.
    public static func validate(bytes: some Collection<UInt8>) throws(PlugboardError) -> String {
        // The usual valid key in contiguous bytes (a request's decoded path, a stored
        // header's key) is checked in one pass: this runs for every request, and the walk
        // below is slow generic code across the module boundary. Anything it does not pass
        // gets the walk and its messages.
        let quick = bytes.withContiguousStorageIfAvailable { raw -> String? in
            guard !raw.isEmpty, raw.count <= maxByteCount, !raw.contains(0) else { return nil }
            return String(validating: raw, as: UTF8.self)
        }
        if let quick, let key = quick { return key }
        var buffer: [UInt8] = []
        buffer.reserveCapacity(maxByteCount + 1)
        for byte in bytes {
            buffer.append(byte)
            if buffer.count > maxByteCount { break }
        }
        if buffer.count > maxByteCount {
            let total = bytes.count
            throw PlugboardError(
                .storageInvalidKey, "object key is too long",
                detail: "Object keys are at most \(maxByteCount) bytes of UTF-8; this key has \(total) bytes.",
                hint: "Use a key of at most \(maxByteCount) bytes.")
        }
        if let offset = firstInvalidUTF8Offset(buffer) {
            let byte = buffer[offset]
            throw PlugboardError(
                .storageInvalidKey, "object key is not valid UTF-8",
                detail: "Object keys are UTF-8 text; the byte \(StorageText.hexByte(byte)) at offset \(offset) of \(buffer.count) does not form a valid UTF-8 sequence.",
                hint: "Encode the key as UTF-8.")
        }
        let key = String(decoding: buffer, as: UTF8.self)
        try validate(key)
        return key
    }

    /// Whether `a` sorts before `b` in UTF-8 byte order, the order of every listing.
    ///
    /// Use it to sort keys: `keys.sorted(by: ObjectKey.precedes)`. This is not Swift's
    /// `String <`, which normalizes (`"e\u{301}" < "f"` is `false`, while its bytes
    /// `65 CC 81` come before `66`).
    public static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    /// Whether `a` and `b` are the same key: their UTF-8 bytes are equal.
    ///
    /// Unlike `==` on `String`, `"caf\u{E9}"` and `"cafe\u{301}"` are different keys.
    public static func isSame(_ a: String, as b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let equal = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in x.elementsEqual(y) }
        }
        return equal.flatMap { $0 } ?? a.utf8.elementsEqual(b.utf8)
    }

    /// Whether `key` starts with `prefix`, byte for byte, as listings match prefixes.
    ///
    /// Unlike `String.hasPrefix`, `"cafe\u{301}"` starts with the prefix `"cafe"`.
    public static func hasPrefix(_ key: String, _ prefix: String) -> Bool {
        key.utf8.starts(with: prefix.utf8)
    }

    static func nulError(key: String, offset: Int) -> PlugboardError {
        PlugboardError(
            .storageInvalidKey, "object key \(StorageText.quote(key)) contains NUL",
            detail: "Object keys may hold any UTF-8 character except NUL (U+0000); this key has NUL at byte offset \(offset).",
            hint: "Remove the NUL character from the key.")
    }

    /// The offset of the first byte that does not belong to a valid UTF-8 sequence.
    private static func firstInvalidUTF8Offset(_ bytes: [UInt8]) -> Int? {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                offset += encoded.count
            case .emptyInput:
                return nil
            case .error:
                return offset
            }
        }
    }
}
