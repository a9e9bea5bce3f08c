/// Computes an HMAC-SHA1 authentication code (RFC 2104, RFC 2202) on top of
/// ``SHA1Hasher``, as ``HMACSHA256`` does on SHA-256.
///
/// ```swift
/// let mac = try HMACSHA1.authenticationCode(for: Array(stringToSign.utf8), key: Array(secret.utf8))
/// let signature = Base64.encode(mac)   // S3 Signature Version 2
/// ```
///
/// - Important: only for protocols that name it (S3's Signature Version 2, opt in).
///   HMAC-SHA1 is not broken the way SHA-1 collisions are, but it is the weaker of the two
///   and a protocol that uses it signs less: prefer ``HMACSHA256`` for anything new.
public enum HMACSHA1 {
    /// The length of an HMAC-SHA1 code in bytes: 20.
    public static let byteCount = 20

    /// SHA-1's block size in bytes, the same as SHA-256's.
    private static let blockByteCount = 64

    /// The HMAC-SHA1 code of `message` under `key`, of any length.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or refuses SHA-1.
    public static func authenticationCode(for message: some Sequence<UInt8>, key: some Sequence<UInt8>) throws(CryptoError) -> [UInt8] {
        let key = Array(key)
        // RFC 2104: a key longer than a block is hashed first, then zero-padded to a block.
        var block = key.count > blockByteCount ? try SHA1Hasher.hash(key) : key
        block.append(contentsOf: repeatElement(0, count: blockByteCount - block.count))
        var inner = try SHA1Hasher()
        inner.update(block.map { $0 ^ 0x36 })
        inner.update(message)
        let innerDigest = try inner.finalize()
        var outer = try SHA1Hasher()
        outer.update(block.map { $0 ^ 0x5C })
        outer.update(innerDigest)
        return try outer.finalize()
    }
}
