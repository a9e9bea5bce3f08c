/// A SHA-256 computation through libcrypto's low-level functions, on a state held in
/// this value: nothing is allocated, nothing is dispatched through a provider, and the
/// state is a plain value, so a prefix hashed once can be copied and continued
/// (``HMACSHA256Key`` keeps a key's padded blocks so). A SigV4 check makes three digests
/// of a few blocks each, where setting up EVP contexts cost as much as the hashing.
///
/// `init` is nil when the library, or these functions, are not there: callers then use
/// ``SHA256Hasher``.
struct SHA256State: Sendable {
    /// `SHA256_CTX` is 112 bytes (eight state words, two counters, a 64-byte block and two
    /// counts); 128 leaves room, 8-byte aligned as it needs at most.
    private var context: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                          UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    private static let functions = (try? LibCrypto.get())?.sha256Functions

    init?() {
        guard let functions = Self.functions else { return nil }
        guard withUnsafeMutableBytes(of: &context, { functions.initialize($0.baseAddress) }) == 1 else { return nil }
    }

    /// Adds the bytes in `bytes` (`SHA256_Update` cannot fail).
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let functions = Self.functions, let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = withUnsafeMutableBytes(of: &context) { functions.update($0.baseAddress, base, bytes.count) }
    }

    mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest of everything added; the state is spent.
    mutating func finalize() throws(CryptoError) -> [UInt8] {
        guard let functions = Self.functions else { throw Self.failure }
        var status: Int32 = 0
        let digest = [UInt8](unsafeUninitializedCapacity: SHA256Hasher.byteCount) { buffer, count in
            status = withUnsafeMutableBytes(of: &context) { functions.final(buffer.baseAddress, $0.baseAddress) }
            count = SHA256Hasher.byteCount
        }
        guard status == 1 else { throw Self.failure }
        return digest
    }

    private static let failure = CryptoError("could not compute SHA-256 digest", detail: "libcrypto refused to finish the digest.")
}

extension SHA256Hasher {
    /// The digest of `bytes`, on a ``SHA256State`` when libcrypto has the low-level
    /// functions (no context allocated), else through an EVP context.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    public static func hash(_ bytes: UnsafeRawBufferPointer) throws(CryptoError) -> [UInt8] {
        guard var state = SHA256State() else {
            var hasher = try SHA256Hasher()
            hasher.update(bytes)
            return try hasher.finalize()
        }
        state.update(bytes)
        return try state.finalize()
    }

    /// The digest of `data`, as ``hash(_:)-(UnsafeRawBufferPointer)`` computes it.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or fails.
    public static func hash(_ data: some Sequence<UInt8>) throws(CryptoError) -> [UInt8] {
        let digest = data.withContiguousStorageIfAvailable { buffer in
            Result { () throws(CryptoError) in try hash(UnsafeRawBufferPointer(buffer)) }
        } ?? Array(data).withUnsafeBytes { buffer in
            Result { () throws(CryptoError) in try hash(buffer) }
        }
        return try digest.get()
    }
}
