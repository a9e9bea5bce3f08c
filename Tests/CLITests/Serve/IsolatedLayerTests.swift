#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport
import Testing

/// A layer (`wraps`) run isolated under `plugboard serve`, over a FileStorage in process or
/// in a worker of its own: the client sees what it sees with everything in process; a crash
/// of either worker leaves the other up, and one of the storage below reaches the layer as
/// `storage.unavailable`; bodies stream through with the host's memory bounded.
@Suite struct IsolatedLayerTests {
    static func files(isolated: Bool) -> String {
        let isolation = isolated ? #""isolation": "process", "sandbox": {"readWrite": ["data"]}, "# : ""
        return #"{"name": "Files", "product": "FileStorage", \#(isolation)"config": {"root": "data"}}"#
    }

    /// QuotaStorage over `wraps`; isolated without a spare (its count is its process's:
    /// MANIFEST.md, `worker.spare`).
    static func quota(isolated: Bool, wraps: String = "Files", maxBytes: Int = 100_000_000) -> String {
        let isolation = isolated ? #""isolation": "process", "worker": {"spare": false}, "# : ""
        return #"{"name": "Quota", "product": "QuotaStorage", "wraps": "\#(wraps)", \#(isolation)"config": {"maxObjects": 4, "maxBytes": \#(maxBytes)}}"#
    }

