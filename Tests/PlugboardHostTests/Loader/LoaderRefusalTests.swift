#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHost
import Testing

/// Every refusal of the loader, on real files, each with its code and a message naming
/// what was expected and what was found, while the host goes on.
@Suite(.serialized) struct LoaderRefusalTests {
    let folder = LoaderFixtures.temporaryFolder()
    let container = Container(environment: .testing)
    let loader: PluginLoader

    init() throws {
        loader = try PluginLoader(container: container,
                                  configuration: .init(cacheDirectory: LoaderFixtures.temporaryFolder("plugboard-cache")))
    }

    var memoryStorage: String { LoaderFixtures.product("MemoryStorage") }

    func load(_ path: String, name: String = "p", pin: String? = nil,
              config: [String: ConfigValue] = [:]) async -> PluginRecord {
        await loader.load(.init(name: name, path: path, sha256: pin, config: PluginConfig(config, plugin: name)))
    }

    @Test func aRealPlugin_loads_andItsServiceResolves() async throws {
        let record = await load(memoryStorage, name: "MemoryStorage")
        #expect(record.state == .active, "\(String(describing: record.error))")
        #expect(record.version != nil)
        #expect(record.services.contains("PlugboardAPI.ObjectStorage"))
        let storage: any ObjectStorage = try container.resolve()
        _ = try await storage.put("k", data: Array("v".utf8), contentType: nil, metadata: [:])
        #expect(try await storage.get("k").data == Array("v".utf8))
    }

    @Test func aMissingFile_isRejected() async {
        let record = await load("\(folder)/libNope.so")
        #expect(record.state == .rejected)
        #expect(record.error?.code == .pluginFileNotFound)
        #expect(record.error?.message.contains("libNope.so") == true)
    }

    @Test func aFolder_isNotARegularFile() async {
        let record = await load(folder)
        #expect(record.error?.code == .notRegularFile)
        #expect(record.error?.detail?.contains("found a folder") == true)
    }

    @Test func aTextFileNamedSo_isNotELF() async throws {
        let path = "\(folder)/libText.so"
        try LoaderFixtures.write(Array("just some text\n".utf8), to: path)
        let record = await load(path)
        #expect(record.state == .rejected)
        #expect(record.error?.code == .notELF)
        #expect(record.error?.detail?.contains("7f 45 4c 46") == true)
        #expect(record.error?.detail?.contains("text file") == true)
    }

    @Test func aTruncatedELF_isRefused() async throws {
        let path = try LoaderFixtures.copy(memoryStorage, to: folder, as: "libTruncated.so") { bytes in
            bytes = Array(bytes.prefix(bytes.count / 3))
        }
        let record = await load(path)
        #expect(record.state == .rejected)
        #expect(record.error?.code == .truncatedELF)
    }

    @Test func anELFForAnotherMachine_isRefused_namingBoth() async throws {
        let path = try LoaderFixtures.copy(memoryStorage, to: folder, as: "libArm.so") { bytes in
            bytes[18] = 183; bytes[19] = 0  // EM_AARCH64
        }
        let record = await load(path)
        #expect(record.error?.code == .wrongArchitecture)
        #expect(record.error?.detail?.contains("x86-64") == true)
        #expect(record.error?.detail?.contains("AArch64") == true)
    }

    @Test func anExecutable_isNotASharedObject() async throws {
        let path = try LoaderFixtures.copy(memoryStorage, to: folder, as: "libExec.so") { bytes in
            bytes[16] = 2; bytes[17] = 0  // ET_EXEC
        }
        let record = await load(path)
        #expect(record.error?.code == .notSharedObject)
    }

    @Test func aSharedObjectWithoutHeader_isRejected() async throws {
        // libPlugboardAPI.so itself: a Swift shared object with no plugin header.
        let path = try LoaderFixtures.copy(LoaderFixtures.product("PlugboardAPI"), to: folder, as: "libNoHeader.so")
        let record = await load(path)
        #expect(record.state == .rejected)
        #expect(record.error?.code == .headerMissing)
    }

    @Test func aHeaderClaimingAnotherABI_isRejected_beforeDlopen() async throws {
        let path = try LoaderFixtures.copy(memoryStorage, to: folder, as: "libOtherABI.so") { bytes in
            if let at = try? LoaderFixtures.sectionOffset(bytes, PluginHeader.sectionName) { bytes[at + 8] &+= 1 }
        }
        let record = await load(path)
        #expect(record.state == .rejected)
        #expect(record.error?.code == .abiMismatch)
        #expect(record.error?.detail?.contains("ABI \(PluginABI.current + 1)") == true)
    }

    @Test func aHeaderClaimingANewerMinor_isRejected() async throws {
        let path = try LoaderFixtures.copy(memoryStorage, to: folder, as: "libNewer.so") { bytes in
            if let at = try? LoaderFixtures.sectionOffset(bytes, PluginHeader.sectionName) { bytes[at + 16] &+= 1 }
        }
        let record = await load(path)
        #expect(record.error?.code == .apiVersionMismatch)
        let host = APIVersion.current
        #expect(record.error?.detail?.contains("\(host.major).\(host.minor + 1)") == true)
    }

