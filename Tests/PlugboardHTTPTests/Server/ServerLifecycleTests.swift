#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency
@testable import PlugboardHTTP
import Testing

extension ServerTests {
    /// Stopping, draining, cancelling, and the descriptors the server owns.
    @Suite struct Lifecycle {
        @Test func stop_closesIdleConnectionsAtOnce_andLetsABusyRequestFinish() async throws {
            let s = try TestServer()
            let (idle, busy) = try await offPool { () -> (Wire, Wire) in
                let idle = try s.client()
                #expect(try idle.request("GET", "/hello").status == 200)
                let busy = try s.client()
                // Long enough that "closed before the busy one answered" holds on a loaded machine.
                try busy.send(Wire.requestBytes("GET", "/slow?ms=5000"))
                #expect(eventually { s.probe.started("/slow") == 1 })
                return (idle, busy)
            }
            let started = MonotonicClock.now()
            s.server.stop()
            try await offPool {
                #expect(idle.isClosedByServer())
                #expect(MonotonicClock.now() - started < 4.5, "the idle connection closed after \(MonotonicClock.now() - started) s")
                let r = try busy.response()
                #expect(r.status == 200)
                #expect(r.text == "slow")
                #expect(r.closes)
                #expect(busy.isClosedByServer())
                // Nobody else gets in.
                #expect((try? s.client().request("GET", "/hello")) == nil)
            }
            #expect(await s.server.stopped(drainTimeoutSeconds: 10) == 0)
            #expect(s.probe.cancelled("/slow") == 0)
        }

