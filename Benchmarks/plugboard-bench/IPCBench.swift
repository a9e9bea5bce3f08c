#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardIPC
import Synchronization

// `plugboard-bench ipc`: a call-sized round trip (64 bytes out, 256 back) between this
// process and `ipc-echo` in a child, over the socket transport and the ring transport, in
// one run: latency with one caller (back to back, and paced so that both sides sleep
// between calls), and throughput with 16 calls in flight from 4 threads; CPU time per call
// in both processes.

struct IPCOptions {
    /// Timed round trips per latency case (after 1,000 warm-up trips).
    var trips = 20_000
    /// Timed round trips of a paced case (one a millisecond).
    var pacedTrips = 2_000
    /// Seconds of a throughput case (after 0.3 s of warm-up).
    var seconds = 2.0
    var only: [String]?
    var echo: String?
    /// Run the child on this CPU (through taskset), to measure across vCPUs when this
    /// process is pinned to another: a loaded machine otherwise runs both on one.
    var childCPU: Int?
}

/// One case: which transport, how long each side spins before it sleeps, and the load.
struct IPCCase {
    enum Load { case backToBack, paced, inFlight }
    let name: String
    let kind: TransportKind
    let spinNanoseconds: Int
    let load: Load
}

let ipcCases: [IPCCase] = [
    IPCCase(name: "socket", kind: .socket, spinNanoseconds: 0, load: .backToBack),
    IPCCase(name: "ring-spin0", kind: .ring, spinNanoseconds: 0, load: .backToBack),
    IPCCase(name: "ring", kind: .ring, spinNanoseconds: RingTransport.Configuration().spinNanoseconds, load: .backToBack),
    IPCCase(name: "socket-paced", kind: .socket, spinNanoseconds: 0, load: .paced),
    IPCCase(name: "ring-spin0-paced", kind: .ring, spinNanoseconds: 0, load: .paced),
    IPCCase(name: "ring-paced", kind: .ring, spinNanoseconds: RingTransport.Configuration().spinNanoseconds, load: .paced),
    IPCCase(name: "socket-16x4", kind: .socket, spinNanoseconds: 0, load: .inFlight),
    IPCCase(name: "ring-spin0-16x4", kind: .ring, spinNanoseconds: 0, load: .inFlight),
    IPCCase(name: "ring-16x4", kind: .ring, spinNanoseconds: RingTransport.Configuration().spinNanoseconds, load: .inFlight),
]

let callBytes = 64
let answerBytes = 256

struct IPCResult {
    let name: String
    let kind: TransportKind
    let spinNanoseconds: Int
    let calls: Int
    /// Latency cases: percentiles of one round trip, µs.
    var p50: Double?
    var p99: Double?
    var p999: Double?
    /// Throughput cases: calls answered per second.
    var callsPerSecond: Double?
    /// CPU time per call, µs: this process's and the child's.
    let hostCPU: Double
    let childCPU: Double
    let otherLoad: Double
}

struct IPCBenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func runIPCBench(_ options: IPCOptions, progress: (String) -> Void) throws(IPCBenchFailure) -> [IPCResult] {
    let echo = options.echo ?? "\(executableFolder() ?? ".")/ipc-echo"
    guard access(echo, X_OK) == 0 else {
        throw IPCBenchFailure("\(echo) is not an executable; build it: swift build -c release --product ipc-echo")
    }
    var results: [IPCResult] = []
    for c in ipcCases where options.only?.contains(c.name) ?? true {
        progress("measuring \(c.name)")
        results.append(try runIPCCase(c, echo: echo, options: options))
    }
    return results
}

/// Starts `ipc-echo` on a fresh transport of the case's kind, runs the case, stops the child.
private func runIPCCase(_ c: IPCCase, echo: String, options: IPCOptions) throws(IPCBenchFailure) -> IPCResult {
    let host: any FrameTransport
    let descriptors: [Int32]
    do {
        if c.kind == .ring {
            let (ring, child) = try RingTransport.pair(configuration: .init(spinNanoseconds: c.spinNanoseconds))
            (host, descriptors) = (ring, child)
        } else {
            (host, descriptors) = try Transports.make(c.kind)
        }
    } catch {
        throw IPCBenchFailure("could not make a \(c.kind) transport: \(error)")
    }
    let pid: pid_t
    do {
        let command = [echo, c.kind.rawValue, "--answer-bytes", "\(answerBytes)", "--spin-ns", "\(c.spinNanoseconds)"]
        // taskset execs the echo with the descriptors where they are (3, 4: not close-on-exec).
        let pinned = options.childCPU.map { ["/usr/bin/taskset", "-c", "\($0)"] + command } ?? command
        pid = try spawnProcess(pinned, descriptors: descriptors)
    } catch {
        throw IPCBenchFailure("\(error)")
    }
    for fd in descriptors { close(fd) }
    defer {
        try? host.send(Frame(.stop))
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        host.close()
    }
    do {
        switch c.load {
        case .backToBack, .paced: return try latency(c, host: host, child: pid, options: options)
        case .inFlight: return try throughput(c, host: host, child: pid, options: options)
        }
    } catch {
        throw IPCBenchFailure("\(c.name): \(error)")
    }
}

