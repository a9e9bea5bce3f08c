#if canImport(Glibc)
import Glibc
#endif
import PlugboardHost
import PlugboardJSON
import Testing

/// `plugboard check` names a newer build of the loaded file that sits in the same SwiftPM
/// build folder: the author's `swift build` and `swift test` (debug) after the release
/// build the snippet names, which check would otherwise load without a word.
@Suite struct StaleBuildTests {
    /// A package's build folder as SwiftPM lays it out, with real copies of
    /// libMemoryStorage.so as its release and debug builds of `file`: the release one
    /// written an hour before the debug one when `releaseIsOlder`, an hour after it otherwise.
    static func package(in sandbox: Sandbox, releaseIsOlder: Bool,
                        file: String = "libMemoryStorage.so") throws -> (release: String, debug: String) {
        let library = try sandbox.read("\(CommandRunner.productsFolder)/libMemoryStorage.so")
        for folder in ["pkg", "pkg/.build", "pkg/.build/x86_64-unknown-linux-gnu",
                       "pkg/.build/x86_64-unknown-linux-gnu/release", "pkg/.build/x86_64-unknown-linux-gnu/debug"] {
            try sandbox.makeFolder(folder)
        }
        for configuration in ["release", "debug"] {
            try #require(symlink("x86_64-unknown-linux-gnu/\(configuration)", sandbox.path("pkg/.build/\(configuration)")) == 0)
        }
        let release = try sandbox.write("pkg/.build/x86_64-unknown-linux-gnu/release/\(file)", library)
        let debug = try sandbox.write("pkg/.build/x86_64-unknown-linux-gnu/debug/\(file)", library)
        let now = time(nil)
        try setModified(release, now + (releaseIsOlder ? -3600 : 3600))
        try setModified(debug, now)
        return (release, debug)
    }

    static func setModified(_ path: String, _ seconds: time_t) throws {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        try #require(utimensat(AT_FDCWD, path, &times, 0) == 0, "utimensat \(path): \(String(cString: strerror(errno)))")
    }

    static let manifest = ManifestText.make([#"{"name": "Acme", "path": "pkg/.build/release/libMemoryStorage.so"}"#])

    @Test func anOlderReleaseBuild_loads_andCheckNamesTheNewerDebugBuildWithBothTimes() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let (release, debug) = try Self.package(in: sandbox, releaseIsOlder: true)
        try sandbox.write("plugins.json", Self.manifest)
        let result = await sandbox.run(["check"])
        expectRun(result, status: 0, stdout: .contains("Acme", "active"), stderr: .contains(
            "plugboard: warning: Acme: a newer build of libMemoryStorage.so sits beside the one loaded\n",
            "DETAIL: Loaded \"\(release)\" (written ",
            "; newer: \"\(debug)\" (written ",
            "HINT: Run swift build -c release in the plugin's package to rebuild the file the manifest names, or point the plugin's path in plugins.json at the newer build.\n",
            "check passed: 1 plugin active"))

        let json = try await sandbox.run(["check", "--json"]).json()
        let warning = try #require(json.elements?.first?["warnings"]?.elements?.first)
        #expect(warning["code"]?.string == "loader.newer_build_beside")
        #expect(warning["detail"]?.string?.contains(debug) == true)
    }

    @Test func aReleaseBuildNewerThanTheDebugOne_isCheckedWithoutAWarning() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        _ = try Self.package(in: sandbox, releaseIsOlder: false)
        try sandbox.write("plugins.json", Self.manifest)
        expectRun(await sandbox.run(["check"]), status: 0, stderr: .containsNot(["check passed"], not: ["warning"]))
        let json = try await sandbox.run(["check", "--json"]).json()
        #expect(json.elements?.first?["warnings"]?.elements?.isEmpty == true)
    }

    /// A plugin author's package builds the SDK's products too, in both configurations; a
    /// `product` the host finds in it (here through PLUGBOARD_PLUGIN_PATH, as an in-tree
    /// product beside the host) is not the manifest's choice of build, so no warning.
    @Test func aProductFoundInABuildFolderWithANewerBuild_isCheckedWithoutAWarning() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        // A product name the host's own folder does not hold, so the search reaches the package.
        _ = try Self.package(in: sandbox, releaseIsOlder: true, file: "libSDKStorage.so")
        try sandbox.write("plugins.json", ManifestText.make([#"{"name": "Sdk", "product": "SDKStorage"}"#]))
        let environment = ["PLUGBOARD_PLUGIN_PATH": sandbox.path("pkg/.build/release")]
        expectRun(await sandbox.run(["check"], environment: environment), status: 0,
                  stdout: .contains("Sdk", "active"), stderr: .containsNot(["check passed"], not: ["warning"]))
        let json = try await sandbox.run(["check", "--json"], environment: environment).json()
        #expect(json.elements?.first?["warnings"]?.elements?.isEmpty == true)
    }

    /// The hint names the manifest given with `--manifest`, not the default one.
    @Test func theHint_namesTheManifestGiven() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        _ = try Self.package(in: sandbox, releaseIsOlder: true)
        try sandbox.write("other.json", Self.manifest)
        expectRun(await sandbox.run(["check", "--manifest", "other.json"]), status: 0, stderr: .contains(
            "or point the plugin's path in other.json at the newer build.\n", "check passed"))
    }
}
