#if canImport(Glibc)
import Glibc
#endif
import CPlugboardNetwork
import Testing

/// `plugboard serve` under systemd: a datagram socket bound in the test stands in for
/// systemd's `NOTIFY_SOCKET`, and receives READY=1 once serving, RELOADING=1 with
/// MONOTONIC_USEC and READY=1 again around each reload, STOPPING=1 on SIGTERM, and
/// nothing else (the preflight children never speak).
@Suite struct NotifyTests {
    /// A bound datagram socket, as systemd holds one.
    final class FakeSystemd: @unchecked Sendable {
        // @unchecked Sendable: the descriptor is set once; the test reads it on one thread.
        let fd: Int32
        let name: String

        init(name: String) throws {
            fd = plugboard_datagram_bind(name)
            self.name = name
            guard fd >= 0 else { throw FixtureError("binding \(name): \(String(cString: strerror(errno)))") }
        }

        deinit { if fd >= 0 { close(fd) } }

        /// The next datagram, waiting for it at most `timeoutMilliseconds`.
        func next(timeoutMilliseconds: Int32 = 60_000) -> String? {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while true {
                let ready = poll(&poller, 1, timeoutMilliseconds)
                if ready < 0 && errno == EINTR { continue }
                guard ready > 0 else { return nil }
                break
            }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n < 0 ? nil : String(decoding: buffer[0..<n], as: UTF8.self)
        }

        /// Whether a datagram is waiting now.
        var hasMore: Bool {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            return poll(&poller, 1, 0) > 0
        }
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    /// The `KEY=value` lines of a datagram.
    static func fields(_ message: String?) -> [String: String] {
        var fields: [String: String] = [:]
        for line in (message ?? "").split(separator: "\n") {
            guard let eq = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<eq])] = String(line[line.index(after: eq)...])
        }
        return fields
    }

    static func manifest(hotSwap: Bool, latency: Int) -> String {
        """
        {"schemaVersion": 1, "hotSwap": {"enabled": \(hotSwap)},
         "plugins": [\(ServerProcess.memory(latencyMilliseconds: latency))]}
        """
    }

    @Test func readyReloadingReadyStopping_onAPathSocket() throws {
        let folder = try Sandbox("plugboard-notify")
        defer { folder.remove() }
        let systemd = try FakeSystemd(name: folder.path("notify.sock"))
        let server = try ServerProcess(manifest: Self.manifest(hotSwap: true, latency: 0), arguments: ["--no-watch"],
                                       environment: ["NOTIFY_SOCKET": systemd.name])
        let ready = Self.fields(systemd.next())
        #expect(ready["READY"] == "1")
        #expect(ready["STATUS"] == "listening on http://127.0.0.1:\(server.port)")

        // An applied reload: the plugin's config changed.
        try server.sandbox.write("plugins.json", Self.manifest(hotSwap: true, latency: 1))
        let before = Self.monotonicMicroseconds()
        kill(server.pid, SIGHUP)
        let reloading = Self.fields(systemd.next())
        let after = Self.monotonicMicroseconds()
        #expect(reloading["RELOADING"] == "1")
        let stamp = try #require(reloading["MONOTONIC_USEC"].flatMap { UInt64($0) }, "\(reloading)")
        #expect(stamp >= before && stamp <= after)
        let applied = Self.fields(systemd.next())
        #expect(applied["READY"] == "1")
        #expect(applied["STATUS"]?.hasSuffix("reload applied") == true, "\(applied)")

        // A refused reload ends with READY=1 too: the running generation keeps serving.
        try server.sandbox.write("plugins.json", "{ not json")
        kill(server.pid, SIGHUP)
        #expect(Self.fields(systemd.next())["RELOADING"] == "1")
        let refused = Self.fields(systemd.next())
        #expect(refused["READY"] == "1")
        #expect(refused["STATUS"]?.hasSuffix("reload refused") == true, "\(refused)")

        kill(server.pid, SIGTERM)
        #expect(Self.fields(systemd.next())["STOPPING"] == "1")
        #expect(server.waitForExit(timeoutMilliseconds: 30_000) == 0)
        // Everything was said once, by the server alone: no preflight child notified.
        #expect(!systemd.hasMore)
    }

    @Test func abstractSocket_andSIGHUPWithHotSwapOff() throws {
        let name = "@plugboard-notify-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let systemd = try FakeSystemd(name: name)
        let server = try ServerProcess(manifest: Self.manifest(hotSwap: false, latency: 0),
                                       environment: ["NOTIFY_SOCKET": name])
        #expect(Self.fields(systemd.next())["READY"] == "1")
        // systemd's notify-reload sends SIGHUP and waits: the answer comes at once.
        kill(server.pid, SIGHUP)
        #expect(Self.fields(systemd.next())["RELOADING"] == "1")
        let ready = Self.fields(systemd.next())
        #expect(ready["READY"] == "1")
        #expect(ready["STATUS"]?.contains("hot swap is off") == true, "\(ready)")
        #expect(server.stop() == 0)
        #expect(Self.fields(systemd.next())["STOPPING"] == "1")
        #expect(!systemd.hasMore)
    }

    @Test func withoutNotifySocket_servesAsBefore() throws {
        let server = try ServerProcess(environment: ["NOTIFY_SOCKET": ""])
        #expect(try server.client().request("GET", "/healthz").status == 200)
        #expect(server.stop() == 0)
        #expect(!server.stderr.contains("systemd"))
    }
}
