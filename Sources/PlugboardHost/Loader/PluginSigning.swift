import PlugboardAPI
import PlugboardCrypto

/// What the manifest asks of one plugin's signature: its `signature`, and the `trust`
/// section it is checked against. The loader's staging checks it right after the pin
/// (``PluginLoader/stage(path:name:pin:signing:previous:)``), before the file's bytes are
/// parsed as ELF and long before anything is mapped or handed to a preflight child.
public struct PluginSigning: Sendable, Equatable {
    /// `trust.requireSignatures`.
    public let required: Bool
    /// The entry's `signature`, or nil.
    public let signature: PluginSignature?
    /// The manifest's trust section.
    public let trust: ManifestTrust
    /// The store the plugin's file was fetched from, for an entry with a remote `source`:
    /// the file checked is then the cache's copy, and a refusal's hint names the build
    /// that was published instead, which is what its author signs.
    public let source: RemoteSource?

    /// No signature and none required: a manifest without `trust` and `signature`.
    public static let none = PluginSigning(required: false, signature: nil, trust: .none)

    public init(required: Bool, signature: PluginSignature?, trust: ManifestTrust, source: RemoteSource? = nil) {
        self.required = required
        self.signature = signature
        self.trust = trust
        self.source = source
    }

    /// Equal when the outcome of ``verify(name:sha256:path:)`` on the same bytes is the
    /// same: a reload compares what each plugin was staged under, and a key added for
    /// another plugin must not make this one look changed.
    public static func == (a: PluginSigning, b: PluginSigning) -> Bool {
        a.required == b.required && a.signature == b.signature
            && a.signature.flatMap { a.trust.key(id: $0.keyID) } == b.signature.flatMap { b.trust.key(id: $0.keyID) }
    }

    /// The listed key that signed plugin `name`'s bytes (whose SHA-256 is `sha256`), or
    /// nil when the plugin is unsigned and no signature is required. A signature present
    /// is checked whether or not signatures are required: a bad one is refused either way.
    ///
    /// - Throws: `loader.signature_missing`, `loader.signature_untrusted`,
    ///   `loader.signature_invalid`.
    public func verify(name: String, sha256: String, path: String) throws(PlugboardError) -> TrustedKey? {
        guard let signature else {
            guard required else { return nil }
            if let source {
                throw PlugboardError(.signatureMissing, "plugin \"\(name)\" is not signed",
                    detail: "The manifest's trust section requires a signature of every plugin; the build fetched from \(source.shown) (SHA-256 \(sha256)) has no \"signature\" in its entry.",
                    hint: "Sign the build that was published there (the file given to plugboard publish) with plugboard sign BUILD --key KEY --name \(name), and add the \"signature\" it prints to the plugin's entry.")
            }
            throw PlugboardError(.signatureMissing, "plugin \"\(name)\" is not signed",
                detail: "The manifest's trust section requires a signature of every plugin; \"\(path)\" (SHA-256 \(sha256)) has no \"signature\" in its entry.",
                hint: "Sign the file with plugboard sign \(path) --key KEY --name \(name) and add the \"signature\" it prints to the plugin's entry.")
        }
        let listed = trust.keys.isEmpty ? "none" : trust.keys.map(\.description).joined(separator: ", ")
        guard let key = trust.key(id: signature.keyID) else {
            throw PlugboardError(.signatureUntrusted, "plugin \"\(name)\" is signed by a key the manifest does not trust",
                detail: "The signature names key \(signature.keyID); the trust section lists: \(listed).",
                hint: "Add that key's public key to trust.keys (plugboard keygen prints the entry), or re-sign the plugin with a listed key.")
        }
        let valid: Bool
        do {
            valid = try key.publicKey.isValidSignature(signature.bytes, for: PluginSignature.message(name: name, sha256: sha256))
        } catch {
            throw PlugboardError(.signatureInvalid, "could not check the signature of plugin \"\(name)\": \(error.message)",
                                 detail: error.detail, hint: error.hint)
        }
        guard valid else {
            let resign = source.map { "the build published to \($0.shown) was replaced on purpose, sign that build again (plugboard sign BUILD --key KEY --name \(name))" }
                ?? "the file was rebuilt on purpose, sign it again (plugboard sign \(path) --key KEY --name \(name))"
            throw PlugboardError(.signatureInvalid, "plugin \"\(name)\": the signature of \"\(path)\" does not verify",
                detail: "Key \(key) did not sign plugin \"\(name)\" with SHA-256 \(sha256): the file changed after it was signed, it was signed under another name, or the signature was altered.",
                hint: "If \(resign); otherwise find out who changed it.")
        }
        return key
    }
}

extension ManifestTrust {
    /// What this trust asks of `plugin`'s signature, for the loader's staging. Here, beside
    /// the check, so that the manifest's types need nothing of the loader.
    public func signing(for plugin: ManifestPlugin) -> PluginSigning {
        guard case .remote(let source) = plugin.source else {
            return PluginSigning(required: requireSignatures, signature: plugin.signature, trust: self)
        }
        return PluginSigning(required: requireSignatures, signature: plugin.signature, trust: self, source: source)
    }
}
