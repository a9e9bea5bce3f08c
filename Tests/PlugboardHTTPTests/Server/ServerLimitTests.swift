#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency
@testable import PlugboardHTTP
import Testing

extension ServerTests {
    /// What a client may take: connections, time and bytes.
    @Suite struct Limits {
        @Test func connectionsPerClient_overTheCapGet503_otherAddressesDoNot() async throws {
            let s = try TestServer { $0.maxConnectionsPerClient = 4 }
            try await offPool {
                let held = try (0..<4).map { _ in try s.client() }
                for c in held { #expect(try c.request("GET", "/hello").status == 200) }
                let over = try s.client()
                // The request is already on its way when the server refuses: the answer
                // still arrives, not a reset.
                try? over.send(Wire.requestBytes("GET", "/hello"))
                let refused = try over.response()
                #expect(refused.status == 503)
                #expect(refused.header("retry-after") == "1")
                #expect(over.isClosedByServer())
                let other = try s.client(source: "127.0.0.2")
                #expect(try other.request("GET", "/hello").status == 200)
                // A slot given back is free again.
                held[0].shutdownWrite()
                #expect(held[0].isClosedByServer())
                #expect(eventually { s.server.openConnections == 4 })
                #expect(try s.client().request("GET", "/hello").status == 200)
            }
            #expect(await s.stop() == 0)
        }

        @Test func connectionsInAll_overTheCapGet503() async throws {
            let s = try TestServer { $0.maxConnections = 3 }
            try await offPool {
                let held = try ["127.0.0.1", "127.0.0.2", "127.0.0.3"].map { try s.client(source: $0) }
                for c in held { #expect(try c.request("GET", "/hello").status == 200) }
                let over = try s.client(source: "127.0.0.4")
                let refused = try over.response()
                #expect(refused.status == 503)
                #expect(refused.header("retry-after") == "1")
                held[1].shutdownWrite()
                #expect(held[1].isClosedByServer())
                #expect(eventually { s.server.openConnections == 2 })
                #expect(try s.client(source: "127.0.0.4").request("GET", "/hello").status == 200)
            }
            #expect(await s.stop() == 0)
        }

        /// A refused client that sends after the 503 (its request, its body) is read and
        /// dropped for a moment, not reset: bytes that reach a closed socket are answered
        /// with a reset, which can reach a client before the answer it has not read yet,
        /// and it then sees "connection reset" instead of 503 (RFC 9112 section 9.6). The
        /// client here reads the 503 to its end first, then sends: every piece must be
        /// taken (a send after a reset fails with EPIPE).
        @Test func aRefusedClientThatGoesOnSending_isReadAndDropped_notReset() async throws {
            let s = try TestServer { $0.maxConnections = 1 }
            try await offPool {
                let held = try s.client()
                guard try held.request("GET", "/hello").status == 200 else { throw WireError("the first client was not served") }
                for round in 0..<8 {
                    let over = try s.client()
                    let refused = try over.response()
                    guard refused.status == 503 else { throw WireError("expected 503, found \(refused.status)") }
                    guard over.endsWithoutReset() else { throw WireError("round \(round): the 503 ended with a reset") }
                    for piece in 0..<16 {
                        do {
                            try over.send(patternBytes(1024))
                        } catch {
                            throw WireError("round \(round), piece \(piece) sent after the 503: \(error)")
                        }
                    }
                }
                guard try held.request("GET", "/hello").status == 200 else { throw WireError("the held client lost its connection") }
            }
            #expect(await s.stop() == 0)
        }

        /// 1,000 connections that send nothing cost the server no thread and no slot that
        /// another client needs: its requests are answered, and fast.
        @Test func aThousandIdleConnections_doNotStopAnotherClient() async throws {
            let s = try TestServer { $0.maxConnectionsPerClient = 1100 }
            try await offPool {
                let idle = try (0..<1000).map { _ in try s.client(source: "127.0.0.9") }
                #expect(eventually { s.server.openConnections == 1000 })
                let c = try s.client()
                var slowest = 0.0
                for _ in 0..<50 {
                    let started = MonotonicClock.now()
                    #expect(try c.request("GET", "/hello").status == 200)
                    slowest = max(slowest, MonotonicClock.now() - started)
                    let fresh = try s.client(source: "127.0.0.10")
                    #expect(try fresh.request("GET", "/hello").status == 200)
                }
                // The old server answered these 503; the bound only says nobody waited on the idle ones.
                #expect(slowest < 10, "slowest answer \(slowest) s")
                withExtendedLifetime(idle) {}
            }
            #expect(await s.stop() == 0)
            #expect(s.server.openConnections == 0)
        }

        @Test func aSilentNewConnection_isClosedAfterTheFirstByteTimeout() async throws {
            let s = try TestServer { $0.firstByteTimeoutSeconds = 0.5; $0.idleTimeoutSeconds = 60 }
            try await offPool {
                let c = try s.client()
                let started = MonotonicClock.now()
                #expect(c.isClosedByServer())
                let waited = MonotonicClock.now() - started
                #expect(waited >= 0.4 && waited < 20, "closed after \(waited) s")
                // A kept-alive connection gets the idle timeout instead.
                let kept = try s.client(timeoutSeconds: 3)
                #expect(try kept.request("GET", "/hello").status == 200)
                usleep(1_200_000)
                #expect(try kept.request("GET", "/hello").status == 200)
            }
            #expect(await s.stop() == 0)
        }

        @Test func aSlowRequestHead_gets408() async throws {
            let s = try TestServer { $0.headerTimeoutSeconds = 0.5 }
            try await offPool {
                let c = try s.client()
                try c.send("GET /hello HTTP/1.1\r\nHost: t\r\n")
                let r = try c.response()
                #expect(r.status == 408)
                #expect(r.closes)
                #expect(c.isClosedByServer())
            }
            #expect(await s.stop() == 0)
        }

        @Test func aStalledBody_gets408() async throws {
            let s = try TestServer { $0.bodyTimeoutSeconds = 0.5 }
            try await offPool {
                let c = try s.client()
                try c.send("PUT /count HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
                let r = try c.response()
                #expect(r.status == 408)
                #expect(c.isClosedByServer())
            }
            #expect(try await offPool { eventually { s.probe.finished("/count") == 1 } })
            #expect(await s.stop() == 0)
        }

        /// A body trickling below the minimum rate, with no silence long enough for the
        /// body timeout, is refused once the sliding window has seen it (about 10 s).
        @Test func aTricklingBody_gets408OverTheWindow() async throws {
            let s = try TestServer { $0.minBodyBytesPerSecond = 1000; $0.bodyTimeoutSeconds = 5 }
            try await offPool {
                let c = try s.client(timeoutSeconds: 1)
                // Fast at first: an average since the start would stay above the minimum.
                try c.send("PUT /count HTTP/1.1\r\nHost: t\r\nContent-Length: 10000000\r\n\r\n")
                try c.send(patternBytes(1 << 20))
                let started = MonotonicClock.now()
                var answer: WireResponse?
                while answer == nil && MonotonicClock.now() - started < 40 {
                    try? c.send([pattern(0)])
                    answer = try? c.response()
                }
                let r = try #require(answer)
                #expect(r.status == 408)
                let waited = MonotonicClock.now() - started
                #expect(waited >= 9, "refused after \(waited) s")
            }
            #expect(await s.stop() == 0)
        }

        /// A client that stops reading a large answer is dropped, and its producer stops.
        @Test func aClientThatStopsReading_isDropped() async throws {
            let s = try TestServer { $0.writeTimeoutSeconds = 1 }
            let size = 256 << 20
            try await offPool {
                let (c, head) = try s.streamingClient(size: size)
                #expect(head.status == 200)
                let started = MonotonicClock.now()
                // The client stays connected, reading nothing, until the server drops it.
                #expect(withExtendedLifetime(c) { eventually(timeoutSeconds: 40) { s.server.openConnections == 0 } })
                #expect(MonotonicClock.now() - started < 40)
                #expect(s.probe.produced < 64 << 20, "produced \(s.probe.produced)")
                #expect(eventually { s.probe.finished("/stream") == 1 })
            }
            #expect(await s.stop() == 0)
        }

        /// With the buffer budget spent by a body nobody reads, a new request with a body
        /// gets 503 and Retry-After; one without a body is still answered; once the bytes
        /// are given back, bodies are taken again.
        @Test func aSpentBufferBudget_refusesNewBodies() async throws {
            let s = try TestServer { $0.maxBufferedBytes = 32 << 10 }
            try await offPool {
                let hog = try s.client()
                let sender = Wire.Sender(hog, Wire.requestBytes("PUT", "/gated-count", body: patternBytes(4 << 20)))
                // Spent for good only once the handler has taken its first chunk (and waits
                // at the gate): until then the bytes it takes are given back, and the
                // budget can be spent for a moment and then not (a run under TSan saw it).
                #expect(eventually { s.probe.bodyRead > 0 && s.server.bufferedBytes >= 32 << 10 })
                let c = try s.client()
                let refused = try c.request("PUT", "/echo", body: Array("x".utf8))
                #expect(refused.status == 503)
                #expect(refused.header("retry-after") == "1")
                #expect(try s.client().request("GET", "/hello").status == 200)
                s.probe.openGate()
                let answer = try hog.response()
                #expect(answer.status == 200)
                #expect(answer.text == "\(4 << 20) true")
                #expect(sender.wait())
                #expect(eventually { s.server.bufferedBytes < 32 << 10 })
                #expect(try s.client().request("PUT", "/echo", body: Array("x".utf8)).text == "x")
            }
            #expect(await s.stop() == 0)
        }
    }
}
