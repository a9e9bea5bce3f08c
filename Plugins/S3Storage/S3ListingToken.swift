import Foundation
import PlugboardAPI
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
        // Compared in constant time: the token is caller input.
        var difference: UInt8 = 0
        for (a, b) in zip(expected, bytes.prefix(Self.macByteCount)) { difference |= a ^ b }
        return difference == 0 ? s3Token : nil
    }

    private func mac(_ s3Token: String, prefix: String) throws(CryptoError) -> [UInt8] {
        let message = Array(bucket.utf8) + [0] + Array(prefix.utf8) + [0] + Array(s3Token.utf8)
        return Array(try HMACSHA256.authenticationCode(for: message, key: key).prefix(Self.macByteCount))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// Strict: only the URL-safe alphabet, no padding.
    static func decodeBase64URL(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.allSatisfy({ byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }) else { return nil }
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        standard += String(repeating: "=", count: (4 - standard.utf8.count % 4) % 4)
        return Data(base64Encoded: standard).map { Array($0) }
    }
}
