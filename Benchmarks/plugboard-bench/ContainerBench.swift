import BenchFloor
import PlugboardAPI

/// One line of the report.
struct CaseResult {
    let name: String
    let nsPerOp: Double
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
}

func runContainerBench(_ o: BenchOptions, progress: (String) -> Void) throws(PlugboardError) -> [CaseResult] {
    let c = try makeBenchContainer()
    let s = o.seconds, k = o.samples

    let holder = FloorHolder(BenchImpl(1))
    let holder2 = FloorHolder(BenchImpl(2))

    progress("floor")
    let floorA = try measure(seconds: s, samples: k, floorBatch(holder))
    progress("alloc")
    let alloc = try measure(seconds: s, samples: k, allocBatch())
    progress("singleton")
    let singleton = try measure(seconds: s, samples: k, singletonBatch(c))
    progress("transient")
    let transient = try measure(seconds: s, samples: k, transientBatch(c))
    progress("named")
    let named = try measure(seconds: s, samples: k, namedBatch(c))
    progress("miss")
    let miss = try measure(seconds: s, samples: k, missBatch(c))
    progress("handle")
    let handle = try measure(seconds: s, samples: k, handleBatch(c.handle((any BenchService).self)))
    progress("floor (again)")
    let floorB = try measure(seconds: s, samples: k, floorBatch(holder))
    let floor = min(floorA, floorB)

    // Two threads: fewer, longer samples (each spawns its threads anew).
    let tk = max(1, min(k, 3))
    let writer = replaceBatch(c)
    progress("floor-threads-one")
    let floorOne = try measureThreads(seconds: s, samples: tk, readers: [floorBatch(holder)], writer: nil)
    progress("floor-threads-shared")
    let floorShared = try measureThreads(seconds: s, samples: tk,
                                         readers: [floorBatch(holder), floorBatch(holder)], writer: nil)
    progress("floor-threads-distinct")
    let floorDistinct = try measureThreads(seconds: s, samples: tk,
                                           readers: [floorBatch(holder), floorBatch(holder2)], writer: nil)
    progress("threads-one")
    let threadsOne = try measureThreads(seconds: s, samples: tk, readers: [singletonBatch(c)], writer: writer)
    progress("threads-shared")
    let threadsShared = try measureThreads(seconds: s, samples: tk,
                                           readers: [singletonBatch(c), singletonBatch(c)], writer: writer)
    progress("threads-distinct")
    let threadsDistinct = try measureThreads(seconds: s, samples: tk,
                                             readers: [distinctBatch(c, reader: 0), distinctBatch(c, reader: 1)],
                                             writer: writer)

    func ratioGate(_ ns: Double, _ limit: Double) -> Gate {
        Gate(text: "<= \(fmt(limit, 1))x floor", pass: ns <= limit * floor)
    }
    let floorSharedSpeedup = floorOne.nsPerOp / floorShared.nsPerOp

    var out: [CaseResult] = []
    out.append(CaseResult(name: "floor", nsPerOp: floor,
                          note: "min of \(fmt(floorA, 2)) (first) and \(fmt(floorB, 2)) (last)"))
    out.append(CaseResult(name: "singleton", nsPerOp: singleton, gate: ratioGate(singleton, 1.5)))
    out.append(CaseResult(name: "handle", nsPerOp: handle, gate: ratioGate(handle, 1.2)))
    out.append(CaseResult(name: "transient", nsPerOp: transient,
                          gate: Gate(text: "<= 1.5x floor + alloc = \(fmt(1.5 * floor + alloc, 1)) ns",
                                     pass: transient <= 1.5 * floor + alloc)))
    out.append(CaseResult(name: "alloc", nsPerOp: alloc,
                          note: "one allocation and release of the transient's class"))
    out.append(CaseResult(name: "named", nsPerOp: named, note: "no gate"))
    out.append(CaseResult(name: "miss", nsPerOp: miss, gate: Gate(text: "<= 500 ns", pass: miss <= 500)))
    out.append(CaseResult(name: "floor-threads-one", nsPerOp: floorOne.nsPerOp,
                          note: "floor on one thread (for the two-thread ratios)"))
    out.append(CaseResult(name: "floor-threads-shared", nsPerOp: floorShared.nsPerOp, threads: 2,
                          oneThreadNsPerOp: floorOne.nsPerOp, note: "two threads, one shared object"))
    out.append(CaseResult(name: "floor-threads-distinct", nsPerOp: floorDistinct.nsPerOp, threads: 2,
                          oneThreadNsPerOp: floorOne.nsPerOp, note: "two threads, distinct objects"))
    out.append(CaseResult(name: "threads-one", nsPerOp: threadsOne.nsPerOp,
                          replacementsPerSecond: threadsOne.replacementsPerSecond,
                          note: "one reader while the writer replaces every ms"))
    out.append(CaseResult(name: "threads-shared", nsPerOp: threadsShared.nsPerOp, threads: 2,
                          oneThreadNsPerOp: threadsOne.nsPerOp,
                          replacementsPerSecond: threadsShared.replacementsPerSecond,
                          gate: Gate(text: "speedup >= floor's \(fmt(floorSharedSpeedup, 2))x",
                                     pass: threadsOne.nsPerOp / threadsShared.nsPerOp >= floorSharedSpeedup)))
    out.append(CaseResult(name: "threads-distinct", nsPerOp: threadsDistinct.nsPerOp, threads: 2,
                          oneThreadNsPerOp: threadsOne.nsPerOp,
                          replacementsPerSecond: threadsDistinct.replacementsPerSecond,
                          gate: Gate(text: "speedup >= 1.6x", pass: threadsOne.nsPerOp / threadsDistinct.nsPerOp >= 1.6)))
    return out
}
