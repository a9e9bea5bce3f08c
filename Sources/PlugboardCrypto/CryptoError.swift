/// Why a digest could not be computed: OpenSSL's libcrypto could not be loaded, lacks a
/// function, or refused an operation.
///
/// Worded as PostgreSQL reports errors: a short lower-case ``message`` naming the library
/// or function, a ``detail`` with the facts and a ``hint`` saying what to do.
public struct CryptoError: Error, CustomStringConvertible, Sendable {
    /// The primary message, lower-case and without a final period, such as
    /// `could not load library "libcrypto.so.3"`.
    public let message: String
    /// Facts about the failure, as a complete sentence, or `nil`.
    public let detail: String?
    /// What to do about it, as a complete sentence, or `nil`.
    public let hint: String?

    /// Creates an error from its three texts.
    public init(_ message: String, detail: String? = nil, hint: String? = nil) {
        self.message = message
        self.detail = detail
        self.hint = hint
    }

    /// `message`, then `DETAIL:` and `HINT:` lines when present.
    public var description: String {
        var out = message
        if let detail { out += "\nDETAIL: \(detail)" }
        if let hint { out += "\nHINT: \(hint)" }
        return out
    }
}