/// One caller that sends a call and takes its answer itself (the transport's reader is the
/// caller), timing each round trip.
private func latency(_ c: IPCCase, host: any FrameTransport, child: pid_t, options: IPCOptions) throws(IPCError) -> IPCResult {
    let call = [UInt8](repeating: 0x63, count: callBytes)
    func trip(_ stream: UInt32) throws(IPCError) {
        try host.send(Frame(.call, stream: stream, payload: call))
        guard let answer = try host.receive(), answer.stream == stream, answer.payload.count == answerBytes else {
            throw .malformed("expected the answer to call \(stream)")
        }
    }
    for index in 0..<1_000 { try trip(UInt32(index)) }
    let count = c.load == .paced ? options.pacedTrips : options.trips
    var samples = [Double](repeating: 0, count: count)
    let before = CPUSnapshot.now(), hostBefore = processCPU(), childBefore = childCPU(child)
    var next = timespec()
    clock_gettime(CLOCK_MONOTONIC, &next)
    for index in 0..<count {
        if c.load == .paced {
            next.tv_nsec += 1_000_000
            if next.tv_nsec >= 1_000_000_000 { next.tv_nsec -= 1_000_000_000; next.tv_sec += 1 }
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
        }
        let t0 = nowNs()
        try trip(UInt32(index))
        samples[index] = Double(nowNs() - t0) / 1e3
    }
    let after = CPUSnapshot.now(), hostAfter = processCPU(), childAfter = childCPU(child)
    samples.sort()
    func percentile(_ p: Double) -> Double { samples[min(count - 1, Int(Double(count) * p))] }
    var result = IPCResult(name: c.name, kind: c.kind, spinNanoseconds: c.spinNanoseconds, calls: count,
                           hostCPU: (hostAfter - hostBefore) / Double(count) * 1e6,
                           childCPU: (childAfter - childBefore) / Double(count) * 1e6,
                           otherLoad: after.otherLoad(since: before) - (childAfter - childBefore) / (Double(after.wall - before.wall) / 1e9))
    result.p50 = percentile(0.5)
    result.p99 = percentile(0.99)
    result.p999 = percentile(0.999)
    return result
}

/// Four caller threads keep four calls each in flight; one reader thread hands each answer
/// to its caller (a semaphore per caller), as the host's connection reader will.
private func throughput(_ c: IPCCase, host: any FrameTransport, child: pid_t, options: IPCOptions) throws(IPCError) -> IPCResult {
    let callers = 4, window = 4
    let semaphores = UnsafeMutablePointer<sem_t>.allocate(capacity: callers)
    for index in 0..<callers { sem_init(semaphores + index, 0, 0) }
    defer {
        for index in 0..<callers { sem_destroy(semaphores + index) }
        semaphores.deallocate()
    }
    let semaphoresAddress = UInt(bitPattern: semaphores)
    let state = ThroughputState()
    let reader = spawnThread {
        let semaphores = UnsafeMutablePointer<sem_t>(bitPattern: semaphoresAddress)!
        while let answer = try? host.receive() {
            sem_post(semaphores + Int(answer.stream % UInt32(callers)))
        }
    }
    let call = [UInt8](repeating: 0x63, count: callBytes)
    var threads: [pthread_t] = []
    for caller in 0..<callers {
        threads.append(spawnThread {
            let semaphore = UnsafeMutablePointer<sem_t>(bitPattern: semaphoresAddress)! + caller
            var stream = UInt32(caller)
            do {
                for _ in 0..<window {
                    try host.send(Frame(.call, stream: stream, payload: call))
                    stream &+= UInt32(callers)
                }
                while true {
                    while sem_wait(semaphore) != 0 {}
                    if state.stop.load(ordering: .relaxed) { break }
                    if state.counting.load(ordering: .relaxed) { state.calls.add(1, ordering: .relaxed) }
                    try host.send(Frame(.call, stream: stream, payload: call))
                    stream &+= UInt32(callers)
                }
                // The calls still in flight, so that the next case starts clean.
                for _ in 1..<window { while sem_wait(semaphore) != 0 {} }
            } catch {
                state.failed.store(true, ordering: .relaxed)
            }
        })
    }
    sleepNs(300_000_000)
    let before = CPUSnapshot.now(), hostBefore = processCPU(), childBefore = childCPU(child)
    state.counting.store(true, ordering: .relaxed)
    sleepNs(UInt64(options.seconds * 1e9))
    state.counting.store(false, ordering: .relaxed)
    let after = CPUSnapshot.now(), hostAfter = processCPU(), childAfter = childCPU(child)
    state.stop.store(true, ordering: .relaxed)
    for thread in threads { joinThread(thread) }
    host.close()
    joinThread(reader)
    guard !state.failed.load(ordering: .relaxed) else { throw .malformed("a caller's send failed") }
    let calls = state.calls.load(ordering: .relaxed)
    let wall = Double(after.wall - before.wall) / 1e9
    var result = IPCResult(name: c.name, kind: c.kind, spinNanoseconds: c.spinNanoseconds, calls: calls,
                           hostCPU: (hostAfter - hostBefore) / Double(max(calls, 1)) * 1e6,
                           childCPU: (childAfter - childBefore) / Double(max(calls, 1)) * 1e6,
                           otherLoad: after.otherLoad(since: before) - (childAfter - childBefore) / wall)
    result.callsPerSecond = Double(calls) / wall
    return result
}

