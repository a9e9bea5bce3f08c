#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI
import PlugboardHost

// `plugboard-bench isolated`: what a storage call costs through an isolated plugin's
// worker (the host's proxy, the wire, the worker's server) beside the same plugin in
// process, in one run: `head` and a 1 KiB `get` against MemoryStorage, one caller back to
// back and paced (one call a millisecond, so that every side has gone to sleep when a call
// comes), over the ring and the socket transport; CPU per call in the host and the worker.

struct IsolatedOptions {
    /// Timed calls per back-to-back case (after 1,000 warm-up calls).
    var calls = 20_000
    /// Timed calls per paced case (one a millisecond).
    var pacedCalls = 2_000
    var only: [String]?
    /// The folder with MemoryStorage's .so and `plugboard` (the worker's executable).
    var products: String?
}

/// Where the plugin runs: in process, or isolated over one of the two transports.
enum IsolatedWhere: String, CaseIterable {
    case inProcess = "in-process", ring, socket

    /// The manifest entry of MemoryStorage run this way.
    var entry: String {
        switch self {
        case .inProcess: #"{"name": "Mem", "product": "MemoryStorage"}"#
        case .ring: #"{"name": "Mem", "product": "MemoryStorage", "isolation": "process", "worker": {"transport": "ring"}}"#
        case .socket: #"{"name": "Mem", "product": "MemoryStorage", "isolation": "process", "worker": {"transport": "socket"}}"#
        }
    }
}

struct IsolatedCase {
    enum Call: String { case head, get }
    let place: IsolatedWhere
    let call: Call
    let paced: Bool
    var name: String { "\(place.rawValue)-\(call.rawValue)" + (paced ? "-paced" : "") }
}

let isolatedCases: [IsolatedCase] = IsolatedWhere.allCases.flatMap { place in
    [false, true].flatMap { paced in [IsolatedCase.Call.head, .get].map { IsolatedCase(place: place, call: $0, paced: paced) } }
}

struct IsolatedResult {
    let c: IsolatedCase
    let calls: Int
    let p50: Double, p99: Double, p999: Double
    /// CPU time per call, µs: this process's (the host) and the worker's.
    let hostCPU: Double
    let workerCPU: Double
    let otherLoad: Double
}

let isolatedObjectKey = "bench/object-1k"
let isolatedObjectBytes = 1024

func runIsolatedBench(_ options: IsolatedOptions, progress: (String) -> Void) async throws(BenchFailure) -> [IsolatedResult] {
    let products = options.products ?? executableFolder() ?? "."
    for needed in ["\(products)/plugboard", "\(products)/libMemoryStorage.so"] where !fileExists(needed) {
        throw BenchFailure("\(needed) is missing; build it: swift build -c release")
    }
    guard let folder = makeTemporaryFolder() else {
        throw BenchFailure("could not create a folder under /tmp: \(String(cString: strerror(errno)))")
    }
    defer { removeTree(folder) }
    var results: [IsolatedResult] = []
    // One host at a time, so that an idle worker of another case takes no CPU from it.
    for place in IsolatedWhere.allCases {
        let cases = isolatedCases.filter { $0.place == place && (options.only?.contains($0.name) ?? true) }
        guard !cases.isEmpty else { continue }
        progress("starting a host with MemoryStorage \(place.rawValue)")
        let placeFolder = "\(folder)/\(place.rawValue)"
        try makeFolder(placeFolder)
        try writeFile("\(placeFolder)/plugins.json", #"{"schemaVersion": 1, "plugins": [\#(place.entry)]}"#)
        let configuration = PluginHost.Configuration(manifestPath: "\(placeFolder)/plugins.json", cacheDirectory: "\(placeFolder)/cache",
                                                     processEnvironment: ["SWIFT_BACKTRACE": "enable=no"],
                                                     productSearchPath: [products], preflightExecutable: "\(products)/plugboard")
        let host: PluginHost
        do {
            host = try await PluginHost.start(configuration)
        } catch {
            throw BenchFailure("the host did not start MemoryStorage \(place.rawValue): \(error)")
        }
        do throws(BenchFailure) {
            guard let record = host.records.first, record.state == .active else {
                throw BenchFailure("MemoryStorage \(place.rawValue) is not active: \(host.records.first?.error.map { "\($0)" } ?? "no record")")
            }
            let worker = record.worker?.pid
            if place != .inProcess && worker == nil { throw BenchFailure("MemoryStorage \(place.rawValue) has no worker") }
            let storage: any ObjectStorage
            do {
                storage = try host.container.resolve()
                _ = try await storage.put(isolatedObjectKey, data: [UInt8](repeating: 0x62, count: isolatedObjectBytes),
                                          contentType: "application/octet-stream", metadata: [:])
            } catch {
                throw BenchFailure("MemoryStorage \(place.rawValue): could not store the object: \(error)")
            }
            for c in cases {
                progress("measuring \(c.name)")
                results.append(try await measureIsolated(c, storage: storage, worker: worker, options: options))
            }
        } catch {
            await host.shutdown()
            throw error
        }
        await host.shutdown()
    }
    return results
}

/// One caller, timing each call; the worker's CPU from its threads' schedstat.
private func measureIsolated(_ c: IsolatedCase, storage: any ObjectStorage, worker: pid_t?,
                             options: IsolatedOptions) async throws(BenchFailure) -> IsolatedResult {
    func call() async throws(BenchFailure) {
        do {
            switch c.call {
            case .head:
                let info = try await storage.head(isolatedObjectKey)
                guard info.size == isolatedObjectBytes else { throw BenchFailure("head said \(info.size) bytes") }
            case .get:
                let object = try await storage.get(isolatedObjectKey)
                guard object.data.count == isolatedObjectBytes else { throw BenchFailure("get gave \(object.data.count) bytes") }
            }
        } catch let error as BenchFailure {
            throw error
        } catch {
            throw BenchFailure("\(c.name): \(error)")
        }
    }
    for _ in 0..<1_000 { try await call() }
    let count = c.paced ? options.pacedCalls : options.calls
    var samples = [Double](repeating: 0, count: count)
    let before = CPUSnapshot.now(), hostBefore = processCPU(), workerBefore = worker.map(childCPU) ?? 0
    var next = timespec()
    clock_gettime(CLOCK_MONOTONIC, &next)
    for index in 0..<count {
        if c.paced {
            next.tv_nsec += 1_000_000
            if next.tv_nsec >= 1_000_000_000 { next.tv_nsec -= 1_000_000_000; next.tv_sec += 1 }
            while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nil) == EINTR {}
        }
        let t0 = nowNs()
        try await call()
        samples[index] = Double(nowNs() - t0) / 1e3
    }
    let after = CPUSnapshot.now(), hostAfter = processCPU(), workerAfter = worker.map(childCPU) ?? 0
    samples.sort()
    func percentile(_ p: Double) -> Double { samples[min(count - 1, Int(Double(count) * p))] }
    let wall = Double(after.wall - before.wall) / 1e9
    return IsolatedResult(c: c, calls: count, p50: percentile(0.5), p99: percentile(0.99), p999: percentile(0.999),
                          hostCPU: (hostAfter - hostBefore) / Double(count) * 1e6,
                          workerCPU: (workerAfter - workerBefore) / Double(count) * 1e6,
                          otherLoad: after.otherLoad(since: before) - (workerAfter - workerBefore) / wall)
}

