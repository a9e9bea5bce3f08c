import PlugboardCrypto

/// The manifest's `trust` section: the public keys whose plugin signatures the host
/// accepts, and whether every plugin must carry one (docs/SECURITY.md, "Plugin
/// signatures").
///
/// Any listed key verifies, so a key is rotated by listing the new one beside the old,
/// re-signing, then removing the old. Trust comes from the manifest: whoever can write the
/// manifest can also change this section.
public struct ManifestTrust: Sendable, Hashable {
    /// True when a plugin without a `signature` is refused (`loader.signature_missing`).
    public let requireSignatures: Bool
    /// The keys, in manifest order; names and keys are unique.
    public let keys: [TrustedKey]

    /// No keys, nothing required: what a manifest without `trust` means.
    public static let none = ManifestTrust(requireSignatures: false, keys: [])

    public init(requireSignatures: Bool, keys: [TrustedKey]) {
        self.requireSignatures = requireSignatures
        self.keys = keys
    }

    /// The listed key whose ``TrustedKey/keyID`` is `keyID`, or nil.
    public func key(id keyID: String) -> TrustedKey? {
        keys.first { $0.keyID == keyID }
    }

    /// The keys of `trust.keys` (the manifest's keys section).
    static let keys = ["requireSignatures", "keys"]
    /// The keys of one entry of `trust.keys`.
    static let keyEntryKeys = ["name", "ed25519"]
}

/// A public key the manifest trusts, with the name it gives it.
public struct TrustedKey: Sendable, Hashable, CustomStringConvertible {
    /// The manifest's name for the key, such as `release-2026`.
    public let name: String
    public let publicKey: Ed25519PublicKey
    /// ``Ed25519PublicKey/keyID``: what a signature names its key by.
    public let keyID: String

    public init(name: String, publicKey: Ed25519PublicKey) {
        self.name = name
        self.publicKey = publicKey
        self.keyID = publicKey.keyID
    }

    /// `release-2026 (1a2b3c4d5e6f7a8b)`.
    public var description: String { "\(name) (\(keyID))" }
}