        @Test func stoppedWithAHangingHandler_returnsAfterTheTimeout_andCancelsIt() async throws {
            let s = try TestServer()
            let c = try await offPool { () -> Wire in
                let c = try s.client()
                try c.send(Wire.requestBytes("GET", "/hang"))
                #expect(eventually { s.probe.started("/hang") == 1 })
                return c
            }
            let started = MonotonicClock.now()
            let open = await s.stop(drainTimeoutSeconds: 0.5)
            let waited = MonotonicClock.now() - started
            #expect(open == 1)
            #expect(waited >= 0.45 && waited < 10, "stopped after \(waited) s")
            #expect(try await offPool { eventually { s.probe.cancelled("/hang") == 1 } })
            #expect(s.server.openConnections == 0)
            try await offPool { #expect(c.isClosedByServer()) }
        }

        @Test func aClientThatDisconnects_cancelsItsRequest() async throws {
            let s = try TestServer()
            try await offPool {
                // Mid-body.
                let c = try s.client()
                try c.send("PUT /hang HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nabc")
                #expect(eventually { s.probe.started("/hang") == 1 })
                shutdown(c.fd, Int32(SHUT_RDWR))
                #expect(eventually { s.probe.cancelled("/hang") == 1 })
                // Waiting for its answer.
                let d = try s.client()
                try d.send(Wire.requestBytes("GET", "/hang"))
                #expect(eventually { s.probe.started("/hang") == 2 })
                shutdown(d.fd, Int32(SHUT_RDWR))
                #expect(eventually { s.probe.cancelled("/hang") == 2 })
                #expect(eventually { s.server.openConnections == 0 })
            }
            #expect(await s.stop() == 0)
        }

        /// The server closes a connection; the test process's next descriptor takes its
        /// number; stopping the server must leave that descriptor alone.
        @Test func aReusedDescriptorNumber_isLeftAloneByStop() async throws {
            let s = try TestServer { $0.eventLoops = 1 }
            // Other tests in this process open descriptors too and may take the freed
            // number first: the closing is tried again until a pair of ours takes it.
            let pairs = try await offPool { () -> [[Int32]] in
                var pairs: [[Int32]] = []
                for _ in 0..<100 {
                    let c = try s.client()
                    // Answered once first, so that the server's end is open when counted.
                    #expect(try c.request("GET", "/hello").status == 200)
                    let before = openDescriptors()
                    #expect(try c.request("GET", "/hello", headers: [("Connection", "close")]).closes)
                    #expect(c.isClosedByServer())
                    #expect(eventually { s.server.openConnections == 0 })
                    let freed = before.subtracting(openDescriptors())
                    // Another test may have taken the number already: try again.
                    if freed.isEmpty { continue }
                    // Take the freed numbers (and a few more) with socket pairs.
                    var taken: [[Int32]] = []
                    for _ in 0..<4 {
                        var pair: [Int32] = [-1, -1]
                        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
                        taken.append(pair)
                    }
                    pairs += taken
                    withExtendedLifetime(c) {}
                    if !freed.isDisjoint(with: Set(taken.joined())) { return pairs }
                }
                Issue.record("no socket pair took a number the server freed in 100 tries")
                return pairs
            }
            await s.stop()
            for pair in pairs {
                    var byte: UInt8 = 42
                    #expect(write(pair[0], &byte, 1) == 1)
                    var got: UInt8 = 0
                    #expect(read(pair[1], &got, 1) == 1)
                    #expect(got == 42)
                    #expect(write(pair[1], &byte, 1) == 1)
                    #expect(read(pair[0], &got, 1) == 1)
                    close(pair[0])
                    close(pair[1])
            }
        }

        /// A handler still running after `stopped` returned finishes later: the loop it
        /// answers to is gone, and its descriptors' numbers may belong to someone else by
        /// then, so nothing may be written to them.
        @Test func aHandlerThatOutlivesTheServer_touchesNoDescriptor() async throws {
            let s = try TestServer { $0.eventLoops = 1 }
            try await offPool {
                let c = try s.client()
                try c.send(Wire.requestBytes("GET", "/stubborn"))
                #expect(eventually { s.probe.started("/stubborn") == 1 })
                withExtendedLifetime(c) {}
            }
            let before = openDescriptors()
            #expect(await s.stop(drainTimeoutSeconds: 0.2) == 1)
            #expect(try await offPool { eventually { openDescriptors().count < before.count } })
            let freed = before.subtracting(openDescriptors())
            // Socket pairs take the freed numbers: a byte written to either end shows at the other.
            var pairs: [[Int32]] = []
            for _ in 0..<8 {
                var pair: [Int32] = [-1, -1]
                #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
                pairs.append(pair)
            }
            let taken = Set(pairs.joined())
            // Other tests in this process open and close descriptors meanwhile, so `freed`
            // may hold theirs and they may take some of the server's: what counts is that
            // the pairs hold numbers the server used.
            #expect(!freed.isDisjoint(with: taken), "freed \(freed.sorted()), taken \(taken.sorted())")
            s.probe.openGate()
            #expect(try await offPool { eventually { s.probe.finished("/stubborn") == 1 } })
            try await Task.sleep(for: .milliseconds(200))
            for pair in pairs {
                for fd in pair {
                    var scratch = [UInt8](repeating: 0, count: 64)
                    let n = recv(fd, &scratch, 64, Int32(MSG_DONTWAIT))
                    #expect(n < 0 && errno == EAGAIN, "descriptor \(fd) got \(n) bytes")
                }
                close(pair[0])
                close(pair[1])
            }
        }

        /// After stop and drain, every descriptor the server opened is closed.
        @Test func everyDescriptorIsClosedAfterStop() async throws {
            let before = openDescriptors()
            let port: Int
            do {
                let s = try TestServer { $0.eventLoops = 2 }
                port = s.port
                try await offPool {
                    var clients: [Wire] = []
                    for i in 0..<20 {
                        let c = try s.client()
                        #expect(try c.request("GET", i % 2 == 0 ? "/hello" : "/stream?size=100000").status == 200)
                        clients.append(c)
                    }
                    let refused = try s.client()
                    try refused.send("GARBAGE\r\n\r\n")
                    #expect(try refused.response().status == 400)
                    withExtendedLifetime(clients) {}
                }
                #expect(await s.stop() == 0)
            }
            // The loops' threads close their epoll and eventfd as they end. Counted are only
            // the descriptors this server could hold: the other suites of this process run
            // meanwhile and open their own.
            let closed = try await offPool { eventually { serverDescriptorsLeft(since: before, port: port).isEmpty } }
            #expect(closed, "still open: \(serverDescriptorsLeft(since: before, port: port))")
        }
    }
}
