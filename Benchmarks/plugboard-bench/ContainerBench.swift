import BenchFloor
import PlugboardAPI

/// One line of the report.
struct CaseResult {
    let name: String
    let nsPerOp: Double
    /// Cores other processes kept busy while the case ran.
    var otherLoad: Double?
    var threads = 1
    /// Two-thread cases: the one-thread figure they are compared with, and the speedup.
    var oneThreadNsPerOp: Double?
    var replacementsPerSecond: Double?
    var gate: Gate?
    var note: String?

    var speedup: Double? { oneThreadNsPerOp.map { $0 / nsPerOp } }
}

/// An acceptance gate and its verdict.
struct Gate {
    let text: String
    let pass: Bool
}

/// The registered keys (at least 100 unnamed keys of distinct types, plus 100 named ones):
/// - `BenchService`, unnamed, singleton: `singleton`, `handle`, `threads-shared`;
/// - `BenchService`, named `svc-000` ... `svc-099`, singletons: `named`;
/// - `Service000` ... `Service099`, unnamed, singletons: `threads-distinct` (000 and 001);
/// - `TransientService`, unnamed, transient: `transient`;
/// - `ReplacedService`, unnamed, instance: replaced every millisecond by the writer thread;
/// - `MissingService` is never registered: `miss`.
func makeBenchContainer() throws(PlugboardError) -> Container {
    let c = Container()
    try registerGeneratedServices(c)
    try c.register((any BenchService).self, scope: .singleton) { _ in BenchImpl(1) }
    for i in 0..<100 {
        try c.register((any BenchService).self, name: serviceName(i), scope: .singleton) { _ in BenchImpl(i) }
    }
    try c.register((any TransientService).self, scope: .transient) { _ in BenchImpl(1) }
    try c.register((any ReplacedService).self, instance: BenchImpl(0))

    // Build every singleton, and check the container answers as the cases assume.
    _ = try resolveGeneratedServices(c)
    for i in 0..<100 { _ = try c.resolve((any BenchService).self, name: serviceName(i)) }
    let a = try c.resolve((any BenchService).self), b = try c.resolve((any BenchService).self)
    precondition(a === b, "singleton resolved to two objects")
    let t1 = try c.resolve((any TransientService).self), t2 = try c.resolve((any TransientService).self)
    precondition(t1 !== t2, "transient resolved to one object")
    let s0 = try c.resolve((any Service000).self), s1 = try c.resolve((any Service001).self)
    precondition(s0 !== s1, "distinct services share an object")
    do throws(PlugboardError) {
        _ = try c.resolve((any MissingService).self)
        preconditionFailure("MissingService resolved")
    } catch {
        precondition(error.code == .notRegistered, "miss threw \(error.code)")
    }
    return c
}

func serviceName(_ i: Int) -> String {
    let digits = String(i)
    return "svc-" + String(repeating: "0", count: max(0, 3 - digits.count)) + digits
}

// MARK: - The loops
//
// Each loop body resolves, calls `ping()` on the result, and feeds that into the sink.

func floorBatch(_ holder: FloorHolder) -> Batch {
    { n in
        for _ in 0..<n { blackHole(holder.get().ping()) }
    }
}

func singletonBatch(_ c: Container) -> Batch {
    { (n: Int) throws(PlugboardError) in
        for _ in 0..<n { blackHole(try c.resolve((any BenchService).self).ping()) }
    }
}

func transientBatch(_ c: Container) -> Batch {
    { (n: Int) throws(PlugboardError) in
        for _ in 0..<n { blackHole(try c.resolve((any TransientService).self).ping()) }
    }
}

func namedBatch(_ c: Container) -> Batch {
    { (n: Int) throws(PlugboardError) in
        for _ in 0..<n { blackHole(try c.resolve((any BenchService).self, name: "svc-042").ping()) }
    }
}

func missBatch(_ c: Container) -> Batch {
    { n in
        for _ in 0..<n {
            do throws(PlugboardError) {
                blackHole(try c.resolve((any MissingService).self).ping())
            } catch {
                // The code only: the message is rendered lazily, on purpose.
                blackHole(error.code.rawValue.utf8.count)
            }
        }
    }
}

