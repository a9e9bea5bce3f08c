import PlugboardAPI
@testable import PlugboardHost
import Testing

/// The reload's decisions alone: no file, no `dlopen`, no container. Each test plays the
/// host's part (what staging found, the child's verdicts, what mapping did) and checks
/// the actions the machine answers with.
@Suite struct ReloadStateMachineTests {
    // MARK: - A world without files

    static func manifest(_ plugins: [String]) throws -> Manifest {
        let text = #"{"schemaVersion": 1, "environment": "testing", "hotSwap": {"enabled": true}, "plugins": [\#(plugins.joined(separator: ", "))]}"#
        return try Manifest.parse(bytes: Array(text.utf8), path: "/srv/plugins.json")
    }

    static func plugin(_ name: String, requires: [String] = [], required: Bool = false, config: String = "{}") -> String {
        let list = requires.map { "\"\($0)\"" }.joined(separator: ", ")
        return #"{"name": "\#(name)", "path": "/plugins/lib\#(name).so", "environments": ["testing"], "requires": [\#(list)], "required": \#(required), "config": \#(config)}"#
    }

    static func staged(_ name: String, _ sha: String) -> StagingResult {
        let inspection = PluginInspection(path: "/plugins/lib\(name).so", sha256: sha, size: 1, header: nil, toolchain: nil,
                                          neededLibraries: [])
        return StagingResult(path: "/plugins/lib\(name).so", sha256: sha,
                             result: .success(StagedPlugin(name: name, inspection: inspection, loadPath: "/cache/\(sha).so")))
    }

    static func refused(_ name: String, _ sha: String?, _ error: PlugboardError) -> StagingResult {
        StagingResult(path: "/plugins/lib\(name).so", sha256: sha, result: .failure(error))
    }

    /// What runs: `manifest` loaded from `stagings`, each plugin in `states` (active
    /// unless said otherwise), as generation 1.
    static func running(_ manifest: Manifest, _ stagings: [String: StagingResult],
                        states: [String: PluginState] = [:]) -> PluginHost.State {
        let selected = manifest.selectedPlugins(for: .testing)
        let records = manifest.plugins.map { p -> PluginRecord in
            var record = PluginRecord(name: p.name, state: states[p.name] ?? .active, path: stagings[p.name]?.path,
                                      sha256: stagings[p.name]?.sha256)
            record.generation = 1
            if record.state != .active { record.error = PlugboardError(.loadFailed, "\(p.name) failed before") }
            return record
        }
        return PluginHost.State(manifest: manifest, manifestDigest: "digest-1", records: records,
                                fingerprints: PluginFingerprint.all(selected, stagings))
    }

    static func next(_ manifest: Manifest, _ stagings: [String: StagingResult], digest: String = "digest-2",
                     secrets: SecretScrubber = .none) -> ReloadStateMachine.Next {
        .init(manifest: manifest, digest: digest, environment: .testing,
              configs: Dictionary(manifest.plugins.map { ($0.name, PluginConfig(plugin: $0.name)) }, uniquingKeysWith: { a, _ in a }),
              secrets: secrets, stagings: stagings)
    }

    static func active(_ name: String) -> PluginRecord { PluginRecord(name: name, state: .active) }

    // MARK: - Tests

    @Test func sameManifestAndFiles_finishUnchanged_withoutAnyWork() throws {
        let manifest = try Self.manifest([Self.plugin("A"), Self.plugin("B")])
        let stagings = ["A": Self.staged("A", "a1"), "B": Self.staged("B", "b1")]
        var machine = ReloadStateMachine(current: Self.running(manifest, stagings), next: Self.next(manifest, stagings, digest: "digest-1"))
        guard case .finishUnchanged = machine.start() else { Issue.record("expected finishUnchanged"); return }
        #expect(machine.plan.toLoad.isEmpty && machine.plan.retiring.isEmpty)
    }

