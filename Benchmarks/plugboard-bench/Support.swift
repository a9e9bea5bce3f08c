#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import BenchFloor
import PlugboardAPI
import Synchronization

// MARK: - The service implementation

/// The one implementation class of every benchmark service: a final class with one stored
/// value, so `ping()` costs a witness call and a load.
///
/// Padded to 80 bytes so that the reference counts of two objects never share a cache line
/// (two small objects allocated one after the other usually do): the two-thread cases on
/// distinct objects measure the container and the floor, not false sharing set up by malloc.
final class BenchImpl: BenchService, TransientService, ReplacedService {
    let value: Int
    private let padding: (Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0)
    init(_ value: Int) { self.value = value }
    func ping() -> Int { value }
}

/// One allocation of the class the transient factory builds, returned +1 so that the
/// caller's release frees it. Not inlinable: the object escapes, so it is a real heap
/// allocation, not a stack-promoted one.
@inline(never)
func makeImpl(_ value: Int) -> BenchImpl {
    BenchImpl(value)
}

// MARK: - The opaque sink

/// Written only when a result equals a value no service returns; it exists so that
/// `blackHole` has an effect the optimizer must keep.
nonisolated(unsafe) var sinkSlot = 0

/// The opaque sink: every case feeds each iteration's result into it, so neither the
/// resolve nor the method call can be optimized away. Thread-safe in practice (the write
/// never happens) and cheap: one call and one compare, the same in every case and the floor.
@inline(never)
func blackHole(_ x: Int) {
    if x == 0x5EED_F00D { sinkSlot &+= 1 }
}

// MARK: - Time

/// CLOCK_MONOTONIC in nanoseconds.
@inline(__always)
func nowNs() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

func sleepNs(_ ns: UInt64) {
    var ts = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
    var rest = timespec()
    while nanosleep(&ts, &rest) != 0 && errno == EINTR { ts = rest }
}

/// The machine's busy CPU time and this process's, to tell how much CPU other processes
/// took while a case ran.
struct CPUSnapshot {
    /// Busy CPU seconds of all cores (user, nice, system, irq, softirq, steal).
    var busy: Double
    /// CPU seconds of this process, all threads.
    var own: Double
    var wall: UInt64

    /// - Parameter includingChildren: count the CPU time of this process's waited-for
    ///   children as its own (for cases that run child processes).
    static func now(includingChildren: Bool = false) -> CPUSnapshot {
        var busy = 0.0
        if let f = fopen("/proc/stat", "r") {
            var buf = [CChar](repeating: 0, count: 512)
            if fgets(&buf, Int32(buf.count), f) != nil {
                let line = String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                // cpu user nice system idle iowait irq softirq steal ...
                let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
                if fields.count >= 8 {
                    let ticks = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
                    busy = ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
                }
            }
            fclose(f)
        }
        func seconds(_ who: __rusage_who) -> Double {
            var ru = rusage()
            getrusage(__rusage_who_t(who.rawValue), &ru)
            return Double(ru.ru_utime.tv_sec) + Double(ru.ru_utime.tv_usec) / 1e6
                + Double(ru.ru_stime.tv_sec) + Double(ru.ru_stime.tv_usec) / 1e6
        }
        let own = seconds(RUSAGE_SELF) + (includingChildren ? seconds(RUSAGE_CHILDREN) : 0)
        return CPUSnapshot(busy: busy, own: own, wall: nowNs())
    }

    /// Cores kept busy by other processes (and the hypervisor's steal) since `before`.
    func otherLoad(since before: CPUSnapshot) -> Double {
        let wall = Double(wall - before.wall) / 1e9
        guard wall > 0 else { return 0 }
        return max(0, ((busy - before.busy) - (own - before.own)) / wall)
    }
}

// MARK: - Single-thread measurement

/// Runs `batch(n)` (n iterations of a case) for about `seconds`, split into `samples`
/// samples after a warm-up, and returns the best (lowest) ns/op of the samples.
func measure(seconds: Double, samples: Int,
             _ batch: (Int) throws(PlugboardError) -> Void) throws(PlugboardError) -> Double {
    // Calibrate: a batch of about 2 ms, so reading the clock costs nothing measurable.
    var n = 256
    while true {
        let t0 = nowNs()
        try batch(n)
        if nowNs() - t0 >= 2_000_000 || n >= 1 << 26 { break }
        n *= 2
    }
    // Warm up for about 50 ms.
    let warm = nowNs()
    while nowNs() - warm < 50_000_000 { try batch(n) }

    let perSample = UInt64(seconds / Double(samples) * 1e9)
    var best = Double.infinity
    for _ in 0..<samples {
        var ops = 0
        let t0 = nowNs()
        var elapsed: UInt64 = 0
        repeat {
            try batch(n)
            ops += n
            elapsed = nowNs() - t0
        } while elapsed < perSample
        best = min(best, Double(elapsed) / Double(ops))
    }
    return best
}

// MARK: - Threads

/// Starts a pthread running `body` (not Swift concurrency: the readers must own a core).
func spawnThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let context = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        box.body()
        return nil
    }, context)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    return thread
}

