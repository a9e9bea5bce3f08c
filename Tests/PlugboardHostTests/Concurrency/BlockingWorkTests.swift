#if canImport(Glibc)
import Glibc
#endif
@testable import PlugboardConcurrency
import Testing

/// Blocking work must not stall Swift's cooperative pool, and more of it than there are
/// cores must run at once.
@Suite struct BlockingWorkTests {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Every job records when it ran; the checks compare those instants with each other
    /// and with the pool's answers, not with a clock budget, so a loaded machine that is
    /// slow to schedule them does not make them fail. The jobs block until the pool has
    /// answered (at most 120 s), not for a fixed time: beside the whole suite on two cores
    /// the pool's answer once came after 5 s of blocking had ended.
    ///
    /// The jobs run on a pool of their own, made as ``BlockingWork``'s is: the shared one
    /// also runs the other suites' blocking work in this process, and with a few of its
    /// threads theirs, one of these jobs waited 120 s for a thread in a full run.
    @Test func moreBlockingJobsThanCores_runAtOnce_andTheCooperativePoolStillAnswers() async throws {
        let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let jobs = min(cores * 8, BlockingWork.maxThreads)
        let pool = BlockingPool(maxThreads: BlockingWork.maxThreads, idleSeconds: BlockingWork.idleSeconds)
        let spans = LockedValueBox<[(start: Double, end: Double)]>([])
        let poolAnswered = LockedValueBox(false)
        let started = LockedValueBox(0)
        let blocked = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<jobs {
                    group.addTask {
                        await BlockingWork.handOff(to: pool.submit) { () -> Void in
                            let start = Self.now()
                            started.withLock { $0 += 1 }
                            while !poolAnswered.withLock({ $0 }) && Self.now() - start < 120 { usleep(10_000) }
                            spans.withLock { $0.append((start, Self.now())) }
                        }
                    }
                }
            }
        }
        // Asked once every job blocks (or 120 s passed: a queued job would never start).
        let waitStart = Self.now()
        while started.withLock({ $0 }) < jobs && Self.now() - waitStart < 120 { try await Task.sleep(nanoseconds: 10_000_000) }
        // Tasks of the pool, while every job blocks a thread of its own.
        let answers = await withTaskGroup(of: Int.self) { group in
            for i in 0..<(cores * 2) { group.addTask { i } }
            return await group.reduce(0, +)
        }
        let answered = Self.now()
        poolAnswered.withLock { $0 = true }
        await blocked.value
        let all = spans.withLock { $0 }
        #expect(all.count == jobs)
        #expect(answers == (0..<(cores * 2)).reduce(0, +))
        let firstEnd = all.map(\.end).min() ?? 0
        // All ran at once: the last one started before the first one ended (on a queue as
        // wide as the cores, most would start only after others ended).
        #expect((all.map(\.start).max() ?? .infinity) < firstEnd, "the \(jobs) jobs did not all run at once")
        // The pool answered while they all still blocked.
        #expect(answered < firstEnd, "the cooperative pool answered only after blocking work ended")
    }
}