    @Test func aChangedFile_isCheckedWithItsProviders_mapped_committedAsOne_andAdopted() throws {
        let manifest = try Self.manifest([Self.plugin("Base"), Self.plugin("Top", requires: ["Base"]), Self.plugin("Other")])
        let before = ["Base": Self.staged("Base", "base1"), "Top": Self.staged("Top", "top1"), "Other": Self.staged("Other", "o1")]
        var after = before
        after["Top"] = Self.staged("Top", "top2")
        var machine = ReloadStateMachine(current: Self.running(manifest, before), next: Self.next(manifest, after, digest: "digest-1"))

        guard case .preflight(let candidates) = machine.start() else { Issue.record("expected a preflight"); return }
        // The unchanged provider goes with it into the child, before it; the unrelated plugin does not.
        #expect(candidates.map(\.name) == ["Base", "Top"])
        #expect(candidates.map(\.path) == ["/cache/base1.so", "/cache/top2.so"])
        #expect(candidates.map(\.sha256) == ["base1", "top2"])

        guard case .map(let load) = machine.preflightFinished(["Base": Self.active("Base"), "Top": Self.active("Top")]) else {
            Issue.record("expected a map"); return
        }
        #expect(load.staged.name == "Top" && load.staged.loadPath == "/cache/top2.so")

        guard case .commit(let retiring, let publishing) = machine.mapped(PluginRecord(name: "Top", state: .failed), registered: true) else {
            Issue.record("expected a commit"); return
        }
        #expect(retiring == ["Top"] && publishing == ["Top"])

        var loaded = Self.active("Top")
        loaded.sha256 = "top2"
        guard case .adopt(let adoption) = machine.committed(generation: 2, activated: [loaded]) else {
            Issue.record("expected an adoption"); return
        }
        #expect(adoption.outcome == .applied)
        #expect(adoption.drainThrough == 2)
        #expect(adoption.loaded.map(\.name) == ["Top"])
        #expect(adoption.retired.map(\.name) == ["Top"] && adoption.retired.allSatisfy { $0.state == .retired })
        #expect(adoption.state.records.map(\.name) == ["Base", "Top", "Other"])
        #expect(adoption.state.records.first { $0.name == "Top" }?.sha256 == "top2")
        #expect(adoption.state.fingerprints["Top"]?.sha256 == "top2")
        #expect(machine.plan.changed == ["Top"] && machine.plan.added.isEmpty && machine.plan.removed.isEmpty)
    }

    @Test func aChangedProvider_reloadsItsDependentsToo() throws {
        let manifest = try Self.manifest([Self.plugin("Base"), Self.plugin("Top", requires: ["Base"])])
        let before = ["Base": Self.staged("Base", "base1"), "Top": Self.staged("Top", "top1")]
        var after = before
        after["Base"] = Self.staged("Base", "base2")
        var machine = ReloadStateMachine(current: Self.running(manifest, before), next: Self.next(manifest, after))
        guard case .preflight(let candidates) = machine.start() else { Issue.record("expected a preflight"); return }
        #expect(candidates.map(\.name) == ["Base", "Top"])
        #expect(machine.plan.changed == ["Base", "Top"])
        #expect(Set(machine.plan.retiring) == ["Base", "Top"])
    }

    @Test func aChangedPluginThatCannotBeStaged_refusesTheReload_withItsError() throws {
        let manifest = try Self.manifest([Self.plugin("A")])
        let before = ["A": Self.staged("A", "a1")]
        let pin = PlugboardError(.checksumMismatch, "plugin \"A\": file does not match its sha256 pin")
        var machine = ReloadStateMachine(current: Self.running(manifest, before),
                                         next: Self.next(manifest, ["A": Self.refused("A", "a2", pin)]))
        guard case .refuse(let error) = machine.start() else { Issue.record("expected a refusal"); return }
        #expect(error.code == .checksumMismatch)
        // Refused is final: no later event does anything.
        guard case .refuse = machine.preflightFinished([:]) else { Issue.record("expected a refusal"); return }
    }

