import PlugboardBytes
/// Lowercase hexadecimal text for bytes, as digests are usually shown (`ba7816bf...`).
public enum Hex {
    /// Two lowercase hex digits per byte: `[0xBA, 0x78]` gives `"ba78"`.
    ///
    /// Inlinable so that each caller's sequence type is specialized: the generic walk
    /// otherwise calls through a witness table per byte, the largest cost of a SigV4
    /// check's string to sign.
    @inlinable
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        HexDigits.appendLower(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
