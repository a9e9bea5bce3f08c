/// Text from bytes that are all ASCII, made without a generic validation: every request
/// turns its key's bytes into a string (the server from the path, FileStorage from a
/// stored header), and `String(validating:as:)` is not specialized for them, costing
/// generic metadata lookups each time. ASCII is valid UTF-8 as it is, so the caller's
/// other keys (non-ASCII, or invalid) take the checked way.
public enum ASCIIText {
    /// The string the bytes spell when every one is below 0x80, else nil.
    public static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        var high: UInt8 = 0
        for b in bytes { high |= b }
        guard high < 0x80 else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