    @Test func aChangedPluginThatFailsItsPreflight_refuses_withTheChildsVerdict() throws {
        let manifest = try Self.manifest([Self.plugin("A")])
        var machine = ReloadStateMachine(current: Self.running(manifest, ["A": Self.staged("A", "a1")]),
                                         next: Self.next(manifest, ["A": Self.staged("A", "a2")]))
        guard case .preflight = machine.start() else { Issue.record("expected a preflight"); return }
        let verdict = PluginRecord(name: "A", state: .failed, error: PlugboardError(.preflightCrashed, "plugin \"A\" crashed in preflight: SIGSEGV"))
        guard case .refuse(let error) = machine.preflightFinished(["A": verdict]) else { Issue.record("expected a refusal"); return }
        #expect(error.code == .preflightCrashed)
    }

    @Test func aFailedPluginTriedAgain_mayFailAgain_andTheReloadSaysUnchanged() throws {
        let manifest = try Self.manifest([Self.plugin("Good"), Self.plugin("Flaky")])
        let stagings = ["Good": Self.staged("Good", "g1"), "Flaky": Self.staged("Flaky", "f1")]
        var machine = ReloadStateMachine(current: Self.running(manifest, stagings, states: ["Flaky": .failed]),
                                         next: Self.next(manifest, stagings, digest: "digest-1"))
        guard case .preflight(let candidates) = machine.start() else { Issue.record("expected a preflight (a retry)"); return }
        #expect(candidates.map(\.name) == ["Flaky"])
        let again = PluginRecord(name: "Flaky", state: .failed, error: PlugboardError(.healthCheckFailed, "still unhealthy"))
        guard case .commit(let retiring, let publishing) = machine.preflightFinished(["Flaky": again]) else {
            Issue.record("expected an (empty) commit"); return
        }
        #expect(retiring.isEmpty && publishing.isEmpty)
        guard case .adopt(let adoption) = machine.committed(generation: 1, activated: []) else { Issue.record("expected an adoption"); return }
        #expect(adoption.outcome == .unchanged)
        #expect(adoption.drainThrough == nil)
        let flaky = adoption.state.records.first { $0.name == "Flaky" }
        #expect(flaky?.state == .failed && flaky?.error?.code == .healthCheckFailed)
        #expect(machine.plan.retry == ["Flaky"])
    }

    @Test func aRetryWhoseFileCannotBeStaged_failsAgainAsRejected_withoutRefusing() throws {
        let manifest = try Self.manifest([Self.plugin("Good"), Self.plugin("Gone")])
        let gone = PlugboardError(.pluginFileNotFound, "could not access file of plugin \"Gone\"")
        let stagings = ["Good": Self.staged("Good", "g1"), "Gone": Self.refused("Gone", nil, gone)]
        var machine = ReloadStateMachine(current: Self.running(manifest, stagings, states: ["Gone": .rejected]),
                                         next: Self.next(manifest, stagings, digest: "digest-1"))
        guard case .preflight(let candidates) = machine.start() else { Issue.record("expected a preflight"); return }
        #expect(candidates.isEmpty)
        guard case .commit = machine.preflightFinished([:]) else { Issue.record("expected a commit"); return }
        guard case .adopt(let adoption) = machine.committed(generation: 1, activated: []) else { Issue.record("expected an adoption"); return }
        let record = adoption.state.records.first { $0.name == "Gone" }
        #expect(record?.state == .rejected && record?.error?.code == .pluginFileNotFound)
    }

