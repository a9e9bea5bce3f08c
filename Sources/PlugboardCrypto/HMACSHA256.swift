/// Computes an HMAC-SHA256 authentication code (RFC 2104, RFC 4231), all at once or in
/// pieces, on top of ``SHA256Hasher``.
///
/// ```swift
/// let mac = try HMACSHA256.authenticationCode(for: Array("message".utf8), key: Array("secret".utf8))
///
/// var hmac = try HMACSHA256(key: signingKey)
/// hmac.update(Array(stringToSign.utf8))
/// let signature = Hex.encode(try hmac.finalize())
/// ```
///
/// Built as RFC 2104 defines it, `H((K ^ opad) || H((K ^ ipad) || message))`, from two
/// SHA-256 digests, so it needs nothing of libcrypto beyond the digest functions.
public struct HMACSHA256: ~Copyable, Sendable {
    /// The length of an HMAC-SHA256 code in bytes: 32.
    public static let byteCount = 32

    /// SHA-256's block size in bytes; keys are padded (or first hashed) to it.
    private static let blockByteCount = 64

    private var inner: SHA256Hasher
    private let outerKeyPad: [UInt8]

    /// Starts an authentication code with `key`, of any length.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    public init(key: some Sequence<UInt8>) throws(CryptoError) {
        let keyBytes = Array(key)
        var block = keyBytes.count > Self.blockByteCount ? try SHA256Hasher.hash(keyBytes) : keyBytes
        block.append(contentsOf: repeatElement(0, count: Self.blockByteCount - block.count))
        var hasher = try SHA256Hasher()
        hasher.update(block.map { $0 ^ 0x36 })
        inner = hasher
        outerKeyPad = block.map { $0 ^ 0x5C }
    }

    /// Adds the bytes in `bytes` to the message.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        inner.update(bytes)
    }

    /// Adds the bytes of `data` to the message.
    public mutating func update(_ data: some Sequence<UInt8>) {
        inner.update(data)
    }

    /// Returns the 32-byte code of the message, and ends the computation.
    ///
    /// - Throws: ``CryptoError`` when libcrypto fails.
    public consuming func finalize() throws(CryptoError) -> [UInt8] {
        let innerDigest = try inner.finalize()
        var outer = try SHA256Hasher()
        outer.update(outerKeyPad)
        outer.update(innerDigest)
        return try outer.finalize()
    }

    /// The HMAC-SHA256 code of `message` under `key`.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    public static func authenticationCode(for message: some Sequence<UInt8>, key: some Sequence<UInt8>) throws(CryptoError) -> [UInt8] {
        var hmac = try HMACSHA256(key: key)
        hmac.update(message)
        return try hmac.finalize()
    }
}
