import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

/// Wraps S3's continuation tokens so that the plugin can tell its own from any other text:
/// `base64url(mac || s3Token)`, where `mac` is the first 16 bytes of
/// HMAC-SHA256(key, bucket NUL prefix NUL s3Token) and the key is derived from the secret
/// access key. A token from another bucket, another prefix, other credentials, or no
/// token at all, is refused before S3 is asked.
struct S3ListingToken: Sendable {
    private static let macByteCount = 16
    private let key: [UInt8]
    private let bucket: String

    init(secretAccessKey: String, bucket: String) throws(CryptoError) {
        key = try HMACSHA256.authenticationCode(for: Array("plugboard S3Storage listing token v1".utf8),
                                                key: Array(secretAccessKey.utf8))
        self.bucket = bucket
    }

    /// The token handed to callers for S3's `token` under `prefix`.
    func wrap(_ s3Token: String, prefix: String) throws(CryptoError) -> String {
        Self.base64URL(try mac(s3Token, prefix: prefix) + Array(s3Token.utf8))
    }

    /// S3's token inside `token`, or nil when this plugin did not issue `token` for
    /// this bucket and prefix.
    func unwrap(_ token: String, prefix: String) throws(CryptoError) -> String? {
        guard let bytes = Self.decodeBase64URL(token), bytes.count > Self.macByteCount else { return nil }
        guard let s3Token = String(validating: bytes[Self.macByteCount...], as: UTF8.self) else { return nil }
        let expected = try mac(s3Token, prefix: prefix)
        // The token is caller input.
        return ConstantTime.equal(expected, bytes.prefix(Self.macByteCount)) ? s3Token : nil
    }

    private func mac(_ s3Token: String, prefix: String) throws(CryptoError) -> [UInt8] {
        let message = Array(bucket.utf8) + [0] + Array(prefix.utf8) + [0] + Array(s3Token.utf8)
        return Array(try HMACSHA256.authenticationCode(for: message, key: key).prefix(Self.macByteCount))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Base64.encodeURL(bytes)
    }

    /// Strict: only the URL-safe alphabet, no padding, and never empty.
    static func decodeBase64URL(_ text: String) -> [UInt8]? {
        text.isEmpty ? nil : Base64.decodeURL(text)
    }
}
