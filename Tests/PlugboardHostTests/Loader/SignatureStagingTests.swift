#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardCrypto
@testable import PlugboardHost
import PlugboardJSON
import Testing

/// Signatures checked in staging, on the real plugins the package builds: a signed plugin
/// loads and its record names the key; an unsigned, tampered, misnamed or untrusted one is
/// refused with its code before anything is parsed, copied or mapped.
@Suite struct SignatureStagingTests {
    struct Fixture {
        let folder: String
        let loader: PluginLoader
        let file: String
        let sha256: String
        let release: Ed25519PrivateKey
        let next: Ed25519PrivateKey

        init() throws {
            folder = LoaderFixtures.temporaryFolder("signatures")
            loader = try PluginLoader(container: Container(environment: .testing), configuration: .init(cacheDirectory: "\(folder)/cache"))
            file = try LoaderFixtures.copy(LoaderFixtures.product("MemoryStorage"), to: folder)
            sha256 = try Digest.sha256Hex(try PluginFile.readAll(file, plugin: "Store"))
            release = try Ed25519PrivateKey.generate()
            next = try Ed25519PrivateKey.generate()
        }

        func trust(required: Bool, _ keys: [(String, Ed25519PrivateKey)]) -> ManifestTrust {
            ManifestTrust(requireSignatures: required, keys: keys.map { TrustedKey(name: $0.0, publicKey: $0.1.publicKey) })
        }

        func signing(_ signature: PluginSignature?, _ trust: ManifestTrust) -> PluginSigning {
            PluginSigning(required: trust.requireSignatures, signature: signature, trust: trust)
        }

        /// Whether the cache holds a copy of bytes with this digest: a refused staging
        /// writes none, so nothing of it could be mapped.
        func cached(_ sha: String?) -> Bool {
            sha.map { access("\(folder)/cache/\($0).so", F_OK) == 0 } ?? false
        }
    }

    @Test func aSignedPlugin_loads_andItsRecordNamesTheKey() async throws {
        let f = try Fixture()
        let trust = f.trust(required: true, [("release-2026", f.release)])
        let signature = try PluginSignature.sign(name: "Store", sha256: f.sha256, with: f.release)
        let staged = try f.loader.stage(path: f.file, name: "Store", pin: f.sha256, signing: f.signing(signature, trust)).result.get()
        #expect(staged.signer?.name == "release-2026" && staged.signer?.keyID == f.release.publicKey.keyID)
        let record = await f.loader.load(staged, config: PluginConfig(plugin: "Store"), rank: 0, secrets: .none)
        #expect(record.state == .active, "\(record.error.map { "\($0)" } ?? "")")
        #expect(record.signedBy?.name == "release-2026")
        let report = try JSONParser.parse(Array(Reports.plugin(record).render().utf8), source: "report")
        #expect(report["signedBy"]?["key"]?.stringValue == "release-2026")
        #expect(report["signedBy"]?["keyId"]?.stringValue == f.release.publicKey.keyID)
    }

    @Test func anUnsignedPlugin_underRequireSignatures_isRefusedAsMissing_andNeverCopied() throws {
        let f = try Fixture()
        let staging = f.loader.stage(path: f.file, name: "Store", pin: nil, signing: f.signing(nil, f.trust(required: true, [("k", f.release)])))
        #expect(staging.error?.code == .signatureMissing)
        #expect(staging.error?.message == "plugin \"Store\" is not signed")
        #expect(staging.error?.hint?.contains("plugboard sign") == true)
        #expect(!f.cached(staging.sha256))
        let record = f.loader.refused("Store", pin: nil, staging)
        #expect(record.state == .rejected && record.signedBy == nil)
        // Without the requirement an unsigned plugin passes, signed by nobody.
        let free = try f.loader.stage(path: f.file, name: "Store", pin: nil, signing: f.signing(nil, f.trust(required: false, [("k", f.release)])))
            .result.get()
        #expect(free.signer == nil)
    }