    @Test func passingThePreflightButFailingInTheHost_refuses_andNamesBoth() throws {
        let manifest = try Self.manifest([Self.plugin("A"), Self.plugin("B")])
        let before = ["A": Self.staged("A", "a1"), "B": Self.staged("B", "b1")]
        var machine = ReloadStateMachine(current: Self.running(manifest, before),
                                         next: Self.next(manifest, ["A": Self.staged("A", "a2"), "B": Self.staged("B", "b2")]))
        guard case .preflight = machine.start() else { Issue.record("expected a preflight"); return }
        guard case .map(let first) = machine.preflightFinished(["A": Self.active("A"), "B": Self.active("B")]) else {
            Issue.record("expected a map"); return
        }
        #expect(first.staged.name == "A")
        var failed = PluginRecord(name: "A", state: .failed)
        failed.error = PlugboardError(.dlopenFailed, "could not load library of plugin \"A\"")
        guard case .refuse(let error) = machine.mapped(failed, registered: false) else { Issue.record("expected a refusal"); return }
        #expect(error.code == .loadFailed)
        #expect(error.message.contains("passed its preflight but failed to load in the host"))
        #expect(error.detail?.contains("loader.dlopen_failed") == true)
    }

    @Test func aRequiredPluginThatWouldNotBeActive_refuses() throws {
        let manifest = try Self.manifest([Self.plugin("Store", required: true)])
        var machine = ReloadStateMachine(current: Self.running(manifest, ["Store": Self.staged("Store", "s1")], states: ["Store": .failed]),
                                         next: Self.next(manifest, ["Store": Self.staged("Store", "s1")]))
        guard case .preflight = machine.start() else { Issue.record("expected a preflight (a retry)"); return }
        let again = PluginRecord(name: "Store", state: .failed, error: PlugboardError(.healthCheckFailed, "unhealthy"))
        guard case .refuse(let error) = machine.preflightFinished(["Store": again]) else { Issue.record("expected a refusal"); return }
        #expect(error.code == .requiredNotActive)
        #expect(error.message.contains("required plugin \"Store\" would not be active"))
    }

    @Test func aRemovedPlugin_isRetiredInOneCommit_withoutAPreflight() throws {
        let before = try Self.manifest([Self.plugin("A"), Self.plugin("B")])
        let after = try Self.manifest([Self.plugin("A")])
        let stagings = ["A": Self.staged("A", "a1"), "B": Self.staged("B", "b1")]
        var machine = ReloadStateMachine(current: Self.running(before, stagings), next: Self.next(after, ["A": Self.staged("A", "a1")]))
        guard case .commit(let retiring, let publishing) = machine.start() else { Issue.record("expected a commit"); return }
        #expect(retiring == ["B"] && publishing.isEmpty)
        guard case .adopt(let adoption) = machine.committed(generation: 2, activated: []) else { Issue.record("expected an adoption"); return }
        #expect(adoption.outcome == .applied && adoption.drainThrough == 2)
        #expect(adoption.state.records.map(\.name) == ["A"])
        #expect(machine.plan.removed == ["B"])
    }

    @Test func aFailedCommit_refuses_withSecretsScrubbed() throws {
        let manifest = try Self.manifest([Self.plugin("A")])
        var machine = ReloadStateMachine(current: Self.running(manifest, ["A": Self.staged("A", "a1")]),
                                         next: Self.next(manifest, ["A": Self.staged("A", "a2")],
                                                         secrets: SecretScrubber(secrets: ["hunter2-hunter2"])))
        _ = machine.start()
        _ = machine.preflightFinished(["A": Self.active("A")])
        guard case .commit = machine.mapped(PluginRecord(name: "A", state: .failed), registered: true) else {
            Issue.record("expected a commit"); return
        }
        let failure = PlugboardError(.startFailed, "could not connect with password hunter2-hunter2")
        guard case .refuse(let error) = machine.commitFailed(failure) else { Issue.record("expected a refusal"); return }
        #expect(!error.message.contains("hunter2-hunter2"))
    }

    @Test func anEventOutOfOrder_refusesRatherThanGuessing() throws {
        let manifest = try Self.manifest([Self.plugin("A")])
        var machine = ReloadStateMachine(current: Self.running(manifest, ["A": Self.staged("A", "a1")]),
                                         next: Self.next(manifest, ["A": Self.staged("A", "a2")]))
        guard case .refuse(let error) = machine.committed(generation: 2, activated: []) else { Issue.record("expected a refusal"); return }
        #expect(error.message.contains("out of order"))
    }
}
