/// An Ed25519 public key (RFC 8032): checks signatures made by its private key.
///
/// ```swift
/// let key = try Ed25519PublicKey(pemRepresentation: text)   // OpenSSL's SPKI PEM
/// let good = try key.isValidSignature(signature, for: message)
/// ```
public struct Ed25519PublicKey: Sendable, Hashable, CustomStringConvertible {
    /// The length of a raw public key in bytes: 32.
    public static let byteCount = 32
    /// The length of a signature in bytes: 64.
    public static let signatureByteCount = 64

    /// The 32 bytes RFC 8032 calls the public key.
    public let rawRepresentation: [UInt8]

    /// A key from its 32 raw bytes.
    ///
    /// - Throws: ``CryptoError`` when `rawRepresentation` is not 32 bytes long.
    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        guard rawRepresentation.count == Self.byteCount else {
            throw CryptoError("not an Ed25519 public key",
                detail: "Expected \(Self.byteCount) bytes, found \(rawRepresentation.count).")
        }
        self.rawRepresentation = rawRepresentation
    }

    /// The key's short name: the first 16 hex digits of the SHA-256 of its raw bytes.
    /// Wherever a key is named (the manifest's signatures, errors, `plugboard keygen`),
    /// this names it, so two keys are told apart without printing either.
    public var keyID: String {
        // SHA-256 fails only when libcrypto is missing, and then no key could have been
        // used to sign or verify either; the raw bytes' own hex still names the key.
        let digest = (try? SHA256Hasher.hash(rawRepresentation)) ?? rawRepresentation
        return String(Hex.encode(digest).prefix(16))
    }

    public var description: String { "Ed25519PublicKey(\(keyID))" }

    /// Whether `signature` is this key's signature of `message`: false for any other
    /// signature, of any length.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or refuses the key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) throws(CryptoError) -> Bool {
        let library = try LibCrypto.get()
        guard signature.count == Self.signatureByteCount else { return false }
        return try Ed25519Operation.withKey(library, rawRepresentation, isPrivate: false) { context throws(CryptoError) -> Bool in
            let status = Ed25519Operation.withBytes(signature) { sig in
                Ed25519Operation.withBytes(message) { msg in
                    library.digestVerify(context, sig, signature.count, msg, message.count)
                }
            }
            if status != 1 { library.errClearError() }
            return status == 1
        }
    }
}