private final class ThroughputState: Sendable {
    let counting = Atomic<Bool>(false)
    let stop = Atomic<Bool>(false)
    let failed = Atomic<Bool>(false)
    let calls = Atomic<Int>(0)
}

/// This process's CPU seconds, all threads.
func processCPU() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// A running child's CPU seconds, all threads, to the nanosecond (the first field of each
/// thread's schedstat; /proc/<pid>/stat counts in 10 ms ticks).
func childCPU(_ pid: pid_t) -> Double {
    guard let folder = opendir("/proc/\(pid)/task") else { return 0 }
    defer { closedir(folder) }
    var total = 0.0
    while let entry = readdir(folder) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        guard name.first?.isNumber == true, let bytes = try? readFile("/proc/\(pid)/task/\(name)/schedstat") else { continue }
        let first = bytes.prefix { $0 != UInt8(ascii: " ") }
        total += Double(String(decoding: first, as: UTF8.self)) ?? 0
    }
    return total / 1e9
}

func ipcTextLine(_ r: IPCResult) -> String {
    var line = pad(r.name, 18)
    if let p50 = r.p50, let p99 = r.p99, let p999 = r.p999 {
        line += "p50 " + pad(fmt(p50, 1), 7, right: true) + " µs  p99 " + pad(fmt(p99, 1), 7, right: true)
            + " µs  p99.9 " + pad(fmt(p999, 1), 7, right: true) + " µs"
    }
    if let rate = r.callsPerSecond {
        line += pad(fmt(rate, 0), 8, right: true) + " calls/s (" + fmt(1e6 / rate, 2) + " µs a call)"
    }
    line += "   CPU a call: host " + fmt(r.hostCPU, 1) + " µs, child " + fmt(r.childCPU, 1) + " µs"
    if r.otherLoad >= PlugboardBench.noisyLoad { line += "  [noisy: other processes used \(fmt(r.otherLoad, 2)) cores]" }
    return line
}

func ipcJSONLine(_ r: IPCResult) -> String {
    var fields: [(String, String)] = [
        ("case", jsonString(r.name)), ("transport", jsonString(r.kind.rawValue)), ("spin_ns", String(r.spinNanoseconds)),
        ("calls", String(r.calls)),
    ]
    if let p50 = r.p50, let p99 = r.p99, let p999 = r.p999 {
        fields += [("p50_us", fmt(p50, 2)), ("p99_us", fmt(p99, 2)), ("p999_us", fmt(p999, 2))]
    }
    if let rate = r.callsPerSecond { fields.append(("calls_per_second", fmt(rate, 0))) }
    fields += [("host_cpu_us_per_call", fmt(r.hostCPU, 2)), ("child_cpu_us_per_call", fmt(r.childCPU, 2)),
               ("other_cpu_load", fmt(r.otherLoad, 2))]
    return "{" + fields.map { "\(jsonString($0.0)):\($0.1)" }.joined(separator: ",") + "}"
}
