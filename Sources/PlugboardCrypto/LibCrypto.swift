#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The few EVP functions of OpenSSL's libcrypto that the digests and Ed25519 use, looked up at run
/// time with `dlopen` and `dlsym`, so that building needs no OpenSSL headers.
///
/// The library is loaded once per process, on first use (``shared``), and never closed:
/// the project never calls `dlclose` (docs/ARCHITECTURE.md, fact 2), and libcrypto's own cleanup at
/// exit is enough.
///
/// `@unchecked Sendable`: every field is set once at load time and never changed; the
/// function pointers are C functions that OpenSSL documents as thread-safe for distinct
/// contexts, and the `EVP_MD` pointers are OpenSSL's immutable static descriptors.
struct LibCrypto: @unchecked Sendable {
    typealias MDCtxNew = @convention(c) () -> OpaquePointer?
    typealias MDCtxFree = @convention(c) (OpaquePointer?) -> Void
    typealias DigestInitEx = @convention(c) (OpaquePointer?, OpaquePointer?, OpaquePointer?) -> Int32
    typealias DigestUpdate = @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int) -> Int32
    typealias DigestFinalEx = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt32>?) -> Int32
    typealias MDGetter = @convention(c) () -> OpaquePointer?
    typealias MDFetch = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> OpaquePointer?
    typealias PKeyNewRaw = @convention(c) (Int32, OpaquePointer?, UnsafePointer<UInt8>?, Int) -> OpaquePointer?
    typealias PKeyGetRaw = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?) -> Int32
    typealias PKeyFree = @convention(c) (OpaquePointer?) -> Void
    typealias DigestSignVerifyInit = @convention(c) (OpaquePointer?, UnsafeMutablePointer<OpaquePointer?>?, OpaquePointer?,
                                                     OpaquePointer?, OpaquePointer?) -> Int32
    typealias DigestSign = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<Int>?,
                                           UnsafePointer<UInt8>?, Int) -> Int32
    typealias DigestVerify = @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int) -> Int32
    typealias RandBytes = @convention(c) (UnsafeMutablePointer<UInt8>?, Int32) -> Int32
    typealias ErrClear = @convention(c) () -> Void
    typealias SHA256Init = @convention(c) (UnsafeMutableRawPointer?) -> Int32
    typealias SHA256Update = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?, Int) -> Int32
    typealias SHA256Final = @convention(c) (UnsafeMutablePointer<UInt8>?, UnsafeMutableRawPointer?) -> Int32

    /// The library's name, as given to `dlopen`.
    static let libraryName = "libcrypto.so.3"

    /// The process's one copy, or why it could not be loaded. Swift initializes a static
    /// `let` exactly once, thread-safely, on first access.
    static let shared: Result<LibCrypto, CryptoError> = load(libraryName)

    let mdCtxNew: MDCtxNew
    let mdCtxFree: MDCtxFree
    let digestInitEx: DigestInitEx
    let digestUpdate: DigestUpdate
    let digestFinalEx: DigestFinalEx
    /// Ed25519 (``Ed25519PrivateKey``, ``Ed25519PublicKey``): keys from their raw bytes,
    /// one-shot signing and verifying, and the random seed of a new key.
    let pkeyNewRawPrivate: PKeyNewRaw
    let pkeyNewRawPublic: PKeyNewRaw
    let pkeyGetRawPublic: PKeyGetRaw
    let pkeyFree: PKeyFree
    let digestSignInit: DigestSignVerifyInit
    let digestSign: DigestSign
    let digestVerifyInit: DigestSignVerifyInit
    let digestVerify: DigestVerify
    let randBytes: RandBytes
    /// A refused verification leaves an entry on the thread's OpenSSL error queue; it is
    /// an answer, not an error, so the entry is dropped.
    let errClearError: ErrClear
    /// SHA-256's low-level functions (`SHA256_Init`, `SHA256_Update`, `SHA256_Final`),
    /// deprecated in OpenSSL 3 but exported: they work on a state the caller holds, with
    /// no context to allocate and no provider to dispatch through (``SHA256State``). `nil`
    /// when this build of libcrypto lacks them; the EVP digest is used then.
    let sha256Functions: (initialize: SHA256Init, update: SHA256Update, final: SHA256Final)?
    /// SHA-256 as `EVP_MD_fetch` gives it (else `EVP_sha256()`); `nil` if this build of
    /// OpenSSL lacks it.
    ///
    /// Fetched once: OpenSSL 3 looks a legacy descriptor such as `EVP_sha256()` up in its
    /// provider store, under a lock, on every `EVP_DigestInit_ex`, and a SigV4 check starts
    /// three digests (docs/BENCHMARKS.md, "The S3 API beside the native API", has the
    /// cost). A fetched descriptor is kept for the life of the process, like the library.
    let sha256: OpaquePointer?
    /// MD5, fetched like ``sha256`` (else `EVP_md5()`); `nil` if this build of OpenSSL lacks it.
    let md5: OpaquePointer?
    /// SHA-1, fetched like ``sha256`` (else `EVP_sha1()`); `nil` if this build of OpenSSL lacks it.
    let sha1: OpaquePointer?

    /// The shared library, or the error explaining why it is not available.
    static func get() throws(CryptoError) -> LibCrypto {
        switch shared {
        case .success(let library): return library
        case .failure(let error): throw error
        }
    }

    /// Loads `name` and looks up every function; separate from ``shared`` so tests can
    /// load a library that does not exist.
    static func load(_ name: String) -> Result<LibCrypto, CryptoError> {
        guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "no reason given"
            return .failure(CryptoError(
                "could not load library \"\(name)\"",
                detail: "The dynamic loader reported: \(reason).",
                hint: "Install OpenSSL 3's runtime library: install libssl3 (Debian: apt-get install libssl3)."))
        }
        do throws(CryptoError) {
            func symbol<F>(_ symbolName: String, as type: F.Type) throws(CryptoError) -> F {
                _ = dlerror()
                guard let pointer = dlsym(handle, symbolName) else {
                    throw CryptoError(
                        "could not find function \"\(symbolName)\" in library \"\(name)\"",
                        detail: "The library was loaded but does not export \(symbolName), which OpenSSL 3 provides.",
                        hint: "Install OpenSSL 3's runtime library: install libssl3 (Debian: apt-get install libssl3).")
                }
                return unsafeBitCast(pointer, to: F.self)
            }
            let sha256 = try symbol("EVP_sha256", as: MDGetter.self)
            let md5 = try symbol("EVP_md5", as: MDGetter.self)
            let sha1 = try symbol("EVP_sha1", as: MDGetter.self)
            let fetch = try? symbol("EVP_MD_fetch", as: MDFetch.self)
            // The provider's implementation of `algorithm` (default library context, no
            // property query), or the legacy descriptor when it cannot be fetched.
            func descriptor(_ algorithm: String, legacy: MDGetter) -> OpaquePointer? {
                fetch.flatMap { fetch in algorithm.withCString { fetch(nil, $0, nil) } } ?? legacy()
            }
            return .success(LibCrypto(
                mdCtxNew: try symbol("EVP_MD_CTX_new", as: MDCtxNew.self),
                mdCtxFree: try symbol("EVP_MD_CTX_free", as: MDCtxFree.self),
                digestInitEx: try symbol("EVP_DigestInit_ex", as: DigestInitEx.self),
                digestUpdate: try symbol("EVP_DigestUpdate", as: DigestUpdate.self),
                digestFinalEx: try symbol("EVP_DigestFinal_ex", as: DigestFinalEx.self),
                pkeyNewRawPrivate: try symbol("EVP_PKEY_new_raw_private_key", as: PKeyNewRaw.self),
                pkeyNewRawPublic: try symbol("EVP_PKEY_new_raw_public_key", as: PKeyNewRaw.self),
                pkeyGetRawPublic: try symbol("EVP_PKEY_get_raw_public_key", as: PKeyGetRaw.self),
                pkeyFree: try symbol("EVP_PKEY_free", as: PKeyFree.self),
                digestSignInit: try symbol("EVP_DigestSignInit", as: DigestSignVerifyInit.self),
                digestSign: try symbol("EVP_DigestSign", as: DigestSign.self),
                digestVerifyInit: try symbol("EVP_DigestVerifyInit", as: DigestSignVerifyInit.self),
                digestVerify: try symbol("EVP_DigestVerify", as: DigestVerify.self),
                randBytes: try symbol("RAND_bytes", as: RandBytes.self),
                errClearError: try symbol("ERR_clear_error", as: ErrClear.self),
                sha256Functions: (try? symbol("SHA256_Init", as: SHA256Init.self)).flatMap { initialize in
                    (try? symbol("SHA256_Update", as: SHA256Update.self)).flatMap { update in
                        (try? symbol("SHA256_Final", as: SHA256Final.self)).map { (initialize, update, $0) }
                    }
                },
                sha256: descriptor("SHA256", legacy: sha256),
                md5: descriptor("MD5", legacy: md5),
                sha1: descriptor("SHA1", legacy: sha1)))
        } catch {
            return .failure(error)
        }
    }
}
