import Foundation
import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import PlugboardTestSupport
import Testing

/// Reading the manifest file: missing, unreadable, too large, and a good one.
@Suite struct ManifestLoadTests {
    private func temporaryFolder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("manifest-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func existingFile_isLoaded_withItsFolder() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/plugins.json"
        try Data(#"{"schemaVersion": 1, "plugins": [{"name": "a", "path": "libA.so"}]}"#.utf8).write(to: URL(fileURLWithPath: path))
        let m = try Manifest.load(path: path)
        #expect(m.path == path)
        #expect(m.plugins.first?.source == .path(folder + "/libA.so"))
    }

    @Test func missingFile_isNotFound_withAHint() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let error = #expect(throws: PlugboardError.self) { try Manifest.load(path: folder + "/nope.json") }
        #expect(error?.code == .manifestNotFound)
        #expect(error?.message.contains("nope.json") == true)
        #expect(error?.hint != nil)
        let empty = #expect(throws: PlugboardError.self) { try Manifest.load(path: "") }
        #expect(empty?.code == .manifestNotFound)
    }

    @Test func folder_isUnreadable() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let error = #expect(throws: PlugboardError.self) { try Manifest.load(path: folder) }
        #expect(error?.code == .manifestUnreadable)
        #expect(error?.message.contains("a directory") == true)
    }

    /// Root reads any file, so the reader is another user (AnotherUser: `nobody` as root,
    /// as in CI, else this user): the built `plugboard` reading the manifest in a child.
    @Test func fileWithoutReadPermission_isUnreadable() async throws {
        let folder = BuildProducts.temporaryFolder("manifest-unreadable")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/plugins.json"
        try Data(#"{"schemaVersion": 1, "plugins": []}"#.utf8).write(to: URL(fileURLWithPath: path))
        try AnotherUser.own(path)
        try FileManager.default.setAttributes([.posixPermissions: 0o000], ofItemAtPath: path)
        let environment = ChildProcess.environment.merging(["SWIFT_BACKTRACE": "enable=no", "HOME": folder]) { $1 }
        let run = try await OwnThread.run {
            Result { () throws(ChildProcessError) in
                try AnotherUser.run("\(BuildProducts.folder)/plugboard", ["check", "--in-process", "--json", "--manifest", path],
                                    environment: environment, outputIn: folder)
            }
        }.get()
        // 2: a manifest that cannot be read stops every command before it starts (CLI.md).
        #expect(run.exitStatus == 2, "\(run)")
        #expect(run.standardOutput.contains(#""code": "manifest.unreadable""#), "\(run)")
        #expect(run.standardOutput.contains("permission denied"), "\(run)")
    }

    @Test func fileOverTheLimit_isRefusedBeforeReading() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/plugins.json"
        try Data(repeating: 0x20, count: 2048).write(to: URL(fileURLWithPath: path))
        let loader = ManifestLoader(configuration: .init(limits: .init(maxBytes: 1024, maxDepth: 64)))
        let error = #expect(throws: PlugboardError.self) { try loader.load(path: path) }
        #expect(error?.code == .manifestTooLarge)
        #expect(error?.detail?.contains("2048") == true)
        #expect(error?.detail?.contains("1024") == true)
    }

    @Test func syntaxErrorInAFile_startsWithThePathAsGiven() throws {
        let folder = try temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/plugins.json"
        try Data("{\n  \"schemaVersion\": 1,\n}".utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: PlugboardError.self) { try Manifest.load(path: path) }
        #expect(error?.code == .manifestSyntax)
        #expect(error?.message.hasPrefix(path + ":3:1: ") == true)
    }
}
