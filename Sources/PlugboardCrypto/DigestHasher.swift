/// What ``SHA256Hasher`` and ``MD5Hasher`` share: streaming input, a consuming
/// `finalize()`, and the conveniences built on them.
public protocol DigestHasher: ~Copyable {
    /// Starts an empty digest.
    init() throws(CryptoError)
    /// Adds the bytes in `bytes`.
    mutating func update(_ bytes: UnsafeRawBufferPointer)
    /// Returns the digest of everything added, and ends the hasher.
    consuming func finalize() throws(CryptoError) -> [UInt8]
}

extension DigestHasher where Self: ~Copyable {
    /// Adds the bytes of `data`, without copying when they are contiguous (an array,
    /// Foundation's `Data`, a slice). Inlinable (as `hash`) so that the caller's type is
    /// specialized rather than reached through a witness table.
    @inlinable
    public mutating func update(_ data: some Sequence<UInt8>) {
        let done: Void? = data.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        if done == nil {
            Array(data).withUnsafeBytes { update($0) }
        }
    }

    /// The digest of `data`.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    @inlinable
    public static func hash(_ data: some Sequence<UInt8>) throws(CryptoError) -> [UInt8] {
        var hasher = try Self()
        hasher.update(data)
        return try hasher.finalize()
    }

    /// The digest of the bytes in `bytes`.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    public static func hash(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) -> [UInt8] {
        var hasher = try Self()
        hasher.update(bytes)
        return try hasher.finalize()
    }
}