/// An Ed25519 private key (RFC 8032): its 32-byte seed, and the public key derived from it.
///
/// Its description, debug description and mirror name the key by its public key's
/// ``Ed25519PublicKey/keyID`` only, so a key printed or dumped by mistake shows no secret.
public struct Ed25519PrivateKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The length of a seed in bytes: 32.
    public static let byteCount = 32

    /// The 32-byte seed RFC 8032 calls the private key.
    public let rawRepresentation: [UInt8]
    /// The key that checks this key's signatures.
    public let publicKey: Ed25519PublicKey

    /// The key whose seed is `rawRepresentation`.
    ///
    /// - Throws: ``CryptoError`` when the seed is not 32 bytes long or libcrypto cannot
    ///   be loaded.
    public init(rawRepresentation: [UInt8]) throws(CryptoError) {
        guard rawRepresentation.count == Self.byteCount else {
            throw CryptoError("not an Ed25519 private key",
                detail: "Expected a \(Self.byteCount)-byte seed, found \(rawRepresentation.count) bytes.")
        }
        let library = try LibCrypto.get()
        guard let key = rawRepresentation.withUnsafeBufferPointer({
            library.pkeyNewRawPrivate(Ed25519Operation.nid, nil, $0.baseAddress, $0.count)
        }) else {
            library.errClearError()
            throw CryptoError("could not create Ed25519 key", detail: "libcrypto refused the 32-byte seed.",
                hint: "Check that the OpenSSL configuration (OPENSSL_CONF) allows Ed25519.")
        }
        defer { library.pkeyFree(key) }
        var raw = [UInt8](repeating: 0, count: Ed25519PublicKey.byteCount)
        var length = raw.count
        guard raw.withUnsafeMutableBufferPointer({ library.pkeyGetRawPublic(key, $0.baseAddress, &length) }) == 1,
              length == Ed25519PublicKey.byteCount else {
            library.errClearError()
            throw CryptoError("could not derive Ed25519 public key", detail: "libcrypto did not give the key's 32 public bytes.")
        }
        self.rawRepresentation = rawRepresentation
        self.publicKey = try Ed25519PublicKey(rawRepresentation: raw)
    }

    /// A new key from 32 bytes of libcrypto's random generator (`RAND_bytes`).
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or its generator is not seeded.
    public static func generate() throws(CryptoError) -> Ed25519PrivateKey {
        let library = try LibCrypto.get()
        var seed = [UInt8](repeating: 0, count: byteCount)
        guard seed.withUnsafeMutableBufferPointer({ library.randBytes($0.baseAddress, Int32($0.count)) }) == 1 else {
            library.errClearError()
            throw CryptoError("could not generate Ed25519 key", detail: "libcrypto's random generator (RAND_bytes) failed.",
                hint: "Check that the system's random source (getrandom, /dev/urandom) works.")
        }
        return try Ed25519PrivateKey(rawRepresentation: seed)
    }

    /// The 64-byte signature of `message` (pure Ed25519: the message itself, not a digest
    /// of it, as RFC 8032 section 5.1.6 signs).
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or refuses to sign.
    public func signature(for message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let library = try LibCrypto.get()
        return try Ed25519Operation.withKey(library, rawRepresentation, isPrivate: true) { context throws(CryptoError) -> [UInt8] in
            var out = [UInt8](repeating: 0, count: Ed25519PublicKey.signatureByteCount)
            var length = out.count
            let status = out.withUnsafeMutableBufferPointer { buffer in
                Ed25519Operation.withBytes(message) { library.digestSign(context, buffer.baseAddress, &length, $0, message.count) }
            }
            guard status == 1, length == Ed25519PublicKey.signatureByteCount else {
                library.errClearError()
                throw CryptoError("could not sign with Ed25519", detail: "libcrypto refused to sign \(message.count) bytes.")
            }
            return out
        }
    }

    public var description: String { "Ed25519PrivateKey(\(publicKey.keyID))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["keyID": publicKey.keyID]) }
}

/// The EVP steps signing and verifying share: a key object and a digest context set up
/// for it, freed after the one operation.
enum Ed25519Operation {
    /// `EVP_PKEY_ED25519`, which is `NID_ED25519`.
    static let nid: Int32 = 1087

    static func withKey<T>(_ library: LibCrypto, _ raw: [UInt8], isPrivate: Bool,
                           _ body: (OpaquePointer) throws(CryptoError) -> T) throws(CryptoError) -> T {
        let make = isPrivate ? library.pkeyNewRawPrivate : library.pkeyNewRawPublic
        guard let key = raw.withUnsafeBufferPointer({ make(nid, nil, $0.baseAddress, $0.count) }) else {
            library.errClearError()
            throw CryptoError("could not create Ed25519 key", detail: "libcrypto refused the key's 32 bytes.",
                hint: "Check that the OpenSSL configuration (OPENSSL_CONF) allows Ed25519.")
        }
        defer { library.pkeyFree(key) }
        guard let context = library.mdCtxNew() else {
            throw CryptoError("could not start Ed25519 operation", detail: "libcrypto could not allocate a digest context.",
                hint: "The process is probably out of memory; retry when memory is available.")
        }
        defer { library.mdCtxFree(context) }
        // Ed25519 hashes inside the algorithm: the digest is NULL (RFC 8032's pure mode).
        let initialize = isPrivate ? library.digestSignInit : library.digestVerifyInit
        guard initialize(context, nil, nil, nil, key) == 1 else {
            library.errClearError()
            throw CryptoError("could not start Ed25519 operation", detail: "libcrypto refused to set up Ed25519 with the key.",
                hint: "Check that the OpenSSL configuration (OPENSSL_CONF) allows Ed25519.")
        }
        return try body(context)
    }

    /// `bytes`' base address, never nil: an empty message is signed too, and libcrypto
    /// takes a NULL buffer as a missing argument.
    static func withBytes<T>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>) -> T) -> T {
        bytes.withUnsafeBufferPointer { buffer in
            if let base = buffer.baseAddress { return body(base) }
            let zero: UInt8 = 0
            return withUnsafePointer(to: zero) { body($0) }
        }
    }
}
