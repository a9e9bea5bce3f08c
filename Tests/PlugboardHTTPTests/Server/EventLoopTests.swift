#if canImport(Glibc)
import Glibc
#endif
@testable import PlugboardHTTP
import PlugboardConcurrency
import Testing

@Suite struct EventLoopTests {
    final class Source: EventSource {
        func ready(_ events: UInt32, loop: EventLoop) {}
        func tick(_ now: Double, loop: EventLoop) {}
    }

    /// Sources are kept by slot; a slot freed and taken again answers only to its new id,
    /// so an event read for the old descriptor never reaches the new one.
    @Test func aReusedSlotAnswersOnlyToItsNewID() throws {
        let loop = try EventLoop(index: 0)
        var fds: [Int32] = [0, 0, 0, 0]
        #expect(pipe(&fds[0]) == 0 && pipe(&fds[2]) == 0)
        defer { for fd in fds { close(fd) } }
        let first = Source(), second = Source()
        let events: UInt32 = 0x001  // EPOLLIN
        let old = try #require(loop.register(fds[0], events: events, source: first))
        #expect(loop.source(old) === first)
        loop.remove(fds[0], id: old)
        #expect(loop.source(old) == nil)
        let new = try #require(loop.register(fds[2], events: events, source: second))
        #expect(new != old && new & 0xFFFF_FFFF == old & 0xFFFF_FFFF)
        #expect(loop.source(old) == nil && loop.source(new) === second)
        // A late removal under the old id leaves the slot's new source registered.
        loop.remove(fds[0], id: old)
        #expect(loop.source(new) === second && loop.registeredSources().count == 1)
        loop.remove(fds[2], id: new)
        #expect(loop.registeredSources().isEmpty)
    }

    /// Work the loop queues for itself, queueing more while it runs (a task started at once
    /// from a ready answer that answers at once again): each runs, in order. Running the
    /// queue used to hold an access to it across the items, and the second level of this
    /// trapped as a simultaneous modification in debug builds.
    @Test func workQueuedFromTheLoopWhileItsQueueRuns_runsInOrder() async throws {
        let loop = try EventLoop(index: 0)
        try loop.start()
        defer { loop.shutdown() }
        let order = LockedValueBox<[Int]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                order.withLock { $0.append(1) }
                loop.execute {
                    order.withLock { $0.append(2) }
                    loop.execute {
                        order.withLock { $0.append(3) }
                        loop.execute {
                            order.withLock { $0.append(4) }
                            done.resume()
                        }
                    }
                }
            }
        }
        #expect(order.withLock { $0 } == [1, 2, 3, 4])
    }
}
