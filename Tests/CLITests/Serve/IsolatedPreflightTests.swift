#if canImport(Glibc)
import Glibc
#endif
import CPlugboardSandbox
import PlugboardHost
import PlugboardJSON
import PlugboardTestSupport
import Testing

/// The preflight of an isolated plugin is a start of its worker, in its sandbox, as it will
/// serve: a build that works in process but that its sandbox refuses at start fails
/// `check` and a reload with the sandbox's own code, and serve keeps the old generation;
/// a build that passes is served by the very worker that checked it.
@Suite struct IsolatedPreflightTests {
    /// The fixture isolated, with 20 seed objects, faulting as `fault` says at start.
    static func flaky(_ fault: String, faultIn: String = "start", label: String = "one", extra: String = "",
                      sandbox: String = "") -> String {
        #"{"name": "Flaky", "product": "MisbehavingPlugin", "isolation": "process", "worker": {"maxCrashes": 1000}, \#(sandbox)"#
            + #""config": {"fault": "\#(fault)", "faultIn": "\#(faultIn)", "seed": 20, "label": "\#(label)"\#(extra)}}"#
    }

    static func manifest(_ plugin: String) -> String {
        #"{"schemaVersion": 1, "hotSwap": {"enabled": true}, "plugins": [\#(plugin)]}"#
    }

