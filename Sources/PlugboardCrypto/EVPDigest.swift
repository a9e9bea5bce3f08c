/// One running digest computation in libcrypto (an `EVP_MD_CTX`), owned by exactly one
/// value and freed when that value ends.
///
/// `@unchecked Sendable`: the context is reachable only through this noncopyable value, so
/// it is used by one task at a time; OpenSSL contexts are not tied to a thread.
struct EVPDigest: ~Copyable, @unchecked Sendable {
    /// The algorithms this module computes with an EVP digest.
    enum Algorithm {
        case sha256, md5, sha1

        /// The name used in messages.
        var name: String {
            switch self {
            case .sha256: "SHA-256"
            case .md5: "MD5"
            case .sha1: "SHA-1"
            }
        }

        func descriptor(in library: LibCrypto) -> OpaquePointer? {
            switch self {
            case .sha256: library.sha256
            case .md5: library.md5
            case .sha1: library.sha1
            }
        }
    }

    /// `EVP_MAX_MD_SIZE`: no digest is longer.
    private static let maxDigestByteCount = 64

    private let library: LibCrypto
    private let context: OpaquePointer
    private let algorithm: Algorithm
    private var failure: CryptoError?

    init(_ algorithm: Algorithm) throws(CryptoError) {
        let library = try LibCrypto.get()
        guard let descriptor = algorithm.descriptor(in: library) else {
            throw CryptoError(
                "\(algorithm.name) is not available in library \"\(LibCrypto.libraryName)\"",
                detail: "The library returned no digest descriptor for \(algorithm.name); it may be built without it or restricted to FIPS algorithms.",
                hint: "Use a libcrypto that provides \(algorithm.name) (Debian: apt-get install libssl3).")
        }
        guard let context = library.mdCtxNew() else {
            throw CryptoError(
                "could not start \(algorithm.name) digest",
                detail: "libcrypto could not allocate a digest context.",
                hint: "The process is probably out of memory; retry when memory is available.")
        }
        guard library.digestInitEx(context, descriptor, nil) == 1 else {
            library.mdCtxFree(context)
            throw CryptoError(
                "could not start \(algorithm.name) digest",
                detail: "libcrypto refused to initialize a \(algorithm.name) digest context.",
                hint: "Check that the OpenSSL configuration (OPENSSL_CONF) allows \(algorithm.name).")
        }
        self.library = library
        self.context = context
        self.algorithm = algorithm
        self.failure = nil
    }

    deinit {
        library.mdCtxFree(context)
    }

    /// Adds bytes to the digest. A failure is kept and reported by ``finalize()``.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard failure == nil, let base = bytes.baseAddress, bytes.count > 0 else { return }
        if library.digestUpdate(context, base, bytes.count) != 1 {
            failure = CryptoError(
                "could not compute \(algorithm.name) digest",
                detail: "libcrypto refused to add \(bytes.count) bytes to the digest.")
        }
    }

    /// The digest of every byte added.
    consuming func finalize() throws(CryptoError) -> [UInt8] {
        if let failure { throw failure }
        var out = [UInt8](repeating: 0, count: Self.maxDigestByteCount)
        var length: UInt32 = 0
        let status = out.withUnsafeMutableBufferPointer { buffer in
            library.digestFinalEx(context, buffer.baseAddress, &length)
        }
        guard status == 1, Int(length) <= out.count else {
            throw CryptoError(
                "could not compute \(algorithm.name) digest",
                detail: "libcrypto refused to finish the digest.")
        }
        out.removeSubrange(Int(length)...)
        return out
    }
}
