#if canImport(Glibc)
import Glibc
#endif
import PlugboardBytes
import PlugboardHost
import PlugboardJSON
import PlugboardTestSupport
import Testing

/// A fleet host never runs what it has not checked (issue 36, item 0), end to end over a
/// real three-member etcd, one story in order: `fleet set` and `fleet rollout` preflight
/// where they run; a host restarted onto a manifest the running hosts refuse refuses it
/// too and starts from its local copy (or from nothing, not ready); `fleet status` over
/// bad records and an orphaned rollout; a start while etcd has no quorum.
@Suite(.serialized, .enabled(if: EtcdCluster.isInstalled, "etcd not installed: apt-get install etcd-server"))
struct FleetStartTests {
    static let prefix = "/fleet-start"
    static let good = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage"}"#], environment: "testing")
    /// Traps as it registers (fatalError: SIGILL), in whichever process maps it.
    static let crashing = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage"}"#,
                                             #"{"name": "Bad", "product": "MisbehavingPlugin", "config": {"fault": "fatalError"}}"#],
                                            environment: "testing")
    /// A product no build has, on a plugin that is not required.
    static let missingOptional = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage"}"#,
                                                    #"{"name": "Extra", "product": "NoSuchStorage"}"#], environment: "testing")
    /// A plugin whose health check fails.
    static let unhealthy = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage"}"#,
                                              #"{"name": "Sick", "product": "MisbehavingPlugin", "config": {"healthy": false}}"#],
                                             environment: "testing")
    static let other = ManifestText.make([#"{"name": "Mem", "product": "MemoryStorage", "rank": 7}"#], environment: "testing")

    static func digest(_ text: String) throws -> String { try Digest.sha256Hex(Array(text.utf8)) }

    static func status(_ admin: Sandbox, _ fleet: String) async throws -> JSONValue {
        let run = await admin.runExactly(["fleet", "status", "--fleet", fleet, "--json"])
        guard run.status == 0 else { throw FixtureError("fleet status exited \(run.status): \(run.stderr)") }
        return try run.json()
    }

    static func host(_ id: String, in status: JSONValue) -> JSONValue? {
        status["hosts"]?.elements?.first { $0["id"]?.string == id }
    }

    /// Reads `fleet status` until `predicate` holds of it; false after a minute (hung).
    static func waitForStatus(_ admin: Sandbox, _ fleet: String, _ predicate: (JSONValue) -> Bool) async -> Bool {
        let deadline = CommandRunner.monotonicMilliseconds() + 60_000
        while CommandRunner.monotonicMilliseconds() < deadline {
            if let status = try? await status(admin, fleet), predicate(status) { return true }
        }
        return false
    }

    /// Writes `value` under `key` through a member's gateway, as only something other than
    /// plugboard would.
    static func putRaw(_ cluster: EtcdCluster, _ key: String, _ value: [UInt8]) async -> Bool {
        let body = "{\"key\": \"\(Base64.encode(Array(key.utf8)))\", \"value\": \"\(Base64.encode(value))\"}"
        return await LoopbackHTTP.post(port: cluster.members[0].clientPort, path: "/v3/kv/put", body: body, timeoutSeconds: 10) != nil
    }

    /// Whether `key` holds a value.
    static func exists(_ cluster: EtcdCluster, _ key: String) async -> Bool {
        let body = "{\"key\": \"\(Base64.encode(Array(key.utf8)))\"}"
        return await LoopbackHTTP.post(port: cluster.members[0].clientPort, path: "/v3/kv/range", body: body)?.contains("\"kvs\"") == true
    }

    @Test func aHostNeverRunsWhatItHasNotChecked() async throws {
        let cluster = try await EtcdCluster.start()
        defer { cluster.stopAll() }
        let admin = try Sandbox("fleet-start")
        defer { admin.remove() }
        let fleet = "etcd://\(cluster.endpointList)\(Self.prefix)"
        let good = try admin.write("good.json", Self.good), crashing = try admin.write("crashing.json", Self.crashing)
        let goodDigest = try Self.digest(Self.good), crashDigest = try Self.digest(Self.crashing)

        // h1 applies the good manifest, which becomes its local copy.
        #expect(await admin.runExactly(["fleet", "set", good, "--fleet", fleet]).status == 0)
        var h1 = try FleetTests.host("h1", fleet: fleet, state: admin.path("state-h1"))
        #expect(h1.waitForStderr(containing: "fleet: host \"h1\" registered at"), "\(h1.stderr)")

        // fleet set and fleet rollout run the preflight where they run: a refusal, and
        // nothing written.
        let unset = try admin.write("unset.json", ManifestText.make(
            [#"{"name": "Mem", "product": "MemoryStorage", "config": {"label": "${PLUGBOARD_FLEET_TEST_UNSET}"}}"#], environment: "testing"))
        for (command, code) in [(["fleet", "set", crashing], "reload.preflight_crashed"),
                                (["fleet", "rollout", crashing, "--waves", "1,100%", "--bake", "0"], "reload.preflight_crashed"),
                                (["fleet", "set", unset], "manifest.missing_variable")] {
            let refused = await admin.runExactly(command + ["--fleet", fleet, "--json"])
            #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
            #expect(try refused.json()["error"]?["code"]?.string == "fleet.preflight_refused")
            #expect(refused.stdout.contains(code), "\(refused.stdout)")
            #expect(refused.stdout.contains("--no-preflight"))
        }
        let untouched = try await Self.status(admin, fleet)
        #expect(untouched["stable"]?["digest"]?.string == goodDigest)
        #expect(untouched["rollout"]?.isNull == true)
        #expect(await !Self.exists(cluster, "\(Self.prefix)/manifests/\(crashDigest)"))

        // Written past the preflight: the running host refuses it and serves on; restarted,
        // it refuses it the same way and starts from its local copy, where it used to map
        // the plugin and die of SIGILL at every start.
        #expect(await admin.runExactly(["fleet", "set", crashing, "--no-preflight", "--fleet", fleet]).status == 0)
        #expect(h1.waitForStderr(containing: "fleet: refused manifest \(crashDigest)"), "\(h1.stderr)")
        #expect(h1.stop() == 0)
        h1 = try FleetTests.host("h1", fleet: fleet, state: admin.path("state-h1"))
        #expect(h1.stderr.contains("fleet: refused manifest \(crashDigest) at start: reload.preflight_crashed"), "\(h1.stderr)")
        #expect(h1.stderr.contains("starting from the local copy of manifest \(goodDigest)"))
        #expect(try FleetTests.readyz(h1) == 200)
        // A host with no copy starts from nothing and serves not-ready.
        let h2 = try FleetTests.host("h2", fleet: fleet, state: admin.path("state-h2"))
        #expect(h2.stderr.contains("fleet: refused manifest \(crashDigest) at start: reload.preflight_crashed"), "\(h2.stderr)")
        #expect(try FleetTests.readyz(h2) == 503)
        for (id, server) in [("h1", h1), ("h2", h2)] {
            #expect(server.waitForStderr(containing: "fleet: host \"\(id)\" registered at"), "\(server.stderr)")
        }
        let restarted = try await Self.status(admin, fleet)
        for (id, runs, from) in [("h1", goodDigest, "local copy"), ("h2", "", "empty")] {
            let host = Self.host(id, in: restarted)
            #expect(host?["lastReload"]?["outcome"]?.string == "refused", "\(id)")
            #expect(host?["lastReload"]?["digest"]?.string == crashDigest)
            #expect(host?["lastReload"]?["error"]?["code"]?.string == "reload.preflight_crashed")
            #expect(host?["manifestDigest"]?.string == runs)
            #expect(host?["startedFrom"]?.string == from)
        }

        // A manifest it can run arrives: the empty host applies it and is ready.
        #expect(await admin.runExactly(["fleet", "set", good, "--fleet", fleet]).status == 0)
        #expect(h2.waitForStderr(containing: "fleet: applied manifest \(goodDigest)"), "\(h2.stderr)")
        #expect(try FleetTests.readyz(h2) == 200)

        // A missing product that is not required, a failing health check: a restarted
        // host reports them refused, as a running one does, not applied.
        for (name, text) in [("missing-optional.json", Self.missingOptional), ("unhealthy.json", Self.unhealthy)] {
            let path = try admin.write(name, text), digest = try Self.digest(text)
            #expect(await admin.runExactly(["fleet", "set", path, "--no-preflight", "--fleet", fleet]).status == 0)
            for server in [h1, h2] {
                #expect(server.waitForStderr(containing: "fleet: refused manifest \(digest)"), "\(server.stderr)")
            }
            #expect(h1.stop() == 0)
            h1 = try FleetTests.host("h1", fleet: fleet, state: admin.path("state-h1"))
            #expect(h1.waitForStderr(containing: "fleet: host \"h1\" registered at"), "\(h1.stderr)")
            let both = try await Self.status(admin, fleet)
            let (restartedHost, runningHost) = (Self.host("h1", in: both), Self.host("h2", in: both))
            #expect(restartedHost?["lastReload"]?["outcome"]?.string == "refused", "\(name)")
            #expect(restartedHost?["lastReload"]?["digest"]?.string == digest)
            #expect(restartedHost?["manifestDigest"]?.string == goodDigest)
            #expect(runningHost?["lastReload"]?["outcome"]?.string == "refused")
            let code = restartedHost?["lastReload"]?["error"]?["code"]?.string
            #expect(code != nil && code == runningHost?["lastReload"]?["error"]?["code"]?.string, "\(name)")
        }
        #expect(await admin.runExactly(["fleet", "set", good, "--fleet", fleet]).status == 0)

        // A bad stable record is named, not fatal, and the hosts keep their status fresh.
        var probes: Int64 = 0
        for value in [Array("garbage".utf8), Array("{}".utf8), [UInt8](repeating: 0x7B, count: 1_468_006)] {
            #expect(await Self.putRaw(cluster, "\(Self.prefix)/stable", value))
            let shown = await admin.runExactly(["fleet", "status", "--fleet", fleet])
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(shown.stdout.contains("bad record: stable: fleet.record_invalid"), "\(shown.stdout)")
            #expect(shown.stdout.contains("h1") && shown.stdout.contains("h2"))
            for _ in 0..<3 { _ = try? h2.client().request("GET", "/v1/objects/probe") }
            probes += 3
            let counted = probes
            #expect(await Self.waitForStatus(admin, fleet) { (Self.host("h2", in: $0)?["requests"]?.integer ?? 0) >= counted })
        }
        #expect(h2.stderr.contains("fleet: fleet record \"stable\" is invalid"), "\(h2.stderr)")
        #expect(await admin.runExactly(["fleet", "set", good, "--fleet", fleet]).status == 0)

        // A rollout whose controller is killed while its first wave bakes: once its lock
        // lapses, it shows as orphaned and its host as lagging, and fleet set refuses.
        let other = try admin.write("other.json", Self.other), otherDigest = try Self.digest(Self.other)
        var environment = CommandRunner.processEnvironment.filter { !CommandRunner.controlledVariables.contains($0.key) }
        environment["HOME"] = admin.home
        environment["SWIFT_BACKTRACE"] = "enable=no"
        let controller = try ChildProcess.spawn(CommandRunner.executable, ["fleet", "rollout", other, "--fleet", fleet, "--waves", "1,100%",
                                                                           "--bake", "600"],
                                                environment: environment, stdout: .file(admin.path("rollout.log"), append: false),
                                                stderr: .standardOutput)
        #expect(h1.waitForStderr(containing: "fleet: applied manifest \(otherDigest)"), "\(h1.stderr)")
        kill(controller, SIGKILL)
        var reaped: Int32 = 0
        waitpid(controller, &reaped, 0)
        #expect(await Self.waitForStatus(admin, fleet) { $0["rolloutOrphaned"]?.bool == true })
        let orphaned = await admin.runExactly(["fleet", "status", "--fleet", fleet])
        #expect(orphaned.stdout.contains("(orphaned)"), "\(orphaned.stdout)")
        #expect(orphaned.stdout.contains("lagging (on the target \(otherDigest.prefix(12)) of rollout"))
        let orphanedJSON = try await Self.status(admin, fleet)
        #expect(Self.host("h1", in: orphanedJSON)?["lagging"]?.bool == true)
        #expect(Self.host("h2", in: orphanedJSON)?["lagging"]?.bool == false)
        let refusedSet = await admin.runExactly(["fleet", "set", good, "--fleet", fleet, "--json"])
        #expect(refusedSet.status == 1)
        #expect(try refusedSet.json()["error"]?["code"]?.string == "fleet.rollout_orphaned")
        let backBefore = h1.stderrLines(containing: "fleet: applied manifest \(goodDigest)")
        let abort = await admin.runExactly(["fleet", "rollout", "--abort", "--fleet", fleet])
        #expect(abort.status == 0, "\(abort.stderr)")
        #expect(h1.waitForStderr(containing: "fleet: applied manifest \(goodDigest)", times: backBefore + 1), "\(h1.stderr)")
        #expect(await admin.runExactly(["fleet", "set", good, "--fleet", fleet]).status == 0)

        // etcd without quorum: a restarted host starts from its local copy after a short
        // wait, not after the client's retries.
        #expect(h1.stop() == 0)
        cluster.stop(member: 1)
        cluster.stop(member: 2)
        h1 = try FleetTests.host("h1", fleet: fleet, state: admin.path("state-h1"))
        #expect(h1.stderr.contains("fleet: etcd did not hand over the desired manifest within 2 s"), "\(h1.stderr)")
        #expect(h1.stderr.contains("fleet: starting from the local copy of manifest \(goodDigest)"))
        #expect(try FleetTests.readyz(h1) == 200)
    }
}