    /// What `plugboard check --json` says of the one plugin: its state and error code.
    static func check(_ plugin: String) async throws -> (status: Int32, stdout: String, code: String?) {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([plugin]))
        let result = await sandbox.run(["check", "--json"])
        let code = try? result.json().elements?.first?["error"]?["code"]?.string
        return (result.status, result.stdout, code ?? nil)
    }

    /// The serving worker's pid of the one plugin, from `/v1/admin/plugins`.
    static func workerPID(_ server: ServerProcess) throws -> Int32? {
        let text = try server.client().request("GET", "/v1/admin/plugins").text
        let line = text.split(separator: "\n").first { $0.contains("\"pid\"") }
        return line.flatMap { Int32($0.filter(\.isNumber)) }
    }

    @Test func check_refusesAStartThatItsSandboxRefuses_execve() async throws {
        let (status, stdout, code) = try await Self.check(Self.flaky("execve"))
        #expect(status == 1)
        #expect(code == "sandbox.syscall_refused", "\(stdout)")
        #expect(stdout.contains("system call execve"), "\(stdout)")
    }

    @Test(.enabled(if: landlock, "the kernel has no Landlock: file access is not confined"))
    func check_refusesAStartThatWritesOutsideItsGrant_andPassesItInProcess() async throws {
        let outside = BuildProducts.temporaryFolder("preflight-outside")
        defer { _ = unlink("\(outside)/stolen"); _ = rmdir(outside) }
        let plugin = Self.flaky("writeOutside", extra: #", "outsidePath": "\#(outside)/stolen""#)
        let (status, stdout, code) = try await Self.check(plugin)
        #expect(status == 1)
        #expect(code == "sandbox.access_refused", "\(stdout)")
        #expect(stdout.contains("\(outside)/stolen") && stdout.contains("Permission denied"), "\(stdout)")
        #expect(access("\(outside)/stolen", F_OK) != 0)
        // The same build in process: nothing stops it, which is what the sandboxed check is for.
        let inProcess = try await Self.check(plugin.replacing(#""isolation": "process", "worker": {"maxCrashes": 1000}, "#, with: ""))
        #expect(inProcess.status == 0, "\(inProcess.stdout)")
    }

    @Test(.enabled(if: !IsolationTests.underSanitizer, "under a sanitizer the worker has no memory limit"))
    func check_refusesAStartThatNeedsMoreMemoryThanItsSandboxGives() async throws {
        let (status, stdout, code) = try await Self.check(Self.flaky("allocate", sandbox: #""sandbox": {"memoryMB": 256}, "#))
        #expect(status == 1)
        #expect(code == "sandbox.memory_exceeded", "\(stdout)")
        #expect(stdout.contains("memory limit of 256 MiB"), "\(stdout)")
    }

    /// Stopping is plugin code too: check stops the worker as the host would, and a stop
    /// that crashes fails the plugin, as in a preflight child.
    @Test func check_failsAnIsolatedPluginWhoseStopCrashes() async throws {
        let (status, stdout, code) = try await Self.check(Self.flaky("segfault", faultIn: "stop"))
        #expect(status == 1)
        #expect(code == "reload.preflight_crashed", "\(stdout)")
        #expect(stdout.contains("SIGSEGV"), "\(stdout)")
    }

    /// Its worker is started, sandboxed, and leaves no trace: the data folder the sandbox
    /// would grant is not created for `check`, as FileStorage creates nothing then.
    @Test func check_ofAnIsolatedFileStorage_passes_andCreatesNoFolder() async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("plugins.json", ManifestText.make([
            #"{"name": "Files", "product": "FileStorage", "isolation": "process", "sandbox": {"readWrite": ["data"]}, "config": {"root": "data"}}"#,
        ]))
        expectRun(await sandbox.run(["check"]), status: 0, stdout: .contains("Files", "active"), stderr: .contains("check passed"))
        #expect(!sandbox.exists("data"))
    }

    @Test func aReloadToABuildThatCallsExecveAtStart_isRefused_andServeKeepsTheOldGeneration() async throws {
        try await Self.reloadIsRefused(fault: "execve", code: "sandbox.syscall_refused")
    }

    @Test(.enabled(if: landlock, "the kernel has no Landlock: file access is not confined"))
    func aReloadToABuildThatWritesOutsideItsGrantAtStart_isRefused_andServeKeepsTheOldGeneration() async throws {
        try await Self.reloadIsRefused(fault: "writeOutside", code: "sandbox.access_refused")
    }

    @Test(.enabled(if: !IsolationTests.underSanitizer, "under a sanitizer the worker has no memory limit"))
    func aReloadToABuildThatNeedsMoreMemoryAtStart_isRefused_andServeKeepsTheOldGeneration() async throws {
        try await Self.reloadIsRefused(fault: "allocate", sandbox: #""sandbox": {"memoryMB": 256}, "#, code: "sandbox.memory_exceeded")
    }

    /// A serving build, then a reload to one whose start faults as `fault` says in its
    /// sandbox: refused with `code`, and the old generation and its worker serve on.
    static func reloadIsRefused(fault: String, sandbox: String = "", code: String) async throws {
        let outside = BuildProducts.temporaryFolder("preflight-reload-outside")
        defer { _ = unlink("\(outside)/stolen"); _ = rmdir(outside) }
        let server = try ServerProcess(manifest: manifest(flaky("none")), arguments: ["--no-watch", "--log-level", "info"])
        let before = try workerPID(server)
        #expect(before != nil)
        try server.sandbox.write("plugins.json", manifest(flaky(fault, label: "two", extra: #", "outsidePath": "\#(outside)/stolen""#,
                                                                sandbox: sandbox)))
        let url = "http://127.0.0.1:\(server.port)"
        let reload = await server.sandbox.run(["reload", "--url", url])
        #expect(reload.status != 0)
        #expect(reload.stdout.contains(code) || reload.stderr.contains(code), "\(reload.stdout)\(reload.stderr)")
        #expect(access("\(outside)/stolen", F_OK) != 0)
        let after = try server.client().request("GET", "/v1/objects/seed-1")
        #expect(after.status == 200 && after.text == "seed 1")
        #expect(after.header("x-plugboard-generation") == "1")
        #expect(try workerPID(server) == before)
        // The refused build never passed: no worker of it could be handed on.
        #expect(server.stderrLines(containing: "isolated plugin passed its preflight") == 0, "\(server.stderr)")
        #expect(server.stop() == 0)
    }

    @Test func aReload_handsThePreflightsWorkerOver_whichServesTheNewGeneration() async throws {
        let server = try ServerProcess(manifest: Self.manifest(Self.flaky("none", faultIn: "get")), arguments: ["--no-watch", "--log-level", "info"])
        let old = try Self.workerPID(server)
        try server.sandbox.write("plugins.json", Self.manifest(Self.flaky("none", faultIn: "get", label: "two")))
        let url = "http://127.0.0.1:\(server.port)"
        expectRun(await server.sandbox.run(["reload", "--url", url]), status: 0, stdout: .contains("reload applied", "changed [Flaky]"))
        // The worker the preflight started, and logged, is the one that serves.
        let passed = server.stderr.split(separator: "\n").first { $0.contains("isolated plugin passed its preflight") }
        let checked = passed.flatMap { line in line.split(separator: " ").first { $0.hasPrefix("pid=") }.flatMap { Int32($0.dropFirst(4)) } }
        #expect(checked != nil, "\(server.stderr)")
        #expect(checked != old)
        #expect(try Self.workerPID(server) == checked)
        #expect(server.stderr.contains("the preflight's worker serves the plugin"), "\(server.stderr)")
        let got = try server.client().request("GET", "/v1/objects/seed-1")
        #expect(got.status == 200 && got.header("x-plugboard-generation") == "2")
        #expect(got.header("x-plugboard-meta-x-fixture-label") == nil || got.header("x-plugboard-meta-x-fixture-label") == "two")
        #expect(server.stop() == 0)
    }

    /// Whether the kernel has Landlock: the sandbox's own probe (this target's `Sandbox` is
    /// a test folder, which hides the host's `Sandbox.landlockABI`).
    static var landlock: Bool { plugboard_sandbox_landlock_abi() > 0 }
}
