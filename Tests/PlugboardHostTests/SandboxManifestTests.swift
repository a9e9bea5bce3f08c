import PlugboardAPI
@testable import PlugboardHost
import Testing

/// A plugin entry's `"sandbox"` object, decoded on its own (the plugin-entry decoder calls
/// ``ManifestDecoder/decodeSandbox(_:)`` for the key).
@Suite struct SandboxManifestTests {
    private func decode(_ text: String) throws(PlugboardError) -> ManifestSandbox {
        let value = try ManifestTestSupport.parseJSON(text)
        return try ManifestDecoder(reader: ManifestReader(source: "plugins.json"), directory: "/srv/app").decodeSandbox(value)
    }

    private func error(_ text: String) -> PlugboardError? {
        do {
            _ = try decode(text)
            return nil
        } catch {
            return error
        }
    }

    @Test func empty_isTheDefaults() throws {
        let sandbox = try decode("{}")
        #expect(sandbox == ManifestSandbox())
        #expect(sandbox.memoryMB == 1024 && sandbox.openFiles == 1024)
        #expect(sandbox.readWritePaths.isEmpty && sandbox.readOnlyPaths.isEmpty)
    }

    @Test func paths_resolveAgainstTheManifestsFolder_asAPluginsPath() throws {
        let sandbox = try decode(#"{"memoryMB": 256, "openFiles": 64, "readWrite": ["data", "./spool/", "/var/lib/x"], "readOnly": ["../shared"]}"#)
        #expect(sandbox.memoryMB == 256 && sandbox.openFiles == 64)
        #expect(sandbox.readWritePaths == ["/srv/app/data", "/srv/app/spool", "/var/lib/x"])
        #expect(sandbox.readOnlyPaths == ["/srv/app/../shared"])
    }

    @Test func policy_addsWhatLoadingNeeds() throws {
        let policy = try decode(#"{"memoryMB": 256, "readWrite": ["data"]}"#).policy(pluginCache: "/var/cache/plugboard")
        #expect(policy.memoryLimitBytes == 256 << 20 && policy.openFiles == 1024)
        #expect(policy.readWritePaths == ["/srv/app/data", "/dev/null"])
        #expect(policy.readOnlyPaths.contains("/var/cache/plugboard") && policy.readOnlyPaths.contains("/usr/lib"))
    }

    @Test func defaultReadOnlyPaths_holdTheSwiftRuntimesFolder() throws {
        let runtime = try #require(SandboxPolicy.loadedLibraryFolder("libswiftCore.so"))
        #expect(runtime.hasPrefix("/"))
        #expect(SandboxPolicy.defaultReadOnlyPaths(pluginCache: nil).first == runtime)
    }

    @Test func refusals_nameWhatWasExpectedAndFound() {
        let cases: [(String, PlugboardError.Code, String)] = [
            (#"{"memoryMB": 8}"#, .manifestInvalidValue, "expected 64 to 1048576 MiB, found 8"),
            (#"{"memoryMB": 2000000}"#, .manifestInvalidValue, "found 2000000"),
            (#"{"openFiles": 4}"#, .manifestInvalidValue, "expected 16 to 1048576 descriptors, found 4"),
            (#"{"memoryMB": "1G"}"#, .manifestWrongType, "expected an integer"),
            (#"{"readWrite": "data"}"#, .manifestWrongType, "expected an array"),
            (#"{"readOnly": [1]}"#, .manifestWrongType, "expected a string"),
            (#"{"readWrite": [""]}"#, .manifestInvalidValue, "read-write path is empty"),
            (#"{"memoryMb": 1}"#, .manifestUnknownKey, "memoryMb"),
            ("[]", .manifestWrongType, "expected an object"),
        ]
        for (text, code, words) in cases {
            let e = error(text)
            #expect(e?.code == code, "\(text)")
            #expect(e?.message.contains(words) == true, "\(text): \(e?.message ?? "no error")")
        }
        #expect(error(#"{"openFiles": 4}"#)?.hint == "Write 16 or more.")
    }
}