/// A request's bookkeeping around its resolves: take a lease on the current generation,
/// read its generation (as `serve` names it in `X-Plugboard-Generation`), release it.
func leaseBatch(_ c: Container) -> Batch {
    { n in
        for _ in 0..<n {
            let lease = c.lease()
            blackHole(Int(truncatingIfNeeded: lease.generation))
            lease.release()
        }
    }
}

func handleBatch(_ h: ServiceHandle<any BenchService>) -> Batch {
    { (n: Int) throws(PlugboardError) in
        for _ in 0..<n { blackHole(try h.current.ping()) }
    }
}

/// One allocation of the transient's class, and its release: what "plus one allocation"
/// in the transient gate stands for.
func allocBatch() -> Batch {
    { n in
        for _ in 0..<n { blackHole(makeImpl(1).value) }
    }
}

func distinctBatch(_ c: Container, reader: Int) -> Batch {
    if reader == 0 {
        return { (n: Int) throws(PlugboardError) in
            for _ in 0..<n { blackHole(try c.resolve((any Service000).self).ping()) }
        }
    }
    return { (n: Int) throws(PlugboardError) in
        for _ in 0..<n { blackHole(try c.resolve((any Service001).self).ping()) }
    }
}

/// The writer of the two-thread cases: replaces a service no reader resolves, so each
/// replacement publishes a new generation (every reader refreshes its snapshot once).
func replaceBatch(_ c: Container) -> @Sendable (Int) throws(PlugboardError) -> Void {
    { (i: Int) throws(PlugboardError) in
        try c.replace((any ReplacedService).self, instance: BenchImpl(i))
    }
}

// MARK: - The run

struct BenchOptions {
    var seconds = 0.5
    var samples = 5
    /// Only these cases (and what their gates need); nil: all.
    var only: [String]?
}

/// Every case, in the order of the report. `floor` is always measured.
let allCases = ["floor", "singleton", "handle", "transient", "alloc", "named", "miss", "lease",
                "floor-threads-one", "floor-threads-shared", "floor-threads-distinct",
                "threads-one", "threads-shared", "threads-distinct"]

/// The cases a case's gate needs besides the floor.
let caseInputs: [String: [String]] = [
    "transient": ["alloc"],
    "threads-shared": ["threads-one", "floor-threads-one", "floor-threads-shared"],
    "threads-distinct": ["threads-one"],
    "floor-threads-shared": ["floor-threads-one"],
    "floor-threads-distinct": ["floor-threads-one"],
]