    /// A remote source's file is checked as its copy in the cache: the hint says to sign
    /// the build that was published, not that copy (issue 33).
    @Test func anUnsignedRemoteSource_isRefused_withAHintThatNamesTheBuild_notTheCacheCopy() throws {
        let f = try Fixture()
        let manifest = try ManifestTestSupport.manifest(#"""
            {"schemaVersion": 1, "plugins": [{"name": "Store", "source": "s3://plugins/builds/Store/\#(f.sha256).so", "sha256": "\#(f.sha256)"}]}
            """#)
        let signing = f.trust(required: true, [("k", f.release)]).signing(for: manifest.plugins[0])
        let staging = f.loader.stage(path: f.file, name: "Store", pin: nil, signing: signing)
        let error = try #require(staging.error)
        #expect(error.code == .signatureMissing)
        #expect(error.detail?.contains("s3://plugins/builds/Store/\(f.sha256).so") == true, "\(error)")
        #expect(error.hint?.contains("published") == true && error.hint?.contains("plugboard sign BUILD") == true, "\(error)")
        #expect(error.hint?.contains(f.file) == false, "\(error)")
        // Signed for another name: the hint to sign again names the build too.
        let other = try PluginSignature.sign(name: "Other", sha256: f.sha256, with: f.release)
        let resigned = try #require(f.loader.stage(path: f.file, name: "Store", pin: nil,
                                                   signing: PluginSigning(required: true, signature: other, trust: signing.trust,
                                                                          source: signing.source)).error)
        #expect(resigned.code == .signatureInvalid)
        #expect(resigned.hint?.contains("sign that build again (plugboard sign BUILD") == true, "\(resigned)")
        #expect(resigned.hint?.contains(f.file) == false, "\(resigned)")
    }

    @Test func aTamperedCopy_isRefusedAsInvalid_repinnedOrNot_andNeverCopied() throws {
        let f = try Fixture()
        let trust = f.trust(required: true, [("release-2026", f.release)])
        let signature = try PluginSignature.sign(name: "Store", sha256: f.sha256, with: f.release)
        let original = try PluginFile.readAll(f.file, plugin: "Store")
        let offset = try LoaderFixtures.sectionOffset(original, ".text") + 16
        let tampered = try LoaderFixtures.copy(f.file, to: f.folder, as: "libTampered.so") { $0[offset] ^= 0x01 }
        let tamperedSHA = try Digest.sha256Hex(try PluginFile.readAll(tampered, plugin: "Store"))
        // Pinned to the original: the pin refuses it first, as before.
        let pinned = f.loader.stage(path: tampered, name: "Store", pin: f.sha256, signing: f.signing(signature, trust))
        #expect(pinned.error?.code == .checksumMismatch)
        for pin in [nil, tamperedSHA] {
            let staging = f.loader.stage(path: tampered, name: "Store", pin: pin, signing: f.signing(signature, trust))
            #expect(staging.error?.code == .signatureInvalid)
            #expect(staging.error?.message == "plugin \"Store\": the signature of \"\(tampered)\" does not verify")
            #expect(staging.error?.detail?.contains(tamperedSHA) == true)
            #expect(staging.error?.detail?.contains("release-2026 (\(f.release.publicKey.keyID))") == true)
            #expect(!f.cached(staging.sha256))
        }
        #expect(!MappedImages.shared.all.contains { $0.sha256 == tamperedSHA })
    }

    @Test func aSignatureForAnotherName_orAlteredBytes_isInvalid() throws {
        let f = try Fixture()
        let trust = f.trust(required: false, [("release-2026", f.release)])
        let other = try PluginSignature.sign(name: "Other", sha256: f.sha256, with: f.release)
        #expect(f.loader.stage(path: f.file, name: "Store", pin: nil, signing: f.signing(other, trust)).error?.code == .signatureInvalid)
        var bytes = try PluginSignature.sign(name: "Store", sha256: f.sha256, with: f.release).bytes
        bytes[10] ^= 0x80
        let altered = PluginSignature(keyID: f.release.publicKey.keyID, bytes: bytes)
        // Not required, but present: a bad signature refuses all the same.
        #expect(f.loader.stage(path: f.file, name: "Store", pin: nil, signing: f.signing(altered, trust)).error?.code == .signatureInvalid)
    }

    @Test func aKeyTheManifestDoesNotList_isUntrusted_namingItAndTheListedOnes() throws {
        let f = try Fixture()
        let stranger = try Ed25519PrivateKey.generate()
        let signature = try PluginSignature.sign(name: "Store", sha256: f.sha256, with: stranger)
        let staging = f.loader.stage(path: f.file, name: "Store", pin: nil,
                                     signing: f.signing(signature, f.trust(required: true, [("release-2026", f.release), ("release-2027", f.next)])))
        #expect(staging.error?.code == .signatureUntrusted)
        let detail = try #require(staging.error?.detail)
        #expect(detail.contains(stranger.publicKey.keyID))
        #expect(detail.contains("release-2026 (\(f.release.publicKey.keyID)), release-2027 (\(f.next.publicKey.keyID))"))
        #expect(staging.error?.hint?.contains("re-sign") == true)
        #expect(!f.cached(staging.sha256))
    }

    @Test func rotation_anyListedKeyVerifies() throws {
        let f = try Fixture()
        let trust = f.trust(required: true, [("release-2026", f.release), ("release-2027", f.next)])
        for (key, name) in [(f.release, "release-2026"), (f.next, "release-2027")] {
            let signature = try PluginSignature.sign(name: "Store", sha256: f.sha256, with: key)
            let staged = try f.loader.stage(path: f.file, name: "Store", pin: nil, signing: f.signing(signature, trust)).result.get()
            #expect(staged.signer?.name == name)
        }
        // The old key removed: what it signed is no longer trusted.
        let old = try PluginSignature.sign(name: "Store", sha256: f.sha256, with: f.release)
        let after = f.loader.stage(path: f.file, name: "Store", pin: nil, signing: f.signing(old, f.trust(required: true, [("release-2027", f.next)])))
        #expect(after.error?.code == .signatureUntrusted)
    }

    @Test func aReusedStaging_isCheckedAgainstTheTrustOfNow() throws {
        let f = try Fixture()
        let first = try f.loader.stage(path: f.file, name: "Store", pin: nil).result.get()
        let required = f.loader.stage(path: f.file, name: "Store", pin: nil, signing: f.signing(nil, f.trust(required: true, [("k", f.release)])),
                                      previous: first)
        #expect(required.error?.code == .signatureMissing)
        let signature = try PluginSignature.sign(name: "Store", sha256: f.sha256, with: f.release)
        let signed = try f.loader.stage(path: f.file, name: "Store", pin: nil,
                                        signing: f.signing(signature, f.trust(required: true, [("k", f.release)])), previous: first).result.get()
        #expect(signed.loadPath == first.loadPath && signed.signer?.name == "k")
    }
}