func joinThread(_ thread: pthread_t) {
    pthread_join(thread, nil)
}

/// The start and stop signals of one multi-thread sample.
final class RunFlags: Sendable {
    let ready = Atomic<Int>(0)
    let go = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
}

/// What one reader thread did; written by that thread only, read after it was joined.
final class ReaderResult: @unchecked Sendable {
    var ops = 0
    var end: UInt64 = 0
    var error: PlugboardError?
}

/// What the writer thread did; written by it only, read after it was joined.
final class WriterResult: @unchecked Sendable {
    var replacements = 0
    var error: PlugboardError?
}

/// One reader's work: `n` iterations of a case.
typealias Batch = @Sendable (Int) throws(PlugboardError) -> Void

struct ThreadsMeasurement {
    /// Wall time over all operations of all readers: the aggregate cost of one operation.
    var nsPerOp: Double
    var ops: Int
    /// Replacements the writer published per second of the sample (0: no writer).
    var replacementsPerSecond: Double
}

/// Runs each of `readers` on its own thread for about `seconds` (after a short warm-up
/// each), while `writer`, if given, runs every millisecond on another thread. Returns the
/// best of `samples` samples by aggregate ns/op.
func measureThreads(seconds: Double, samples: Int, readers: [Batch],
                    writer: (@Sendable (Int) throws(PlugboardError) -> Void)?) throws(PlugboardError) -> ThreadsMeasurement {
    var best: ThreadsMeasurement?
    let chunk = 1_000
    for _ in 0..<samples {
        let flags = RunFlags()
        let results = readers.map { _ in ReaderResult() }
        var threads: [pthread_t] = []
        for (reader, result) in zip(readers, results) {
            threads.append(spawnThread {
                do throws(PlugboardError) {
                    // Warm up: this thread's state, its snapshot cache, the code.
                    let warm = nowNs()
                    while nowNs() - warm < 20_000_000 { try reader(chunk) }
                    flags.ready.add(1, ordering: .releasing)
                    while !flags.go.load(ordering: .acquiring) { sched_yield() }
                    var ops = 0
                    repeat {
                        try reader(chunk)
                        ops += chunk
                    } while !flags.stop.load(ordering: .relaxed)
                    result.end = nowNs()
                    result.ops = ops
                } catch {
                    result.error = error
                    flags.ready.add(1, ordering: .releasing)
                }
            })
        }
        let writerResult = WriterResult()
        var writerThread: pthread_t?
        if let writer {
            writerThread = spawnThread {
                var next = timespec()
                clock_gettime(CLOCK_MONOTONIC, &next)
                var count = 0
                while !flags.stop.load(ordering: .relaxed) {
                    next.tv_nsec += 1_000_000
                    if next.tv_nsec >= 1_000_000_000 {
                        next.tv_nsec -= 1_000_000_000
                        next.tv_sec += 1
                    }
                    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
                    if !flags.go.load(ordering: .acquiring) { continue }
                    do throws(PlugboardError) {
                        try writer(count)
                        count += 1
                    } catch {
                        writerResult.error = error
                        break
                    }
                }
                writerResult.replacements = count
            }
        }
        while flags.ready.load(ordering: .acquiring) < readers.count { sleepNs(1_000_000) }
        let t0 = nowNs()
        flags.go.store(true, ordering: .releasing)
        sleepNs(UInt64(seconds / Double(samples) * 1e9))
        flags.stop.store(true, ordering: .releasing)
        for t in threads { joinThread(t) }
        if let writerThread { joinThread(writerThread) }
        for r in results { if let e = r.error { throw e } }
        if let e = writerResult.error { throw e }
        let end = results.map(\.end).max() ?? t0
        let ops = results.reduce(0) { $0 + $1.ops }
        let wall = Double(end - t0)
        let m = ThreadsMeasurement(nsPerOp: wall / Double(max(ops, 1)), ops: ops,
                                   replacementsPerSecond: Double(writerResult.replacements) / (wall / 1e9))
        if best == nil || m.nsPerOp < best!.nsPerOp { best = m }
    }
    return best!
}

// MARK: - Formatting (no Foundation)

/// `x` with `digits` decimals.
func fmt(_ x: Double, _ digits: Int = 1) -> String {
    guard x.isFinite else { return x.isNaN ? "nan" : (x > 0 ? "inf" : "-inf") }
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(x) * scale).rounded()
    let whole = Int(scaled / scale)
    var frac = String(Int(scaled - Double(whole) * scale))
    while frac.count < digits { frac = "0" + frac }
    let sign = x < 0 && scaled != 0 ? "-" : ""
    return digits == 0 ? "\(sign)\(whole)" : "\(sign)\(whole).\(frac)"
}

func pad(_ s: String, _ width: Int, right: Bool = false) -> String {
    let fill = String(repeating: " ", count: max(0, width - s.count))
    return right ? fill + s : s + fill
}

func jsonString(_ s: String) -> String {
    var out = "\""
    for ch in s.unicodeScalars {
        switch ch {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        default:
            if ch.value < 0x20 {
                let hex = String(ch.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(ch)
            }
        }
    }
    return out + "\""
}
