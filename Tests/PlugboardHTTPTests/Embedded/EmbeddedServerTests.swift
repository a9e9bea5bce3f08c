#if canImport(Glibc)
import Glibc
#endif
@testable import PlugboardHTTP
import Testing

/// HTTP behaviour of the server core, in process: one embedded loop, socket-pair clients,
/// a clock the test moves. No port, no thread of the server's own, no waiting for a timeout.
///
/// Each test drives its server on a thread of its own: the driver blocks while it waits
/// for the handlers' tasks, which must have the cooperative pool's threads to run on.
@Suite struct EmbeddedServerTests {
    /// Runs `body` on its own thread, off the cooperative pool, with a server of the test
    /// routes configured by `configure`, a client connected to it, and the routes' probe.
    static func driving(_ configure: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in },
                        _ body: @escaping @Sendable (EmbeddedHTTPServer, EmbeddedHTTPServer.Client, Probe) throws -> Void) async throws {
        try await offPool {
            var configuration = ServerConfiguration()
            configure(&configuration)
            let probe = Probe()
            let server = try EmbeddedHTTPServer(configuration: configuration, handler: Routes(probe: probe))
            try body(server, try server.connect(), probe)
        }
    }

    @Test func keptAliveRequests_areAnsweredInOrder_onOneConnection() async throws {
        try await Self.driving { server, client, probe in
            for i in 0..<3 {
                try server.send("GET /hello?n=\(i) HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
                let answer = try server.response(on: client)
                #expect(answer.status == 200)
                #expect(answer.text == "hello")
                #expect(answer.header("X-Target") == "/hello?n=\(i)")
                #expect(answer.header("Connection") != "close")
            }
            #expect(!server.isClosed(client))
            try server.run(until: { probe.exchanges.count == 3 })
            #expect(probe.exchanges.map(\.status) == [200, 200, 200])
            #expect(server.bufferedBytes == 0)
        }
    }

    @Test func anExchangesDuration_isMeasuredOnTheLoopsClock() async throws {
        try await Self.driving { server, client, probe in
            try server.send("PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nab", on: client)
            server.advance(by: 3)
            try server.send("cd", on: client)
            #expect(try server.response(on: client).text == "abcd")
            try server.run(until: { probe.exchanges.count == 1 })
            #expect(probe.exchanges.first?.durationSeconds == 3)
        }
    }

    @Test func pipelinedRequestsInOneWrite_areAnsweredInOrder() async throws {
        try await Self.driving { server, client, _ in
            let requests = (0..<20).map { "GET /hello?n=\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined()
            try server.send(requests, on: client)
            for i in 0..<20 {
                #expect(try server.response(on: client).header("X-Target") == "/hello?n=\(i)")
            }
        }
    }

    @Test func pipelinedRequestsThenAHalfClose_areAllAnswered_thenTheConnectionCloses() async throws {
        try await Self.driving { server, client, _ in
            try server.send("GET /hello?n=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /slow?ms=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /hello?n=3 HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            server.shutdownWrite(client)
            #expect(try server.response(on: client).header("X-Target") == "/hello?n=1")
            #expect(try server.response(on: client).text == "slow")
            #expect(try server.response(on: client).header("X-Target") == "/hello?n=3")
            try server.run(until: { server.isClosed(client) })
            #expect(server.unread(client).isEmpty)
            #expect(server.openConnections == 0)
        }
    }

    @Test func anAnswerFromATaskThatSuspended_reachesTheLoopThroughItsQueue() async throws {
        try await Self.driving { server, client, _ in
            try server.send("GET /slow?ms=5 HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            #expect(try server.response(on: client).text == "slow")
        }
    }

    @Test func aHeadRequest_getsTheHeadAlone() async throws {
        try await Self.driving { server, client, _ in
            try server.send("HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            let head = try server.response(on: client, head: true)
            #expect(head.status == 200 && head.header("Content-Length") == "5" && head.body.isEmpty)
            #expect(try server.response(on: client).text == "hello")
        }
    }

    @Test func aBody_isReadByTheHandler_withLengthOrChunked() async throws {
        try await Self.driving { server, client, _ in
            try server.send("PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nabcde", on: client)
            #expect(try server.response(on: client).text == "abcde")
            try server.send("PUT /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n", on: client)
            #expect(try server.response(on: client).text == "abcde")
            let big = patternBytes(3 << 20)
            try server.send(Array("PUT /count HTTP/1.1\r\nHost: x\r\nContent-Length: \(big.count)\r\n\r\n".utf8) + big, on: client)
            #expect(try server.response(on: client).text == "\(big.count) true")
        }
    }

    @Test func expectContinue_getsAnInterimAnswerBeforeTheBody() async throws {
        try await Self.driving { server, client, _ in
            try server.send("PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n", on: client)
            #expect(try server.response(on: client).status == 100)
            try server.send("ok", on: client)
            #expect(try server.response(on: client).text == "ok")
        }
    }

    @Test func aMalformedHead_isRefusedWith400_andTheConnectionCloses() async throws {
        try await Self.driving { server, client, _ in
            try server.send("GET /hello HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", on: client)
            let answer = try server.response(on: client)
            #expect(answer.status == 400)
            #expect(answer.header("Connection") == "close")
            try server.run(until: { server.isClosed(client) })
        }
    }

    @Test func aScreenedRequestWithABody_isAnsweredThenClosed_withoutItsBodyRead() async throws {
        try await Self.driving { server, client, _ in
            try server.send("PUT /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc", on: client)
            let answer = try server.response(on: client)
            #expect(answer.status == 403)
            #expect(answer.header("Connection") == "close")
            // Its side is shut; it lingers, reading what the client still sends, until the
            // client closes or the linger's time is up.
            #expect(server.isClosed(client))
            #expect(server.openConnections == 1)
            server.advance(by: ConnectionStateMachine.lingerSeconds + 1)
            #expect(server.openConnections == 0)
        }
    }

    @Test func anIdleConnection_closesAfterTheIdleTimeout_onTheLoopsClock() async throws {
        try await Self.driving({ $0.idleTimeoutSeconds = 30 }) { server, client, _ in
            try server.send("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            _ = try server.response(on: client)
            server.advance(by: 29)
            #expect(!server.isClosed(client))
            server.advance(by: 2)
            #expect(server.isClosed(client))
            #expect(server.openConnections == 0)
        }
    }

    @Test func aHeadThatStopsHalfway_isRefusedWith408_afterTheHeaderTimeout() async throws {
        try await Self.driving({ $0.headerTimeoutSeconds = 10 }) { server, client, _ in
            try server.send("GET /hello HTTP/1.1\r\nHo", on: client)
            server.advance(by: 9)
            #expect(server.unread(client).isEmpty)
            server.advance(by: 2)
            let answer = try server.response(on: client)
            #expect(answer.status == 408)
            #expect(answer.text.contains("request head not received in time"))
        }
    }

    @Test func aBodyThatStalls_isRefusedWith408_afterTheBodyTimeout() async throws {
        try await Self.driving({ $0.bodyTimeoutSeconds = 20 }) { server, client, probe in
            try server.send("PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc", on: client)
            server.advance(by: 19)
            #expect(server.unread(client).isEmpty)
            server.advance(by: 2)
            let answer = try server.response(on: client)
            #expect(answer.status == 408)
            #expect(answer.text.contains("stalled"))
        }
    }

    @Test func aClientThatReadsNothingOfALargeAnswer_isDropped_andItsProducerStops() async throws {
        // A write timeout shorter than the rate's window (10 s), so that it, not the rate, drops.
        try await Self.driving({ $0.writeTimeoutSeconds = 8 }) { server, client, probe in
            client.stalled = true
            try server.send("GET /stream?size=\(64 << 20) HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            // The client's socket buffer fills, then the connection's queue to its high-water
            // mark, where the producer waits.
            try server.run(until: { server.bufferedBytes > Connection.outboundHighWater })
            let produced = probe.produced
            server.advance(by: 7)
            #expect(probe.produced == produced)
            #expect(server.openConnections == 1)
            server.advance(by: 2)
            try server.run(until: { server.openConnections == 0 })
            #expect(probe.produced < 64 << 20)
            #expect(server.bufferedBytes == 0)
        }
    }

    @Test func aHalfCloseWhileTheHandlerWorks_cancelsIt() async throws {
        try await Self.driving { server, client, probe in
            try server.send("GET /hang HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            try server.run(until: { probe.started("/hang") == 1 })
            server.shutdownWrite(client)
            try server.run(until: { probe.cancelled("/hang") == 1 })
            // Its answer is still written, and the connection closes after it.
            #expect(try server.response(on: client).status == 503)
            try server.run(until: { server.isClosed(client) })
        }
    }

    @Test func aClientThatGoesAway_cancelsItsHandler_andTheConnectionCloses() async throws {
        try await Self.driving { server, client, probe in
            try server.send("GET /hang HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            try server.run(until: { probe.started("/hang") == 1 })
            server.close(client)
            try server.run(until: { probe.cancelled("/hang") == 1 && probe.finished("/hang") == 1 })
            try server.run(until: { server.openConnections == 0 })
            #expect(server.bufferedBytes == 0)
        }
    }

    @Test func aFileRegion_isSentWithSendfile_afterItsHead() async throws {
        try await Self.driving { server, client, _ in
            let path = "/tmp/plugboard-embedded-\(getpid())-\(UInt32.random(in: 0 ... .max))"
            let bytes = patternBytes(5 << 20)
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            #expect(fd >= 0)
            _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            Glibc.close(fd)
            defer { unlink(path) }
            try server.send("GET /file?path=\(path)&offset=1000&length=\(3 << 20) HTTP/1.1\r\nHost: x\r\n\r\n", on: client)
            let answer = try server.response(on: client)
            #expect(answer.status == 200)
            #expect(answer.body.count == 3 << 20)
            #expect(isPattern(answer.body, from: 1000))
            #expect(!server.isClosed(client))
        }
    }
}
