/// Computes an MD5 digest (RFC 1321) with OpenSSL's libcrypto, all at once or in
/// pieces.
///
/// MD5 is broken for security: use it for checksums such as S3 ETags, never to
/// authenticate or to tell apart content an attacker chooses.
///
/// ```swift
/// let digest = try MD5Hasher.hash(Array("abc".utf8))   // 16 bytes
/// print(Hex.encode(digest))                         // 900150983cd24fb0...
///
/// var hasher = try MD5Hasher()
/// for chunk in chunks { hasher.update(chunk) }
/// let same = try hasher.finalize()
/// ```
///
/// A hasher is noncopyable: it owns a libcrypto context, which it frees when it ends, and
/// `finalize()` consumes it, so it cannot be used after the digest is taken.
public struct MD5Hasher: DigestHasher, ~Copyable, Sendable {
    /// The length of an MD5 digest in bytes: 16.
    public static let byteCount = 16

    private var digest: EVPDigest

    /// Starts an empty digest.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or refuses MD5.
    public init() throws(CryptoError) {
        digest = try EVPDigest(.md5)
    }

    /// Adds the bytes in `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        digest.update(bytes)
    }

    /// Returns the 16-byte digest of everything added, and ends the hasher.
    ///
    /// - Throws: ``CryptoError`` when libcrypto failed while hashing (it does not for
    ///   valid input unless memory runs out).
    public consuming func finalize() throws(CryptoError) -> [UInt8] {
        try digest.finalize()
    }
}
