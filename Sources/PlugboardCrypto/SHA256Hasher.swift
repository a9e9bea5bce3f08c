/// Computes a SHA-256 digest (FIPS 180-4) with OpenSSL's libcrypto, all at once or in
/// pieces.
///
/// ```swift
/// let digest = try SHA256Hasher.hash(Array("abc".utf8))   // 32 bytes
/// print(Hex.encode(digest))                            // ba7816bf...
///
/// var hasher = try SHA256Hasher()
/// for chunk in chunks { hasher.update(chunk) }
/// let same = try hasher.finalize()
/// ```
///
/// A hasher is noncopyable: it owns a libcrypto context, which it frees when it ends, and
/// `finalize()` consumes it, so it cannot be used after the digest is taken.
public struct SHA256Hasher: DigestHasher, ~Copyable, Sendable {
    /// The length of a SHA-256 digest in bytes: 32.
    public static let byteCount = 32

    private var digest: EVPDigest

    /// Starts an empty digest.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or refuses SHA-256.
    public init() throws(CryptoError) {
        digest = try EVPDigest(.sha256)
    }

    /// Adds the bytes in `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        digest.update(bytes)
    }

    /// Returns the 32-byte digest of everything added, and ends the hasher.
    ///
    /// - Throws: ``CryptoError`` when libcrypto failed while hashing (it does not for
    ///   valid input unless memory runs out).
    public consuming func finalize() throws(CryptoError) -> [UInt8] {
        try digest.finalize()
    }
}
