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
        let pads = try Self.pads(Array(key))
        var hasher = try SHA256Hasher()
        hasher.update(pads.inner)
        inner = hasher
        outerKeyPad = pads.outer
    }

    /// RFC 2104's padded key blocks: the key (hashed first when longer than a block)
    /// padded with zeros to a block, XORed with ipad (0x36) and with opad (0x5C).
    static func pads(_ key: [UInt8]) throws(CryptoError) -> (inner: [UInt8], outer: [UInt8]) {
        var block = key.count > blockByteCount ? try SHA256Hasher.hash(key) : key
        block.append(contentsOf: repeatElement(0, count: blockByteCount - block.count))
        return (block.map { $0 ^ 0x36 }, block.map { $0 ^ 0x5C })
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

/// An HMAC-SHA256 key made ready once for many codes: the SHA-256 states after its two
/// padded blocks (``SHA256State``), so each code hashes only the message and the inner
/// digest, with nothing allocated but the code. A SigV4 verifier keeps one per signing
/// key for the day; where libcrypto lacks the low-level functions, or cannot be loaded,
/// each code is an ``HMACSHA256`` of the key's bytes, with its errors.
public struct HMACSHA256Key: Sendable {
    /// The key, as given.
    public let bytes: [UInt8]
    private let padded: (inner: SHA256State, outer: SHA256State)?

    public init(_ key: [UInt8]) {
        bytes = key
        guard var inner = SHA256State(), var outer = SHA256State(),
              let pads = try? HMACSHA256.pads(key) else {
            padded = nil
            return
        }
        inner.update(pads.inner)
        outer.update(pads.outer)
        padded = (inner, outer)
    }

    /// The HMAC-SHA256 code of `message` under this key.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    public func authenticationCode(for message: UnsafeRawBufferPointer) throws(CryptoError) -> [UInt8] {
        guard let padded else { return try HMACSHA256.authenticationCode(for: message, key: bytes) }
        var (inner, outer) = padded
        inner.update(message)
        outer.update(try inner.finalize())
        return try outer.finalize()
    }

    /// The HMAC-SHA256 code of `message` under this key.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    public func authenticationCode(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        try message.withUnsafeBytes { buffer in
            Result { () throws(CryptoError) in try authenticationCode(for: buffer) }
        }.get()
    }
}
