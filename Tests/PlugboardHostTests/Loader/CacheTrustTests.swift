#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHost
import Testing

/// The cache folder is the last thing between the checked bytes and `dlopen`: the loader
/// refuses one that another user owns or can write, follows no link planted in it, and
/// has no shared default. (CI runs as root, which may chown a folder to `nobody`: the
/// loader's own check is against its effective user, so that case needs no setuid child.)
@Suite(.serialized) struct CacheTrustTests {
    static let nobody: uid_t = getpwnam("nobody").map { $0.pointee.pw_uid } ?? 65_534
    static let isRoot = geteuid() == 0

    var memoryStorage: String { LoaderFixtures.product("MemoryStorage") }

    static func refusal(_ cache: String) -> PlugboardError? {
        do {
            _ = try PluginLoader(container: Container(environment: .testing), configuration: .init(cacheDirectory: cache))
            return nil
        } catch {
            return error
        }
    }

    @Test(.enabled(if: CacheTrustTests.isRoot, "chown to another user needs root"))
    func aCacheFolderOwnedByNobody_isRefused() throws {
        for mode: mode_t in [0o777, 0o700] {
            let cache = LoaderFixtures.temporaryFolder("plugboard-cache")
            #expect(chmod(cache, mode) == 0 && chown(cache, Self.nobody, gid_t(Self.nobody)) == 0)
            let error = try #require(Self.refusal(cache), "a cache owned by nobody, mode \(String(mode, radix: 8)), was accepted")
            #expect(error.code == .cacheUntrusted)
            #expect(error.detail?.contains("owned by user \(Self.nobody)") == true, "\(error)")
            #expect(error.hint?.contains("--cache-dir") == true)
            // Nothing was written into it.
            #expect(LoaderFixtures.entries(cache).isEmpty)
        }
    }

    @Test func aCacheFolderOthersCanWrite_isRefused_notRepaired() throws {
        for mode: mode_t in [0o777, 0o770, 0o703] {
            let cache = LoaderFixtures.temporaryFolder("plugboard-cache")
            #expect(chmod(cache, mode) == 0)
            let error = try #require(Self.refusal(cache), "a cache of mode \(String(mode, radix: 8)) was accepted")
            #expect(error.code == .cacheUntrusted)
            #expect(error.detail?.contains("found mode 0\(String(mode, radix: 8))") == true, "\(error)")
            #expect(error.hint?.contains("chmod go-w") == true)
            var st = stat()
            #expect(stat(cache, &st) == 0 && st.st_mode & 0o777 == mode)
        }
    }

    @Test func aCacheBelowAFolderAnyoneCanWrite_isRefused() throws {
        let open = LoaderFixtures.temporaryFolder("plugboard-open")
        #expect(chmod(open, 0o777) == 0)
        let error = try #require(Self.refusal("\(open)/cache"))
        #expect(error.code == .cacheUntrusted)
        #expect(error.detail?.contains(open) == true, "\(error)")
        // The same folder with the sticky bit, as /tmp has, is fine.
        #expect(chmod(open, 0o1777) == 0)
        #expect(Self.refusal("\(open)/cache2") == nil)
    }

