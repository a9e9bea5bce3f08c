import PlugboardBytes
import PlugboardCrypto

/// A plugin's detached signature as a manifest entry's `signature` carries it:
/// `ed25519:<key id>:<base64 of the 64-byte signature>`, over ``message(name:sha256:)``.
///
/// The text names its algorithm and its key, so a host tells an unknown key
/// (`loader.signature_untrusted`) from a wrong signature (`loader.signature_invalid`), and
/// another algorithm could be added beside this one without the two being confused.
public struct PluginSignature: Sendable, Hashable, CustomStringConvertible {
    /// The one algorithm: Ed25519 (RFC 8032), pure.
    public static let algorithm = "ed25519"
    /// What the message starts with: it names what is signed and the format's version, so
    /// a plugin signature can never be taken for another message signed with the same key.
    public static let context = "plugboard plugin signature v1"

    /// The signing key's ``Ed25519PublicKey/keyID``: 16 lower-case hex digits.
    public let keyID: String
    /// The 64 bytes of the signature.
    public let bytes: [UInt8]

    public init(keyID: String, bytes: [UInt8]) {
        self.keyID = keyID
        self.bytes = bytes
    }

    /// Why a text is not a signature.
    public struct FormatError: Error, Sendable {
        public let reason: String
    }

    /// The signature a manifest writes.
    ///
    /// - Throws: ``FormatError`` saying which part is wrong and what it should be.
    public init(parsing text: String) throws(FormatError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw FormatError(reason: "Expected three parts separated by \":\" (ed25519:<key id>:<base64 signature>), found \(parts.count).")
        }
        guard parts[0] == Self.algorithm else {
            throw FormatError(reason: "Expected the algorithm \"\(Self.algorithm)\", found \"\(parts[0])\".")
        }
        let id = parts[1]
        guard id.utf8.count == 16, id.utf8.allSatisfy({ HexDigits.value($0) != nil && !(0x41...0x46).contains($0) }) else {
            throw FormatError(reason: "Expected a key id of 16 lower-case hex digits, found \"\(id.prefix(40))\".")
        }
        guard let bytes = Base64.decode(parts[2]), bytes.count == Ed25519PublicKey.signatureByteCount else {
            throw FormatError(reason: "Expected the base64 of a 64-byte Ed25519 signature (88 characters), found \(parts[2].count) characters that are not.")
        }
        self.init(keyID: String(id), bytes: bytes)
    }

    /// `ed25519:<key id>:<base64 signature>`.
    public var description: String { "\(Self.algorithm):\(keyID):\(Base64.encode(bytes))" }

    /// The exact bytes signed: the context line, the plugin's name, the lower-case hex
    /// SHA-256 of its file, each ended by a line feed (docs/SECURITY.md shows how to sign
    /// them with openssl alone).
    public static func message(name: String, sha256: String) -> [UInt8] {
        Array("\(context)\n\(name)\n\(sha256.lowercased())\n".utf8)
    }

    /// `key`'s signature of plugin `name` whose file's SHA-256 is `sha256`.
    ///
    /// - Throws: ``CryptoError`` when libcrypto cannot be loaded or refuses to sign.
    public static func sign(name: String, sha256: String, with key: Ed25519PrivateKey) throws(CryptoError) -> PluginSignature {
        PluginSignature(keyID: key.publicKey.keyID, bytes: try key.signature(for: message(name: name, sha256: sha256)))
    }
}
