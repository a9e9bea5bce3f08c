#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHost
import Testing

/// Staging: a plugin file read, hashed, checked and copied into the cache once, and what
/// a later staging of the same bytes reuses.
@Suite struct StagingTests {
    @Test func staging_copiesTheCheckedBytesIntoTheCache_underTheirDigest() throws {
        let folder = LoaderFixtures.temporaryFolder("staging")
        let loader = try PluginLoader(container: Container(environment: .testing), configuration: .init(cacheDirectory: "\(folder)/cache"))
        let file = LoaderFixtures.product("MemoryStorage")
        let staged = try loader.stage(path: file, name: "Store", pin: nil).result.get()
        let bytes = try PluginFile.readAll(file, plugin: "Store")
        #expect(staged.sha256 == (try Digest.sha256Hex(bytes)))
        #expect(staged.loadPath.hasSuffix("/\(staged.sha256).so"))
        #expect(try PluginFile.readAll(staged.loadPath, plugin: "Store") == bytes)
        #expect(staged.inspection.header != nil && staged.inspection.size == bytes.count)
    }

    @Test func theSameBytesAgain_reuseTheRunningStaging_butAChangedPinIsStillRefused() throws {
        let folder = LoaderFixtures.temporaryFolder("staging")
        let loader = try PluginLoader(container: Container(environment: .testing), configuration: .init(cacheDirectory: "\(folder)/cache"))
        let file = try LoaderFixtures.copy(LoaderFixtures.product("MemoryStorage"), to: folder)
        let first = try loader.stage(path: file, name: "Store", pin: nil).result.get()
        // The copy removed: a staging that reuses the running one does not write it again.
        #expect(unlink(first.loadPath) == 0)
        let again = try loader.stage(path: file, name: "Store", pin: first.sha256, previous: first).result.get()
        #expect(again == first)
        #expect(access(first.loadPath, F_OK) != 0)
        let pinned = loader.stage(path: file, name: "Store", pin: String(repeating: "0", count: 64), previous: first)
        #expect(pinned.error?.code == .checksumMismatch)
        #expect(pinned.sha256 == first.sha256)
    }

    @Test func changedBytes_areStagedAnew_evenWithAPreviousStaging() throws {
        let folder = LoaderFixtures.temporaryFolder("staging")
        let loader = try PluginLoader(container: Container(environment: .testing), configuration: .init(cacheDirectory: "\(folder)/cache"))
        let file = try LoaderFixtures.copy(LoaderFixtures.product("MemoryStorage"), to: folder)
        let first = try loader.stage(path: file, name: "Store", pin: nil).result.get()
        // Bytes after the end of an ELF file change its digest, not what it is.
        try LoaderFixtures.write(try PluginFile.readAll(file, plugin: "Store") + [0], to: file, mode: 0o755)
        let second = try loader.stage(path: file, name: "Store", pin: nil, previous: first).result.get()
        #expect(second.sha256 != first.sha256)
        #expect(second.loadPath != first.loadPath && access(second.loadPath, F_OK) == 0)
    }

    @Test func aRefusedStaging_keepsTheDigestOfWhatItRead_andNoneWhenItReadNothing() throws {
        let folder = LoaderFixtures.temporaryFolder("staging")
        let loader = try PluginLoader(container: Container(environment: .testing), configuration: .init(cacheDirectory: "\(folder)/cache"))
        let file = LoaderFixtures.product("MemoryStorage")
        let pinned = loader.stage(path: file, name: "Store", pin: String(repeating: "0", count: 64))
        #expect(pinned.error?.code == .checksumMismatch)
        #expect(pinned.sha256 == (try Digest.sha256Hex(try PluginFile.readAll(file, plugin: "Store"))))
        let missing = loader.stage(path: "\(folder)/libMissing.so", name: "Missing", pin: nil)
        #expect(missing.error?.code == .pluginFileNotFound)
        #expect(missing.sha256 == nil && missing.path == "\(folder)/libMissing.so")
    }
}
