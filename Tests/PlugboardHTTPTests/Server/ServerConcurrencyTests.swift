#if canImport(Glibc)
import Glibc
#endif
@testable import PlugboardHTTP
import Testing

extension ServerTests {
    @Suite struct Concurrency {
        /// 200 connections open at once, 20 requests each, on two loops: every answer is
        /// the right one for its request.
        @Test func manyClients_onTwoLoops_areAllAnsweredCorrectly() async throws {
            let s = try TestServer { $0.eventLoops = 2 }
            let threads = 8, perThread = 25, rounds = 20
            try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
                for t in 0..<threads {
                    group.addTask {
                        try await offPool {
                            let clients = try (0..<perThread).map { _ in try s.client() }
                            var answered = 0
                            var failures: [String] = []
                            for round in 0..<rounds {
                                // Every connection has a request in flight before any answer is read.
                                for (i, c) in clients.enumerated() {
                                    let tag = "\(t)-\(i)-\(round)"
                                    if round % 2 == 0 {
                                        try c.send(Wire.requestBytes("GET", "/hello?tag=\(tag)"))
                                    } else {
                                        try c.send(Wire.requestBytes("PUT", "/echo", body: Array(tag.utf8)))
                                    }
                                }
                                for (i, c) in clients.enumerated() {
                                    let tag = "\(t)-\(i)-\(round)"
                                    let r = try c.response()
                                    let ok = r.status == 200 && (round % 2 == 0 ? r.header("x-target") == "/hello?tag=\(tag)" : r.text == tag)
                                    if ok { answered += 1 } else { failures.append("\(tag): \(r.status) \(r.text)") }
                                }
                            }
                            return (answered, failures)
                        }
                    }
                }
                var total = 0
                var failures: [String] = []
                for try await (n, failed) in group {
                    total += n
                    failures += failed
                }
                #expect(total == threads * perThread * rounds)
                #expect(failures.isEmpty, "\(failures.prefix(5))")
            }
            #expect(await s.stop() == 0)
        }
    }
}
