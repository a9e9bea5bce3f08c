import PlugboardAPI
import PlugboardHost
import Testing

/// Relative paths in the manifest are relative to the manifest's folder.
@Suite struct ManifestPathTests {
    private let text = #"{"schemaVersion": 1, "plugins": [{"name": "a", "path": "./plugins//libA.so"}, {"name": "b", "path": "/opt/p/libB.so"}, {"name": "c", "path": "../shared/libC.so"}]}"#

    @Test func pluginPath_isResolvedAgainstTheManifestFolder() throws {
        let m = try ManifestTestSupport.manifest(text, path: "/srv/app/plugins.json")
        #expect(m.plugins[0].source == .path("/srv/app/plugins/libA.so"))
        #expect(m.plugins[1].source == .path("/opt/p/libB.so"))
        // ".." is kept: folding it would be wrong across a symbolic link.
        #expect(m.plugins[2].source == .path("/srv/app/../shared/libC.so"))
    }

    @Test func relativeManifestPath_isTakenFromTheWorkingDirectory() throws {
        let loader = ManifestLoader(configuration: .init(workingDirectory: "/home/u/project"))
        let m = try loader.parse(bytes: Array(text.utf8), path: "conf/plugins.json")
        #expect(m.path == "conf/plugins.json")
        #expect(m.directory == "/home/u/project/conf")
        #expect(m.plugins[0].source == .path("/home/u/project/conf/plugins/libA.so"))
        #expect(m.plugins[0].manifestDirectory == "/home/u/project/conf")
        let bare = try loader.parse(bytes: Array(text.utf8), path: "plugins.json")
        #expect(bare.directory == "/home/u/project")
    }

    @Test func resolvePath_forConfigPaths() throws {
        let m = try ManifestTestSupport.manifest(text, path: "/srv/app/plugins.json")
        #expect(m.resolvePath("data") == "/srv/app/data")
        #expect(m.resolvePath("./data/./x/") == "/srv/app/data/x")
        #expect(m.resolvePath("/var/data") == "/var/data")
        #expect(m.resolvePath("") == "/srv/app")
        #expect(m.plugins[0].resolvePath("data") == "/srv/app/data")
    }

    @Test func manifestAtTheRoot_hasTheRootAsFolder() throws {
        let m = try ManifestTestSupport.manifest(text, path: "/plugins.json")
        #expect(m.directory == "/")
        #expect(m.resolvePath("x") == "/x")
    }
}
