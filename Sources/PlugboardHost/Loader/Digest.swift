import PlugboardAPI
import PlugboardCrypto

/// SHA-256 for pins, cache names and manifest digests (the fleet's), from libcrypto
/// (PlugboardCrypto).
public enum Digest {
    /// The lower-case hex SHA-256 of `bytes`.
    public static func sha256Hex(_ bytes: [UInt8]) throws(PlugboardError) -> String {
        do {
            return Hex.encode(try SHA256Hasher.hash(bytes))
        } catch {
            throw PlugboardError(.cacheFailed, "could not compute SHA-256: \(error.message)",
                                 detail: error.detail, hint: error.hint)
        }
    }
}
