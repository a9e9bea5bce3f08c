/// Computes a SHA-1 digest (FIPS 180-4) with OpenSSL's libcrypto, all at once or in
/// pieces.
///
/// SHA-1 is broken for security: use it for checksums that a protocol names (S3's
/// `x-amz-checksum-sha1`), never to authenticate or to tell apart content an attacker
/// chooses.
///
/// ```swift
/// let digest = try SHA1Hasher.hash(Array("abc".utf8))   // 20 bytes
/// print(Hex.encode(digest))                          // a9993e36...
/// ```
///
/// A hasher is noncopyable: it owns a libcrypto context, which it frees when it ends, and
/// `finalize()` consumes it, so it cannot be used after the digest is taken.
public struct SHA1Hasher: DigestHasher, ~Copyable, Sendable {
    /// The length of a SHA-1 digest in bytes: 20.
    public static let byteCount = 20

    private var digest: EVPDigest

    /// Starts an empty digest.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or refuses SHA-1.
    public init() throws(CryptoError) {
        digest = try EVPDigest(.sha1)
    }

    /// Adds the bytes in `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        digest.update(bytes)
    }

    /// Returns the 20-byte digest of everything added, and ends the hasher.
    ///
    /// - Throws: ``CryptoError`` when libcrypto failed while hashing (it does not for
    ///   valid input unless memory runs out).
    public consuming func finalize() throws(CryptoError) -> [UInt8] {
        try digest.finalize()
    }
}