private func makeTemporaryFolder() -> String? {
    var template = Array("/tmp/plugboard-bench-isolated-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { buf in mkdtemp(buf.baseAddress!).map { String(cString: $0) } }
}

/// The in-process case of the same call and pacing, which an isolated case's figures are
/// compared with.
private func baseline(of r: IsolatedResult, in results: [IsolatedResult]) -> IsolatedResult? {
    results.first { $0.c.place == .inProcess && $0.c.call == r.c.call && $0.c.paced == r.c.paced }
}

func isolatedTextLine(_ r: IsolatedResult, in results: [IsolatedResult]) -> String {
    var line = pad(r.c.name, 22) + "p50 " + pad(fmt(r.p50, 1), 7, right: true) + " µs  p99 " + pad(fmt(r.p99, 1), 7, right: true)
        + " µs  p99.9 " + pad(fmt(r.p999, 1), 7, right: true) + " µs"
    if r.c.place != .inProcess, let base = baseline(of: r, in: results) {
        line += "  added p50 " + fmt(r.p50 - base.p50, 1) + " µs, p99 " + fmt(r.p99 - base.p99, 1) + " µs"
    }
    line += "   CPU a call: host " + fmt(r.hostCPU, 1) + " µs" + (r.c.place == .inProcess ? "" : ", worker " + fmt(r.workerCPU, 1) + " µs")
    if r.otherLoad >= PlugboardBench.noisyLoad { line += "  [noisy: other processes used \(fmt(r.otherLoad, 2)) cores]" }
    return line
}

func isolatedJSONLine(_ r: IsolatedResult, in results: [IsolatedResult]) -> String {
    var fields: [(String, String)] = [
        ("case", jsonString(r.c.name)), ("where", jsonString(r.c.place.rawValue)), ("call", jsonString(r.c.call.rawValue)),
        ("paced", r.c.paced ? "true" : "false"), ("calls", String(r.calls)),
        ("p50_us", fmt(r.p50, 2)), ("p99_us", fmt(r.p99, 2)), ("p999_us", fmt(r.p999, 2)),
    ]
    if r.c.place != .inProcess, let base = baseline(of: r, in: results) {
        fields += [("added_p50_us", fmt(r.p50 - base.p50, 2)), ("added_p99_us", fmt(r.p99 - base.p99, 2))]
    }
    fields += [("host_cpu_us_per_call", fmt(r.hostCPU, 2)), ("worker_cpu_us_per_call", fmt(r.workerCPU, 2)),
               ("other_cpu_load", fmt(r.otherLoad, 2))]
    return "{" + fields.map { "\(jsonString($0.0)):\($0.1)" }.joined(separator: ",") + "}"
}
