import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// `plugboard keygen` and `plugboard sign`, and a manifest that trusts what they made, run
/// as the built `plugboard`.
@Suite struct SigningTests {
    static var memoryStorage: String { "\(CommandRunner.productsFolder)/libMemoryStorage.so" }

    static func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    static func openssl() -> String? {
        ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"].first { access($0, X_OK) == 0 }
    }

    @Test func keygen_writesAPrivateKeyOnlyItsOwnerReads_andPrintsTheTrustEntry() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let text = await sandbox.run(["keygen", "--out", "release-2026.key"], cacheDir: false)
        expectRun(text, status: 0, stdout: .contains("key id:      ", "private key: release-2026.key (mode 0600",
                                                     "public key:  release-2026.key.pub\n", #"{"name": "release-2026", "ed25519": ""#),
                  stderr: .empty)
        #expect(Self.mode(sandbox.path("release-2026.key")) == 0o600)
        #expect(Self.mode(sandbox.path("release-2026.key.pub")) == 0o644)
        #expect(String(decoding: try sandbox.read("release-2026.key"), as: UTF8.self).hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        #expect(String(decoding: try sandbox.read("release-2026.key.pub"), as: UTF8.self).hasPrefix("-----BEGIN PUBLIC KEY-----\n"))

        // Never over a key: the files stay as they were.
        let before = try sandbox.read("release-2026.key")
        let again = await sandbox.run(["keygen", "--out", "release-2026.key", "--json"], cacheDir: false)
        expectRun(again, status: 1)
        #expect(try again.json()["error"]?["code"]?.string == "cli.key_exists")
        #expect(try sandbox.read("release-2026.key") == before)

        let json = try await sandbox.run(["keygen", "--out", "keys/next.key", "--name", "release-2027", "--json"], cacheDir: false).json()
        #expect(json["error"]?["code"]?.string == "cli.local_file")
        try sandbox.makeFolder("keys")
        let made = try await sandbox.run(["keygen", "--out", "keys/next.key", "--name", "release-2027", "--json"], cacheDir: false).json()
        #expect(made.keys == ["keyId", "privateKey", "publicKey", "trustKey"])
        #expect(made["keyId"]?.string?.count == 16)
        #expect(made["publicKey"]?.string == "keys/next.key.pub")
        #expect(made["trustKey"]?["name"]?.string == "release-2027")
        #expect(made["trustKey"]?["ed25519"]?.string?.count == 44)
    }

    @Test func sign_printsTheSignatureForTheManifest_andAManifestTrustingTheKeyLoadsIt() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let key = try await sandbox.run(["keygen", "--out", "release.key", "--json"], cacheDir: false).json()
        let text = await sandbox.run(["sign", Self.memoryStorage, "--key", "release.key"], cacheDir: false)
        expectRun(text, status: 0, stdout: .contains("plugin:    MemoryStorage\n", "signature: ed25519:",
                                                     "Add to the plugin's entry \"MemoryStorage\" in the manifest:"), stderr: .empty)
        let signed = try await sandbox.run(["sign", Self.memoryStorage, "--key", "release.key", "--name", "Mem", "--json"], cacheDir: false).json()
        #expect(signed.keys == ["name", "sha256", "signature", "keyId"])
        #expect(signed["name"]?.string == "Mem")
        #expect(signed["keyId"]?.string == key["keyId"]?.string)
        let signature = try #require(signed["signature"]?.string)
        #expect(signature.hasPrefix("ed25519:\(key["keyId"]?.string ?? "-"):"))