    /// `<sha>.so` planted as a link to a copy with the same bytes that anyone can write:
    /// reusing it would map a file others can change. And a copy with the right bytes but
    /// mode 0666 is not reused either.
    @Test func aPlantedEntry_isNotFollowed_butRebuilt() async throws {
        let inspection = try PluginInspection.plugin(at: memoryStorage, name: "MemoryStorage", pin: nil)
        let elsewhere = LoaderFixtures.temporaryFolder("plugboard-elsewhere")
        let planted = try LoaderFixtures.copy(memoryStorage, to: elsewhere)
        #expect(chmod(planted, 0o666) == 0)
        for plant in ["link", "mode"] {
            let cache = LoaderFixtures.temporaryFolder("plugboard-cache")
            let entry = "\(cache)/\(inspection.sha256).so"
            if plant == "link" {
                #expect(symlink(planted, entry) == 0)
            } else {
                try LoaderFixtures.copy(memoryStorage, to: cache, as: "\(inspection.sha256).so")
                #expect(chmod(entry, 0o666) == 0)
            }
            let container = Container(environment: .testing)
            let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cache))
            let record = await loader.load(.init(name: "MemoryStorage", path: memoryStorage))
            #expect(record.state == .active, "\(String(describing: record.error))")
            var st = stat()
            #expect(lstat(entry, &st) == 0)
            #expect(st.st_mode & S_IFMT == S_IFREG, "\(plant): the planted entry is still there")
            #expect(st.st_mode & 0o7777 == 0o500 && st.st_uid == geteuid(), "\(plant)")
        }
        // What the link pointed to was never written through.
        #expect(try PluginFile.readAll(planted, plugin: "p") == PluginFile.readAll(memoryStorage, plugin: "p"))
    }

    /// `<sha>.d` planted as a link to another folder: the loader would write its links
    /// there and `dlopen` through them. And an entry in a real `.d` that is no link to a
    /// cache entry would be found through the plugin's `$ORIGIN`.
    @Test func aPlantedLinkFolder_isNotFollowed_andStrangersInItAreRemoved() async throws {
        let folder = try await LoaderSiblingTests.build(plugin: "TrustSibling", answer: 7, library: "TrustGreeting")
        let path = "\(folder)/libTrustSibling.so"
        let sha = try PluginInspection.plugin(at: path, name: "TrustSibling", pin: nil).sha256
        let cache = LoaderFixtures.temporaryFolder("plugboard-cache")
        let elsewhere = LoaderFixtures.temporaryFolder("plugboard-elsewhere")
        let links = "\(cache)/\(sha).d"
        #expect(symlink(elsewhere, links) == 0)

        let container = Container(environment: .testing)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cache))
        let record = await loader.load(.init(name: "TrustSibling", path: path))
        #expect(record.state == .active, "\(String(describing: record.error))")
        #expect(try container.resolve(Int32.self, name: "TrustSibling") == 7)
        var st = stat()
        #expect(lstat(links, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR, "the planted link is still there")
        #expect(LoaderFixtures.entries(elsewhere).isEmpty, "the loader wrote through the planted link")
        #expect(Set(LoaderFixtures.entries(links)) == ["libTrustSibling.so", "libTrustGreeting.so"])

        // Strangers in the folder: a link elsewhere, a file. Made again (as a process that
        // has not loaded the sibling yet does), the folder holds its links and no more.
        let wanted = try LoaderFixtures.entries(links).map { name in
            (name: name, target: String(decoding: try #require(Self.readLink("\(links)/\(name)")), as: UTF8.self))
        }
        #expect(symlink("/etc/passwd", "\(links)/libStranger.so") == 0)
        try LoaderFixtures.write(Array("x".utf8), to: "\(links)/libFile.so")
        _ = try PluginCache(directory: cache).linkFolder(sha256: sha, links: wanted)
        #expect(Set(LoaderFixtures.entries(links)) == ["libTrustSibling.so", "libTrustGreeting.so"])
        #expect(wanted.allSatisfy { PluginCache.isEntryLink($0.target) })
    }

    static func readLink(_ path: String) -> [UInt8]? {
        var buf = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buf, buf.count - 1)
        return n >= 0 ? buf[0..<n].map { UInt8(bitPattern: $0) } : nil
    }

    @Test func noHomeAndNoXDG_isAnError_notTmp() async throws {
        for environment in [[:], ["HOME": ""], ["XDG_CACHE_HOME": "relative", "HOME": "also/relative"]] {
            let result = Result { () throws(PlugboardError) -> String in try PluginHost.defaultCacheDirectory(environment: environment) }
            guard case .failure(let error) = result else {
                Issue.record("\(environment) gave a cache folder: \(result)")
                continue
            }
            #expect(error.code == .cacheDirectoryUnset)
            #expect(error.hint?.contains("--cache-dir") == true && error.hint?.contains("HOME") == true)
        }
        #expect(try PluginHost.defaultCacheDirectory(environment: ["HOME": "/home/ada"]) == "/home/ada/.cache/plugboard")
        #expect(try PluginHost.defaultCacheDirectory(environment: ["HOME": "/home/ada", "XDG_CACHE_HOME": "/c"]) == "/c/plugboard")
        // The host refuses to start rather than use a shared folder.
        let manifest = LoaderFixtures.temporaryFolder("plugboard-manifest") + "/plugins.json"
        try LoaderFixtures.write(Array(#"{"schemaVersion": 1, "plugins": []}"#.utf8), to: manifest)
        await #expect(throws: PlugboardError.self) {
            _ = try await PluginHost.start(.init(manifestPath: manifest, processEnvironment: [:]))
        }
    }
}
