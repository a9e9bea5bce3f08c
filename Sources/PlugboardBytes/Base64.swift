/// Base64 (RFC 4648): the standard alphabet with padding, what `Content-MD5`, the
/// `x-amz-checksum-*` headers and `storage get --json` carry, and the URL-safe alphabet
/// without padding, for tokens that travel in a query (listing continuation tokens).
///
/// Decoding is strict in both: only the alphabet, padding only where the form has it, no
/// white space, and unused trailing bits zero, so every byte sequence has one encoding.
/// (PlugboardAPI keeps a base64url of its own: it is a package apart and cannot link this.)
public enum Base64 {
    private static let standard = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlSafe = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Standard base64, padded with `=` to a multiple of four characters.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, alphabet: standard, padded: true)
    }

    /// The bytes of padded standard base64 `text`; nil for anything else (a length not a
    /// multiple of 4, a character outside the alphabet, padding in the middle, non-zero
    /// pad bits).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        guard utf8.count % 4 == 0 else { return nil }
        for _ in 0..<2 where utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        return decode(utf8, urlSafe: false)
    }

    /// Base64url without padding (RFC 4648 section 5).
    public static func encodeURL(_ bytes: some Collection<UInt8>) -> String {
        encode(bytes, alphabet: urlSafe, padded: false)
    }

    /// The bytes of canonical unpadded base64url `text`, nil for anything else.
    public static func decodeURL(_ text: some StringProtocol) -> [UInt8]? {
        decode(Array(text.utf8), urlSafe: true)
    }

    private static func encode(_ bytes: some Collection<UInt8>, alphabet: [UInt8], padded: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let b0 = iterator.next() {
            let b1 = iterator.next()
            let b2 = b1 == nil ? nil : iterator.next()
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 { out.append(alphabet[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)]) }
            if let b2 { out.append(alphabet[Int(b2 & 0x3F)]) }
        }
        if padded {
            while out.count % 4 != 0 { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of unpadded characters; nil for a character outside the alphabet, a
    /// length no encoding has, or non-zero unused bits.
    private static func decode(_ characters: [UInt8], urlSafe: Bool) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(characters.count)
        for c in characters {
            guard let v = value(of: c, urlSafe: urlSafe) else { return nil }
            values.append(v)
        }
        if values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var i = 0
        while i < values.count {
            let remaining = values.count - i
            let v0 = values[i], v1 = values[i + 1]
            out.append(v0 << 2 | v1 >> 4)
            if remaining == 2 {
                if v1 & 0x0F != 0 { return nil }
                break
            }
            let v2 = values[i + 2]
            out.append((v1 & 0x0F) << 4 | v2 >> 2)
            if remaining == 3 {
                if v2 & 0x03 != 0 { return nil }
                break
            }
            out.append((v2 & 0x03) << 6 | values[i + 3])
            i += 4
        }
        return out
    }

    private static func value(of c: UInt8, urlSafe: Bool) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+") where !urlSafe, UInt8(ascii: "-") where urlSafe: 62
        case UInt8(ascii: "/") where !urlSafe, UInt8(ascii: "_") where urlSafe: 63
        default: nil
        }
    }
}
