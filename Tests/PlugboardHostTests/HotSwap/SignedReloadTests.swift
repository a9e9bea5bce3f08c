#if canImport(Glibc)
import Foundation
import Glibc
#endif
import PlugboardAPI
import PlugboardCrypto
@testable import PlugboardHost
import Testing

/// A reload under the manifest's trust section: the same staging refusals as at start,
/// refused by name while the running generation keeps serving.
@Suite("Signatures on reload", .serialized)
struct SignedReloadTests {
    static func write(_ folder: HotSwapFolder, trust: String, signature: String?) throws {
        let signed = signature.map { #", "signature": "\#($0)""# } ?? ""
        let text = #"{"schemaVersion": 1, "environment": "testing", "hotSwap": {"enabled": true, "debounceMilliseconds": 0, "preflightTimeoutSeconds": 5}, "trust": \#(trust), "plugins": [\#(HotSwapFolder.store("MemoryStorage", extra: signed))]}"#
        try LoaderFixtures.write(Array(text.utf8), to: folder.manifest + ".new")
        rename(folder.manifest + ".new", folder.manifest)
    }

    static func trust(required: Bool, _ keys: [(String, Ed25519PrivateKey)]) -> String {
        let listed = keys.map { #"{"name": "\#($0.0)", "ed25519": "\#(Base64Fixture.encode($0.1.publicKey.rawRepresentation))"}"# }
        return #"{"requireSignatures": \#(required), "keys": [\#(listed.joined(separator: ", "))]}"#
    }

    @Test func anUnsignedPluginUnderRequireSignatures_isRefused_andTheRunningGenerationKeepsServing() async throws {
        let folder = HotSwapFolder()
        let key = try Ed25519PrivateKey.generate()
        try Self.write(folder, trust: "{}", signature: nil)
        let host = try await PluginHost.start(folder.configuration())
        defer { Task { await host.shutdown() } }
        let before = host.container.generation
        #expect(host.records.first?.state == .active && host.records.first?.signedBy == nil)

        // Signatures now required, the running plugin unsigned: its bytes did not change,
        // but it is staged and checked again under the new trust.
        try Self.write(folder, trust: Self.trust(required: true, [("release-2026", key)]), signature: nil)
        let refused = await host.reload(trigger: "test")
        #expect(refused.result == .refused)
        #expect(refused.error?.code == .signatureMissing, "\(refused.error.map { "\($0)" } ?? "")")
        #expect(host.container.generation == before)
        let storage: any ObjectStorage = try host.container.resolve()
        _ = try await storage.put("still", data: [1], contentType: nil, metadata: [:])

        // Signed by the listed key: applied, and the record says by whom.
        let sha = try Digest.sha256Hex(try PluginFile.readAll(LoaderFixtures.product("MemoryStorage"), plugin: "Store"))
        let signature = try PluginSignature.sign(name: "Store", sha256: sha, with: key)
        try Self.write(folder, trust: Self.trust(required: true, [("release-2026", key)]), signature: signature.description)
        let applied = await host.reload(trigger: "test")
        #expect(applied.result == .applied, "\(applied.error.map { "\($0)" } ?? "")")
        #expect(host.records.first?.signedBy?.name == "release-2026")

        // The key rotated away without re-signing: refused as untrusted, nothing changes.
        let next = try Ed25519PrivateKey.generate()
        let generation = host.container.generation
        try Self.write(folder, trust: Self.trust(required: true, [("release-2027", next)]), signature: signature.description)
        let untrusted = await host.reload(trigger: "test")
        #expect(untrusted.error?.code == .signatureUntrusted)
        #expect(host.container.generation == generation && host.records.first?.signedBy?.name == "release-2026")
    }
}

extension Base64Fixture {
    /// Foundation's base64, so that the manifest's reader (PlugboardBytes) is not checked
    /// against itself.
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}