        let ed25519 = try #require(key["trustKey"]?["ed25519"]?.string)
        let trust = #"{"requireSignatures": true, "keys": [{"name": "release", "ed25519": "\#(ed25519)"}]}"#
        func manifest(_ entries: [String]) -> String {
            ManifestText.make(entries).replacingOccurrences(of: "\"schemaVersion\": 1,", with: "\"schemaVersion\": 1, \"trust\": \(trust),")
        }
        try sandbox.write("plugins.json", manifest([#"{"name": "Mem", "product": "MemoryStorage", "signature": "\#(signature)"}"#]))
        let plugins = try await sandbox.run(["plugins", "--json"]).json()
        #expect(plugins.elements?.first?["state"]?.string == "active")
        #expect(plugins.elements?.first?["signedBy"]?["key"]?.string == "release")

        // Unsigned, or signed under another name: refused before anything is loaded.
        try sandbox.write("plugins.json", manifest([#"{"name": "Mem", "product": "MemoryStorage"}"#,
                                                    #"{"name": "Other", "product": "MemoryStorage", "signature": "\#(signature)"}"#]))
        let refused = try await sandbox.run(["plugins", "--json"]).json()
        #expect(refused.elements?.map { $0["state"]?.string } == ["rejected", "rejected"])
        #expect(refused.elements?.map { $0["error"]?["code"]?.string } == ["loader.signature_missing", "loader.signature_invalid"])
        let check = await sandbox.run(["check"])
        expectRun(check, status: 1, stdout: .contains("loader.signature_missing"))
    }

    @Test func sign_refusesAKeyOthersCanRead_andAFileThatIsNoKey() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        expectRun(await sandbox.run(["keygen", "--out", "k.key"], cacheDir: false), status: 0)
        chmod(sandbox.path("k.key"), 0o640)
        let open = await sandbox.run(["sign", Self.memoryStorage, "--key", "k.key"], cacheDir: false)
        expectRun(open, status: 1, stdout: .empty, stderr: .contains(
            "plugboard: error: key file \"k.key\" can be read by others\n", "Its mode is 0640", "HINT: Run chmod 600 k.key"))
        #expect(try await sandbox.run(["sign", Self.memoryStorage, "--key", "k.key", "--json"], cacheDir: false).json()["error"]?["code"]?.string
                == "cli.key_insecure")
        // The public key is no private key.
        chmod(sandbox.path("k.key.pub"), 0o600)
        let wrong = try await sandbox.run(["sign", Self.memoryStorage, "--key", "k.key.pub", "--json"], cacheDir: false).json()
        #expect(wrong["error"]?["code"]?.string == "cli.key_invalid")
        #expect(wrong["error"]?["detail"]?.string?.contains("BEGIN PUBLIC KEY") == true)
        // A file that is not a plugin is refused by the loader's checks, unsigned.
        chmod(sandbox.path("k.key"), 0o600)
        _ = try sandbox.write("notes.so", "text")
        let notPlugin = try await sandbox.run(["sign", "notes.so", "--key", "k.key", "--json"], cacheDir: false).json()
        #expect(notPlugin["error"]?["code"]?.string == "loader.not_elf")
        let missing = try await sandbox.run(["sign", "none.so", "--key", "k.key", "--json"], cacheDir: false).json()
        #expect(missing["error"]?["message"]?.string == "no file \"none.so\" to sign")
    }

    @Test(.enabled(if: SigningTests.openssl() != nil, "openssl is not installed (apt-get install openssl)"))
    func anOpenSSLKey_signs_andItsSignatureIsTheOneOpenSSLMakesOfTheDocumentedMessage() async throws {
        let openssl = try #require(Self.openssl())
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let genpkey = await CommandRunner.spawn(openssl, ["genpkey", "-algorithm", "ed25519", "-out", "openssl.key"], in: sandbox.root, environment: [:])
        #expect(genpkey.status == 0, "\(genpkey)")
        chmod(sandbox.path("openssl.key"), 0o600)
        let signed = try await sandbox.run(["sign", Self.memoryStorage, "--key", "openssl.key", "--name", "FileStorage", "--json"],
                                           cacheDir: false).json()
        let sha = try #require(signed["sha256"]?.string)
        // docs/SECURITY.md's recipe: the message's exact bytes, signed by openssl alone.
        _ = try sandbox.write("message", "plugboard plugin signature v1\nFileStorage\n\(sha)\n")
        let theirs = await CommandRunner.spawn(openssl, ["pkeyutl", "-sign", "-inkey", "openssl.key", "-rawin", "-in", "message"],
                                               in: sandbox.root, environment: [:])
        #expect(theirs.status == 0)
        let ours = try #require(signed["signature"]?.string?.split(separator: ":").last.map(String.init))
        #expect(ours == Data(theirs.stdoutBytes).base64EncodedString())
    }
}
