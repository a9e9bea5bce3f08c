import PlugboardAPI
import PlugboardBytes

/// Where an object's file lives under `<root>/objects`: the key's UTF-8 bytes as lowercase
/// hexadecimal, cut into folders of ``folderDigits`` digits, the last piece a file named
/// `_` followed by its digits.
///
/// ```
/// "a"          -> objects/_61
/// "a/b"        -> objects/_612f62
/// "../x"       -> objects/_2e2e2f78
/// 300 bytes    -> objects/<250 digits>/<250 digits>/_<100 digits>
/// ```
///
/// Why this encoding:
/// - **Every valid key works.** A name holds at most 251 bytes (NAME_MAX is 255), so a
///   1024-byte key becomes 8 folders and a file; `a` beside `a/b` is two files; keys that
///   differ only in case or in Unicode normalization are different digits.
/// - **Nothing escapes the root.** Names are only `0-9`, `a-f` and `_`: never `/`, `.`,
///   `..` or an absolute path, whatever the key holds.
/// - **It is injective and reversible.** Folders have exactly 250 digits and no `_`;
///   files start with `_`; so a path decodes to exactly one key, and a file never takes a
///   folder's name.
/// - **Order is kept.** Two hex digits per byte, and `0-9` sort before `a-f` in ASCII, so
///   comparing digit strings compares key bytes: a listing walks the folders in name order
///   and gets UTF-8 byte order without an index (``FolderEntries`` reads the names back).
/// - It works on case-insensitive file systems (digits are lowercase only).
struct ObjectPath: Sendable {
    /// The digits in one folder name: 250, i.e. 125 bytes of key.
    static let folderDigits = 250

    /// The key's UTF-8 bytes as lowercase hex digits (ASCII).
    let digits: [UInt8]

    /// The path of the key's file.
    init(key: String) {
        let count = key.utf8.count
        digits = [UInt8](unsafeUninitializedCapacity: count * 2) { out, initialized in
            var i = 0
            for byte in key.utf8 {
                out[i] = HexDigits.lower(byte >> 4)
                out[i + 1] = HexDigits.lower(byte & 0x0F)
                i += 2
            }
            initialized = i
        }
    }

    /// The folders between `objects` and the file, outermost first; empty for keys of up to
    /// 125 bytes.
    var folders: [String] {
        var out: [String] = []
        var start = 0
        while digits.count - start > Self.folderDigits {
            out.append(String(decoding: digits[start..<start + Self.folderDigits], as: UTF8.self))
            start += Self.folderDigits
        }
        return out
    }

    /// The file's name: `_` and the digits after the last folder.
    var fileName: String {
        let folderCount = (digits.count - 1) / Self.folderDigits
        return "_" + String(decoding: digits[(folderCount * Self.folderDigits)...], as: UTF8.self)
    }

    /// `folder/folder/_file`, relative to the `objects` folder.
    var relativePath: String { path(under: "") }

    /// `prefix` then `folder/folder/_file`, made in one string: this runs for every read.
    func path(under prefix: StaticString) -> String {
        let folderCount = (digits.count - 1) / Self.folderDigits
        let length = prefix.utf8CodeUnitCount + digits.count + folderCount + 1
        return String(unsafeUninitializedCapacity: length) { out in
            var i = 0
            func put(_ bytes: some Sequence<UInt8>) {
                for b in bytes {
                    out[i] = b
                    i += 1
                }
            }
            put(UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
            var start = 0
            for _ in 0..<folderCount {
                put(digits[start..<start + Self.folderDigits])
                put(CollectionOfOne(UInt8(ascii: "/")))
                start += Self.folderDigits
            }
            put(CollectionOfOne(UInt8(ascii: "_")))
            put(digits[start...])
            return i
        }
    }

    // MARK: - Reading names back (listings)

    /// The key that `digits` (a whole key's hex) spells, or nil when the bytes are not a
    /// valid key.
    static func key(fromDigits digits: [UInt8]) -> String? {
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(of: digits[index]), let low = value(of: digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return try? ObjectKey.validate(bytes: bytes)
    }

    private static func value(of c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