    /// The serving worker's process id of `plugin`, from `/v1/admin/plugins` (one member a
    /// line: the first `"pid"` after the plugin's name).
    static func workerPID(_ server: ServerProcess, _ plugin: String) throws -> Int32? {
        let lines = try server.client().request("GET", "/v1/admin/plugins").text.split(separator: "\n")
        guard let start = lines.firstIndex(where: { $0.contains(#""name": "\#(plugin)""#) }) else { return nil }
        return lines[start...].first { $0.contains(#""pid":"#) }.flatMap { Int32($0.filter(\.isNumber)) }
    }

    /// What a client sees of every kind of call through the layer: statuses, codes, and the
    /// headers and bodies that do not depend on the time.
    static func exercise(_ server: ServerProcess) throws -> [String] {
        var seen: [String] = []
        func record(_ what: String, _ r: RawResponse) {
            let headers = ["etag", "content-range", "content-type", "x-plugboard-meta-author"]
                .map { "\($0)=\(r.header($0) ?? "-")" }.joined(separator: " ")
            // A put answers the stored object's info, whose time is the put's own.
            let body = what.hasPrefix("put") && r.status < 300 ? "" : " body=\(r.body.count) sum=\(r.body.reduce(0) { $0 &+ Int($1) })"
            seen.append("\(what): \(r.status) \(r.errorCode ?? "") \(headers)\(body)")
        }
        func send(_ method: String, _ key: String, _ headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> RawResponse {
            try server.client().request(method, "/v1/objects/\(key)", headers: headers, body: body)
        }
        var generator = SplitMix64(state: 31)
        let big = (0..<(3 << 20)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        record("put a", try send("PUT", "docs%2Fa", [("Content-Type", "text/plain"), ("X-Plugboard-Meta-Author", "ada")], body: Array("alpha".utf8)))
        record("put big", try send("PUT", "big", [("Content-Type", "application/octet-stream")], body: big))
        record("put a if absent", try send("PUT", "docs%2Fa", [("If-None-Match", "*")], body: Array("again".utf8)))
        record("get a", try send("GET", "docs%2Fa"))
        let whole = try send("GET", "big")
        record("get big", whole)
        #expect(whole.body == big)
        record("get range", try send("GET", "big", [("Range", "bytes=1000-1999")]))
        record("get suffix", try send("GET", "big", [("Range", "bytes=-100")]))
        record("get past the end", try send("GET", "big", [("Range", "bytes=\(big.count + 10)-")]))
        record("head a", try send("HEAD", "docs%2Fa"))
        record("head missing", try send("HEAD", "missing"))
        let listing = try server.client().request("GET", "/v1/objects?prefix=docs%2F")
        seen.append("list: \(listing.status) \(listing.text.ranges(of: #""key""#).count) keys, docs/a \(listing.text.contains("docs/a"))")
        record("put c", try send("PUT", "c", body: [1]))
        record("put d", try send("PUT", "d", body: [2]))
        record("put e past the quota", try send("PUT", "e", body: [3]))
        record("delete a", try send("DELETE", "docs%2Fa"))
        record("get a deleted", try send("GET", "docs%2Fa"))
        return seen
    }

    @Test(arguments: [false, true])
    func anIsolatedLayer_answersAsInProcess(innerIsolated: Bool) throws {
        let reference = try ServerProcess(plugins: [Self.files(isolated: false), Self.quota(isolated: false)])
        let expected = try Self.exercise(reference)
        #expect(reference.stop() == 0)
        let server = try ServerProcess(plugins: [Self.files(isolated: innerIsolated), Self.quota(isolated: true)])
        let seen = try Self.exercise(server)
        #expect(seen == expected)
        #expect(seen.contains { $0.hasPrefix("put e past the quota: 403 quota.exceeded") }, "\(seen)")
        let layer = try #require(try Self.workerPID(server, "Quota"))
        #expect(layer != server.pid)
        if innerIsolated { #expect(try Self.workerPID(server, "Files").map { $0 != layer && $0 != server.pid } == true) }
        let services = try server.client().request("GET", "/v1/admin/services").text
        #expect(services.contains(#""owner": "Quota""#) && services.contains(#""wraps": "Files""#), "\(services)")
        #expect(server.stderrLines(containing: "isolated plugin's worker ended") == 0, "\(server.stderr)")
        #expect(server.stop() == 0)
    }

    @Test func theLayersWorkerCrashing_leavesWhatItWrapsUp() throws {
        let server = try ServerProcess(plugins: [
            Self.files(isolated: true),
            #"{"name": "Flaky", "product": "MisbehavingPlugin", "wraps": "Files", "isolation": "process", "worker": {"maxCrashes": 1000}, "#
                + #""config": {"layer": true, "fault": "segfault", "faultIn": "get", "faultKey": "boom"}}"#,
        ])
        let files = try #require(try Self.workerPID(server, "Files"))
        let put = try server.client().request("PUT", "/v1/objects/a", headers: [("Content-Type", "text/plain")], body: Array("a".utf8))
        #expect(put.status == 200 || put.status == 201, "\(put.text)")
        let poisoned = try server.client().request("GET", "/v1/objects/boom")
        #expect(poisoned.status == 503 && poisoned.errorCode == "storage.unavailable", "\(poisoned.text)")
        #expect(try IsolationTests.get(server, "a").text == "a")
        #expect(server.waitForStderr(containing: "reason=signal"))
        #expect(server.stderr.contains(#"plugin "Flaky"'s worker"#) && server.stderr.contains("serving get boom"), "\(server.stderr)")
        #expect(!server.stderr.contains(#"plugin "Files"'s worker"#), "\(server.stderr)")
        #expect(try Self.workerPID(server, "Files") == files)
        #expect(server.stop() == 0)
    }

    @Test func theWrappedWorkerCrashingUnderTheLayersCall_isStorageUnavailable_andTheLayerStaysUp() throws {
        let server = try ServerProcess(plugins: [
            IsolationTests.flaky("segfault"),
            Self.quota(isolated: true, wraps: "Flaky"),
        ])
        let layer = try #require(try Self.workerPID(server, "Quota"))
        #expect(try IsolationTests.get(server, "seed-3").text == "seed 3")
        let poisoned = try server.client().request("GET", "/v1/objects/boom")
        // What the in-process layer gets from the isolated storage below: its worker's only
        // call, not sent again.
        #expect(poisoned.status == 503 && poisoned.errorCode == "storage.unavailable", "\(poisoned.text)")
        #expect(try IsolationTests.get(server, "seed-4").text == "seed 4")
        #expect(server.waitForStderr(containing: "reason=signal"))
        #expect(server.stderr.contains(#"plugin "Flaky"'s worker"#), "\(server.stderr)")
        #expect(!server.stderr.contains(#"plugin "Quota"'s worker"#), "\(server.stderr)")
        #expect(try Self.workerPID(server, "Quota") == layer)
        #expect(server.stop() == 0)
    }

    @Test func aLargeBodyStreamsThroughAnIsolatedLayer_withTheHostsMemoryBounded() throws {
        let server = try ServerProcess(plugins: [Self.files(isolated: true), Self.quota(isolated: true, maxBytes: 1 << 30)])
        let count = 64 << 20
        var generator = SplitMix64(state: 64)
        let body = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        let memory = MemoryWatch("\(server.pid)")
        let put = try server.client().request("PUT", "/v1/objects/large", headers: [("Content-Type", "application/octet-stream")], body: body)
        #expect(put.status == 200 || put.status == 201, "\(put.text)")
        memory.sample()
        let got = try server.client().request("GET", "/v1/objects/large")
        #expect(got.status == 200 && got.body.count == count && got.body == body)
        let growth = memory.peakGrowth
        // A window a stream each way, not the body: far below its 64 MiB.
        #expect(growth < 24 << 20, "the host grew by \(growth >> 20) MiB (\(memory.peakText)) for a 64 MiB body")
        #expect(server.stop() == 0)
    }

    @Test func aReloadOfTheWrappedPlugin_rebuildsTheIsolatedLayerOverItsNewBuild() async throws {
        func manifest(_ root: String) -> String {
            #"{"schemaVersion": 1, "hotSwap": {"enabled": true}, "plugins": [{"name": "Files", "product": "FileStorage", "config": {"root": "\#(root)"}}, "#
                + Self.quota(isolated: true) + "]}"
        }
        let server = try ServerProcess(manifest: manifest("one"), arguments: ["--no-watch"])
        let put = try server.client().request("PUT", "/v1/objects/a", headers: [("Content-Type", "text/plain")], body: Array("a".utf8))
        #expect(put.status == 200 || put.status == 201, "\(put.text)")
        let before = try #require(try Self.workerPID(server, "Quota"))
        let generation = try #require(Int(try server.client().request("GET", "/v1/objects/a").header("x-plugboard-generation") ?? ""))
        try server.sandbox.write("plugins.json", manifest("two"))
        let url = "http://127.0.0.1:\(server.port)"
        expectRun(await server.sandbox.run(["reload", "--url", url]), status: 0, stdout: .contains("reload applied"))
        // The layer's new worker is over the new build: an empty folder.
        let after = try server.client().request("GET", "/v1/objects/a")
        #expect(after.status == 404, "\(after.status) \(after.text)")
        let again = try server.client().request("PUT", "/v1/objects/b", headers: [("Content-Type", "text/plain")], body: Array("b".utf8))
        #expect(again.status == 200 || again.status == 201, "\(again.text)")
        let got = try server.client().request("GET", "/v1/objects/b")
        #expect(got.text == "b" && got.header("x-plugboard-generation") == String(generation + 1), "\(got.status) \(got.text)")
        #expect(try Self.workerPID(server, "Quota").map { $0 != before } == true)
        #expect(server.stderrLines(containing: "isolated plugin's worker ended") == 0, "\(server.stderr)")
        #expect(server.stop() == 0)
    }

    @Test func aHotSwapOfTheWrappedPluginUnderLoad_failsNoRequestThroughTheIsolatedLayer() async throws {
        // A new build of Files: the same folder, another config (fsync), so the reload swaps
        // it and rebuilds the layer above it.
        func manifest(fsync: Bool) -> String {
            #"{"schemaVersion": 1, "hotSwap": {"enabled": true}, "plugins": [{"name": "Files", "product": "FileStorage", "isolation": "process", "#
                + #""sandbox": {"readWrite": ["data"]}, "config": {"root": "data", "fsync": \#(fsync)}}, "# + Self.quota(isolated: true) + "]}"
        }
        let server = try ServerProcess(manifest: manifest(fsync: false), arguments: ["--no-watch"])
        for i in 0..<4 {
            let put = try server.client().request("PUT", "/v1/objects/k\(i)", headers: [("Content-Type", "text/plain")], body: Array("v\(i)".utf8))
            #expect(put.status == 200 || put.status == 201, "\(put.text)")
        }
        let layer = try #require(try Self.workerPID(server, "Quota"))
        let stop = LockedFlag()
        let load = IsolationTests.getLoad(server, until: stop) { ("k\($0 % 4)", "v\($0 % 4)") }
        try server.sandbox.write("plugins.json", manifest(fsync: true))
        let url = "http://127.0.0.1:\(server.port)"
        expectRun(await server.sandbox.run(["reload", "--url", url]), status: 0, stdout: .contains("reload applied"))
        stop.set()
        let (served, failed) = await load.value
        #expect(failed == 0 && served >= 90, "served \(served), failed \(failed)")
        // The layer was rebuilt over the new build of Files, in a new worker.
        #expect(try Self.workerPID(server, "Quota").map { $0 != layer } == true)
        #expect(server.stderrLines(containing: "isolated plugin's worker ended") == 0, "\(server.stderr)")
        #expect(server.stop() == 0)
    }
}