func runContainerBench(_ o: BenchOptions, progress: (String) -> Void) throws(PlugboardError) -> [CaseResult] {
    let c = try makeBenchContainer()
    let s = o.seconds, k = o.samples
    let tk = max(1, min(k, 3))  // two-thread cases: fewer samples, each spawns its threads anew

    var wanted = Set(o.only ?? allCases)
    wanted.insert("floor")
    for name in wanted { wanted.formUnion(caseInputs[name] ?? []) }
    for name in wanted { wanted.formUnion(caseInputs[name] ?? []) }

    let holder = FloorHolder(BenchImpl(1))
    let holder2 = FloorHolder(BenchImpl(2))
    let writer = replaceBatch(c)

    // ns/op, and the CPU other processes used while each case ran, in cores: a busy
    // machine makes the figures worse, the two-thread ones most.
    var ns: [String: Double] = [:]
    var replacements: [String: Double] = [:]
    var load: [String: Double] = [:]
    func single(_ name: String, as key: String? = nil, _ batch: Batch) throws(PlugboardError) {
        guard wanted.contains(name) else { return }
        progress(key ?? name)
        let before = CPUSnapshot.now()
        ns[key ?? name] = try measure(seconds: s, samples: k, batch)
        load[key ?? name] = CPUSnapshot.now().otherLoad(since: before)
    }
    func threads(_ name: String, _ readers: [Batch], writer: (@Sendable (Int) throws(PlugboardError) -> Void)?) throws(PlugboardError) {
        guard wanted.contains(name) else { return }
        progress(name)
        let before = CPUSnapshot.now()
        let m = try measureThreads(seconds: s, samples: tk, readers: readers, writer: writer)
        load[name] = CPUSnapshot.now().otherLoad(since: before)
        ns[name] = m.nsPerOp
        if writer != nil { replacements[name] = m.replacementsPerSecond }
    }

    try single("floor", as: "floor-first", floorBatch(holder))
    try single("alloc", allocBatch())
    try single("singleton", singletonBatch(c))
    try single("transient", transientBatch(c))
    try single("named", namedBatch(c))
    try single("miss", missBatch(c))
    try single("handle", handleBatch(c.handle((any BenchService).self)))
    try single("lease", leaseBatch(c))
    try single("floor", as: "floor-last", floorBatch(holder))
    let floorFirst = ns["floor-first"]!, floorLast = ns["floor-last"]!
    let floor = min(floorFirst, floorLast)
    ns["floor"] = floor
    load["floor"] = floorFirst <= floorLast ? load["floor-first"] : load["floor-last"]

    try threads("floor-threads-one", [floorBatch(holder)], writer: nil)
    try threads("floor-threads-shared", [floorBatch(holder), floorBatch(holder)], writer: nil)
    try threads("floor-threads-distinct", [floorBatch(holder), floorBatch(holder2)], writer: nil)
    try threads("threads-one", [singletonBatch(c)], writer: writer)
    try threads("threads-shared", [singletonBatch(c), singletonBatch(c)], writer: writer)
    try threads("threads-distinct", [distinctBatch(c, reader: 0), distinctBatch(c, reader: 1)], writer: writer)

    let threadsOne = ns["threads-one"] ?? .nan, floorOne = ns["floor-threads-one"] ?? .nan
    func result(_ name: String) -> CaseResult? {
        guard let v = ns[name] else { return nil }
        var r = CaseResult(name: name, nsPerOp: v, otherLoad: load[name])
        r.replacementsPerSecond = replacements[name]
        switch name {
        case "floor":
            r.note = "best of \(fmt(floorFirst, 2)) (first) and \(fmt(floorLast, 2)) (last)"
        case "singleton":
            r.gate = Gate(text: "<= 1.5x floor", pass: v <= 1.5 * floor)
        case "handle":
            r.gate = Gate(text: "<= 1.2x floor", pass: v <= 1.2 * floor)
        case "transient":
            let limit = 1.5 * floor + ns["alloc"]!
            r.gate = Gate(text: "<= 1.5x floor + alloc = \(fmt(limit, 1)) ns", pass: v <= limit)
        case "alloc":
            r.note = "one allocation and release of the transient's class"
        case "named":
            r.gate = Gate(text: "<= 2x floor", pass: v <= 2 * floor)
        case "lease":
            r.note = "lease, its generation, release; no gate"
        case "miss":
            r.gate = Gate(text: "<= 500 ns", pass: v <= 500)
        case "floor-threads-one":
            r.note = "floor on one thread, the base of the floor's two-thread ratios"
        case "floor-threads-shared":
            r.threads = 2
            r.oneThreadNsPerOp = floorOne
            r.note = "two threads, one shared object"
        case "floor-threads-distinct":
            r.threads = 2
            r.oneThreadNsPerOp = floorOne
            r.note = "two threads, distinct objects"
        case "threads-one":
            r.note = "one reader while the writer replaces every ms"
        case "threads-shared":
            r.threads = 2
            r.oneThreadNsPerOp = threadsOne
            let floorSpeedup = floorOne / ns["floor-threads-shared"]!
            r.gate = Gate(text: "speedup >= floor's \(fmt(floorSpeedup, 2))x", pass: threadsOne / v >= floorSpeedup)
        case "threads-distinct":
            r.threads = 2
            r.oneThreadNsPerOp = threadsOne
            r.gate = Gate(text: "speedup >= 1.6x", pass: threadsOne / v >= 1.6)
        default:
            break
        }
        return r
    }
    return allCases.compactMap(result)
}
