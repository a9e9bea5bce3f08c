#if canImport(Glibc)
import Glibc
#endif
import PlugboardConcurrency
import Testing

/// Blocking work must not stall Swift's cooperative pool, and more of it than there are
/// cores must run at once.
@Suite struct BlockingWorkTests {
    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    @Test func moreBlockingJobsThanCores_runAtOnce_andTheCooperativePoolStillAnswers() async throws {
        let cores = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        let jobs = cores * 8
        let started = Self.now()
        let blocked = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<jobs {
                    group.addTask { await BlockingWork.run { () -> Void in usleep(2_000_000) } }
                }
            }
        }
        try await Task.sleep(nanoseconds: 100_000_000)
        // Tasks of the pool: each must get a thread while every job blocks one of its own.
        let probeStarted = Self.now()
        let answers = await withTaskGroup(of: Int.self) { group in
            for i in 0..<(cores * 2) { group.addTask { i } }
            return await group.reduce(0, +)
        }
        let probe = Self.now() - probeStarted
        await blocked.value
        let total = Self.now() - started
        #expect(answers == (0..<(cores * 2)).reduce(0, +))
        // Liveness bounds, loose for a loaded machine: on the pool's own threads the probe
        // would wait for a job to end (2 s), and on a queue as wide as the cores the jobs
        // would take 2 s x jobs/cores = 16 s (the old concurrent queue took 4.9 s for one-second jobs).
        #expect(probe < 1.5, "the cooperative pool waited \(probe) s for blocking work")
        #expect(total < 6.0, "\(jobs) two-second jobs took \(total) s: they did not run at once")
    }
}
