import Glibc
import PlugboardConcurrency
import Testing
@testable import PlugboardHTTPClient

/// When a connection goes back to the pool and when it does not, against a real server.
@Suite struct PlainHTTPPoolTests {
    static func server(together: Int = 6) throws -> ScriptedHTTPServer {
        // The "/together" requests that have arrived.
        let arrivals = Occurrences()
        return try ScriptedHTTPServer { line in
            let reply = { (text: String, close: Bool) in ScriptedHTTPServer.Reply(bytes: Array(text.utf8), close: close) }
            switch line {
            case "GET /keep HTTP/1.1": return reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
            case "HEAD /keep HTTP/1.1": return reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n", false)
            case "GET /chunked HTTP/1.1": return reply("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false)
            case "GET /close HTTP/1.1": return reply("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", true)
            case "GET /until-close HTTP/1.1": return reply("HTTP/1.1 200 OK\r\n\r\nok", true)
            case "GET /drop-after HTTP/1.1": return reply("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true)
            case "GET /moved HTTP/1.1": return reply("HTTP/1.1 301 Moved Permanently\r\nLocation: http://elsewhere/\r\nContent-Length: 0\r\n\r\n", false)
            case "GET /together HTTP/1.1":
                arrivals.signal()
                let all = arrivals.waitBlocking(for: together)
                return reply("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n" + (all ? "all" : "not"), false)
            case "GET /hang HTTP/1.1":
                // Silence until the client gives up: what a timeout or a cancellation ends.
                return ScriptedHTTPServer.Reply(bytes: [], close: true, hold: true)
            default: return reply("SSH-2.0-nonsense\r\n\r\n", true)
            }
        }
    }

    static func request(_ target: String, method: String = "GET", port: Int) -> PlainHTTPRequest {
        PlainHTTPRequest(method: method, host: "127.0.0.1", port: port, hostHeader: "127.0.0.1:\(port)", target: target,
                         headers: [], body: [], sendsLength: false)
    }

    @Test func keepAliveConnectionsAreReused() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 5)
        for target in ["/keep", "/chunked", "/keep", "/moved"] {
            let response = try await client.perform(Self.request(target, port: server.port))
            #expect(response.body == (target == "/moved" ? [] : Array("ok".utf8)))
        }
        // A HEAD's Content-Length announces no body: the connection stays usable.
        let head = try await client.perform(Self.request("/keep", method: "HEAD", port: server.port))
        #expect(head.body.isEmpty && head.headers["content-length"] == "2")
        _ = try await client.perform(Self.request("/keep", port: server.port))
        #expect(server.acceptedConnections == 1)
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 1)
    }

    @Test func redirectsAreAnswersNotFollowed() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let response = try await PlainHTTPClient(timeoutSeconds: 5).perform(Self.request("/moved", port: server.port))
        #expect(response.status == 301 && response.headers["location"] == "http://elsewhere/")
    }

    @Test func closedOrCloseDelimitedConnectionsAreNotReused() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 5)
        let key = "127.0.0.1:\(server.port)"
        _ = try await client.perform(Self.request("/close", port: server.port))
        #expect(client.pool.idleCount(key) == 0)
        let untilClose = try await client.perform(Self.request("/until-close", port: server.port))
        #expect(untilClose.body == Array("ok".utf8) && client.pool.idleCount(key) == 0)
        _ = try await client.perform(Self.request("/keep", port: server.port))
        #expect(server.acceptedConnections == 3)
    }

    @Test func failedExchangesDropTheirConnection() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 5)
        _ = try await client.perform(Self.request("/keep", port: server.port))
        await #expect(throws: PlainHTTPError.badResponse(expected: "an HTTP/1.x status line", found: "\"SSH-2.0-nonsense\"")) {
            try await client.perform(Self.request("/garbage", port: server.port))
        }
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 0)
        _ = try await client.perform(Self.request("/keep", port: server.port))
        #expect(server.acceptedConnections == 2)
    }

    @Test func aConnectionTheServerClosedWhileIdleIsReplaced() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 5)
        // The answer says keep-alive, then the server hangs up: the pooled socket is dead.
        _ = try await client.perform(Self.request("/drop-after", port: server.port))
        try #require(await server.closedConnections.wait(for: 1), "the server did not hang up")
        let response = try await client.perform(Self.request("/keep", port: server.port))
        #expect(response.body == Array("ok".utf8) && server.acceptedConnections == 2)
    }

    @Test func exchangesInParallelDoNotWaitForOneAnother() async throws {
        // Each answer waits until all six requests have arrived: they only come back "all"
        // if six exchanges (three times the cores here) block in receive at once.
        let server = try Self.server(together: 6)
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 60)
        let bodies = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<6 {
                group.addTask { try await client.perform(Self.request("/together", port: server.port)).body }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies == Array(repeating: Array("all".utf8), count: 6))
        #expect(server.acceptedConnections == 6 && client.pool.idleCount("127.0.0.1:\(server.port)") == 4)
    }

    @Test func silenceIsATimeout() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: PlainHTTPError.timedOut) {
            try await PlainHTTPClient(timeoutSeconds: 0.3).perform(Self.request("/hang", port: server.port))
        }
        // A liveness bound, loose enough for a loaded machine: beside the whole suite this
        // has taken 58-75 s (0.3 s alone), the exchange waiting for a thread to run on.
        #expect(clock.now - start < .seconds(240), "the server never answers; the timeout is 0.3 s")
    }

    @Test func cancellationShutsTheSocketDown() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 300)
        let task = Task { try await client.perform(Self.request("/hang", port: server.port)) }
        // Cancelled while waiting for the answer, not before the request is sent.
        try #require(await server.requests.wait(for: 1), "the request did not arrive")
        let clock = ContinuousClock()
        let start = clock.now
        task.cancel()
        let result = await task.result
        #expect(clock.now - start < .seconds(240), "the server never answers, the timeout is 300 s")
        #expect(throws: PlainHTTPError.cancelled) { try result.get() }
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 0)
    }

    @Test func aConnectNobodyAnswersTimesOutAndCanBeCancelled() async throws {
        let listener = try FullListener()
        let clock = ContinuousClock()
        var start = clock.now
        await #expect(throws: PlainHTTPError.timedOut) {
            try await PlainHTTPClient(timeoutSeconds: 0.5).perform(Self.request("/keep", port: listener.port))
        }
        #expect(clock.now - start < .seconds(240))
        let port = listener.port
        let task = Task { try await PlainHTTPClient(timeoutSeconds: 300).perform(Self.request("/keep", port: port)) }
        // Cancelled during the connect: once the kernel has a SYN out to the full listener.
        try #require(await listener.waitForAConnectInProgress(), "no connect to port \(listener.port) started")
        start = clock.now
        task.cancel()
        let result = await task.result
        #expect(clock.now - start < .seconds(240), "the connect timeout is 300 s")
        #expect(throws: PlainHTTPError.cancelled) { try result.get() }
    }

    @Test func thePoolKeepsAtMostItsBound() throws {
        let server = try Self.server()
        defer { server.stop() }
        let pool = PlainHTTPPool(maxIdlePerHost: 2)
        for _ in 0..<3 {
            pool.put(try PlainHTTPSocket.connect(host: "127.0.0.1", port: server.port, timeoutSeconds: 5), "k")
        }
        #expect(pool.idleCount("k") == 2)
        pool.close()
        #expect(pool.idleCount("k") == 0)
        pool.put(try PlainHTTPSocket.connect(host: "127.0.0.1", port: server.port, timeoutSeconds: 5), "k")
        #expect(pool.idleCount("k") == 0, "a closed pool keeps nothing")
    }

    @Test func nobodyListeningIsCannotConnect() async throws {
        let server = try Self.server()
        server.stop()
        let port = server.port
        await #expect {
            try await PlainHTTPClient(timeoutSeconds: 5).perform(Self.request("/keep", port: port))
        } throws: { error in
            guard case .cannotConnect(let why)? = error as? PlainHTTPError else { return false }
            return why.contains("Connection refused")
        }
    }
}