    @Test func aForgedToolchain_isRejected_namingBoth() async throws {
        let path = try LoaderFixtures.copy(memoryStorage, to: folder, as: "libForged.so") { bytes in
            guard let at = try? LoaderFixtures.sectionOffset(bytes, ".comment") else { return }
            // Overwrite the commit hash of the clang line with another one of equal length.
            let text = String(decoding: bytes[at...].prefix(400), as: UTF8.self)
            guard let range = text.firstRange(of: "llvm-project.git ") else { return }
            let start = at + text.utf8.distance(from: text.startIndex, to: range.upperBound)
            for i in 0..<8 { bytes[start + i] = UInt8(ascii: "0") }
        }
        let record = await load(path)
        #expect(record.state == .rejected)
        #expect(record.error?.code == .toolchainMismatch)
        #expect(record.error?.detail?.contains("llvm-project.git 00000000") == true)
    }

    @Test func aShaMismatch_isRejected_withBothDigests() async throws {
        let record = await load(memoryStorage, pin: String(repeating: "a", count: 64))
        #expect(record.error?.code == .checksumMismatch)
        #expect(record.error?.detail?.contains(String(repeating: "a", count: 64)) == true)
        #expect(record.error?.hint?.contains("sha256") == true)
    }

    @Test func aMatchingPin_loads() async throws {
        let sha = try Digest.sha256Hex(PluginFile.readAll(memoryStorage, plugin: "p"))
        let record = await load(memoryStorage, name: "Pinned", pin: sha.uppercased())
        #expect(record.state == .active, "\(String(describing: record.error))")
        #expect(record.sha256 == sha)
    }

    @Test func aWorldWritableFile_isRejected() async throws {
        let path = try LoaderFixtures.copy(memoryStorage, to: folder, as: "libOpen.so")
        chmod(path, 0o666)
        let record = await load(path)
        #expect(record.error?.code == .insecurePermissions)
        #expect(record.error?.hint?.contains("chmod o-w") == true)
    }

    @Test func aWorldWritableFolderWithoutStickyBit_isRejected_butGroupWriteIsFine() async throws {
        let open = LoaderFixtures.temporaryFolder("plugboard-open")
        let path = try LoaderFixtures.copy(memoryStorage, to: open)
        chmod(open, 0o777)
        #expect(await load(path).error?.code == .insecurePermissions)
        chmod(open, 0o1777)  // sticky, like /tmp
        #expect(await load(path, name: "Sticky").state == .active)
        chmod(open, 0o775)
        chmod(path, 0o664)
        #expect(await load(path, name: "Group").state == .active)
    }

    @Test func aSharedObjectWithoutEntryPoint_fails_afterDlopen() async throws {
        let path = try await LoaderFixtures.headerOnlyCLibrary(in: folder)
        let record = await load(path)
        #expect(record.state == .failed)
        #expect(record.error?.code == .entryPointMissing)
        #expect(record.error?.message.contains("plugboard_plugin_entry") == true)
    }

    @Test func aPluginWithItsOwnCopyOfTheAPI_isRefusedByTheHandshake() async throws {
        let path = try await LoaderFixtures.pluginWithItsOwnAPI(in: folder)
        let record = await load(path, name: "DupPlugin")
        #expect(record.state == .failed)
        #expect(record.error?.code == .duplicateAPIModule)
        #expect(container.registrations().allSatisfy { $0.owner != "DupPlugin" })
    }

    @Test func aRegistrationThatFails_publishesNothing() async throws {
        let record = await load(memoryStorage, name: "Broken", config: ["failureRate": .string("often")])
        #expect(record.state == .failed)
        #expect(record.error?.code == .configInvalid)
        #expect(record.error?.message.contains("failureRate") == true)
        #expect(container.registrations().allSatisfy { $0.owner != "Broken" })
    }

    @Test func theHostGoesOn_afterEveryRefusal() async throws {
        _ = await load("\(folder)/missing.so")
        let path = "\(folder)/libText2.so"
        try LoaderFixtures.write(Array("text".utf8), to: path)
        _ = await load(path)
        #expect(await load(memoryStorage, name: "After").state == .active)
    }

    @Test func theAPIBesideAnOutOfTreePlugin_isNeverLoadedASecondTime() async throws {
        // A plugin folder as an out-of-tree build leaves it: the plugin and its own build
        // of libPlugboardAPI.so side by side.
        let tree = LoaderFixtures.temporaryFolder("plugboard-outoftree")
        let path = try LoaderFixtures.copy(memoryStorage, to: tree)
        try LoaderFixtures.copy(LoaderFixtures.product("PlugboardAPI"), to: tree)
        let record = await load(path, name: "OutOfTree")
        #expect(record.state == .active, "\(String(describing: record.error))")
        // Type identity held: the service it registered resolves as the host's protocol.
        let all = try container.resolveAll((any ObjectStorage).self)
        #expect(!all.isEmpty)
        let maps = String(decoding: try PluginFile.readAll("/proc/self/maps", plugin: "maps"), as: UTF8.self)
        let apiMappings = Set(maps.split(separator: "\n").compactMap { line -> String? in
            guard let slash = line.firstIndex(of: "/"), line.hasSuffix("libPlugboardAPI.so") else { return nil }
            return String(line[slash...])
        })
        #expect(apiMappings.count == 1, "libPlugboardAPI.so mapped from: \(apiMappings)")
    }
}

@Suite struct ToolchainTests {
    @Test func theHostsToolchain_readFromItsHeaders_matchesTheWholeFileParse() throws {
        let path = LoaderFixtures.product("PlugboardAPI")
        let whole = try ELFImage(bytes: try PluginFile.readAll(path, plugin: "api")).comments
        #expect(ELFImage.comments(ofFileAt: path) == whole)
        #expect(Toolchain.identify(whole)?.contains("swiftlang") == true)
        #expect(Toolchain.host == Toolchain.identify(whole))
        #expect(ELFImage.comments(ofFileAt: "/etc/hostname").isEmpty)
    }
}
