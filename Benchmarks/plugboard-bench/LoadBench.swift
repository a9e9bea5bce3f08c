#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI
import PlugboardHost

// `plugboard-bench load`: the full loader against a bare dlopen + entry-call loop, in
// one run, and the start-up of `plugboard services` as a whole process.

struct LoadOptions {
    /// Rounds per case (each round loads N fresh plugins); N = 1 takes at least 30.
    var rounds = 3
    /// Runs per start-up figure (the median counts).
    var startupRuns = 5
    var only: [String]?
    var swiftc: String?
    /// Keep the run's plugin copies, caches and manifests (for perf and debugging).
    var keepFiles = false
}

/// Every case, in the order of the report.
let loadCases = ["load-1", "load-10", "load-100", "load-100-warm", "startup-services-100", "startup-services-100-warm"]

/// The loader may cost this much more than the floor (the issue's goal).
let loadGateRatio = 1.3

/// One line of the load report.
struct LoadResult {
    let name: String
    let plugins: Int
    let rounds: Int
    /// Best round, µs per plugin (start-up cases: the median process's extra time over
    /// the empty manifest's, per plugin).
    let usPerPlugin: Double
    let floorUsPerPlugin: Double
    var medianUsPerPlugin: Double?
    var floorMedianUsPerPlugin: Double?
    var otherLoad: Double
    var gate: Gate?
    var note: String?
    /// Start-up cases: median wall time of the process with N plugins, and with none.
    var startupMs: Double?
    var emptyStartupMs: Double?

    var ratio: Double { usPerPlugin / floorUsPerPlugin }
}

/// The entry point's C type (PlugboardHost's PluginLoader.EntryPoint).
typealias EntryPoint = @convention(c) (Int32, UnsafeMutableRawPointer?) -> Int32

// MARK: - The two loops

/// The floor: the work a plugin load cannot avoid, for each path in turn:
/// `dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)`, `dlsym` of the entry point,
/// the handshake call (op 1, the words are not checked), and registration: a
/// `PluginRegistrar` and `PluginCall` as the loader makes them, the register call
/// (op 3), the commit of its transaction into the container. No file checks, no hash,
/// no copy, no handshake check, no record. Returns the wall time in µs.
func floorRound(_ paths: [String], container: Container) async throws(BenchFailure) -> Double {
    let t0 = nowNs()
    for (i, path) in paths.enumerated() {
        guard let handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) else {
            throw BenchFailure("floor: dlopen \(path) failed: \(dlerror().map { String(cString: $0) } ?? "?")")
        }
        guard let symbol = dlsym(handle, PluginEntry.symbolName) else {
            throw BenchFailure("floor: \(path) has no \(PluginEntry.symbolName)")
        }
        let entry = unsafeBitCast(symbol, to: EntryPoint.self)
        var words = [UInt64](repeating: 0, count: PluginHandshake.wordCount)
        let shook = words.withUnsafeMutableBytes { entry(PluginEntry.Op.handshake, $0.baseAddress) }
        let name = "p" + threeDigits(i)
        let registrar = PluginRegistrar(pluginName: name, container: container, config: PluginConfig(plugin: name),
                                        logger: .disabled, rank: 0)
        let call = PluginCall(registrar: registrar)
        let status = entry(PluginEntry.Op.register, Unmanaged.passUnretained(call).toOpaque())
        guard shook == PluginEntry.Status.ok, status == PluginEntry.Status.ok else {
            throw BenchFailure("floor: \(path) answered handshake \(shook), register \(status)")
        }
        do {
            try await container.commit(registrar.transaction)
        } catch {
            throw BenchFailure("floor: commit of \(path) failed: \(error.message)")
        }
    }
    return Double(nowNs() - t0) / 1000
}

/// The loader: `PluginLoader.load` of each path in turn (every check, SHA-256, the
/// cache copy, dlopen of the copy, the handshake and its check, registration, the
/// commit, the record). Returns the wall time in µs.
func loaderRound(_ paths: [String], loader: PluginLoader) async throws(BenchFailure) -> Double {
    var records: [PluginRecord] = []
    records.reserveCapacity(paths.count)
    let t0 = nowNs()
    for (i, path) in paths.enumerated() {
        records.append(await loader.load(PluginLoader.Request(name: "p" + threeDigits(i), path: path)))
    }
    let us = Double(nowNs() - t0) / 1000
    for r in records where r.state != .active {
        throw BenchFailure("loader: plugin \(r.name) is \(r.state): \(r.error?.message ?? "no error")")
    }
    return us
}

// MARK: - The run

/// Where the benchmark keeps its compiled plugin (reused across runs) and each run's
/// files: `$TMPDIR/plugboard-bench-<uid>`, mode 0700, owned by this user.
func benchWorkFolder() throws(BenchFailure) -> String {
    let tmp = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "/tmp"
    let folder = "\(tmp)/plugboard-bench-\(geteuid())"
    try makeFolder(folder)
    var st = stat()
    guard lstat(folder, &st) == 0, st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else {
        throw BenchFailure("\(folder) must be a folder owned by this user with mode 0700")
    }
    return folder
}

final class LoadRun {
    let options: LoadOptions
    let plugins: BenchPlugins
    let runFolder: String
    let buildFolder: String
    let progress: @Sendable (String) -> Void
    private var serial = 0

    init(_ options: LoadOptions, progress: @escaping @Sendable (String) -> Void) throws(BenchFailure) {
        self.options = options
        self.progress = progress
        guard let build = executableFolder() else { throw BenchFailure("cannot find the executable's folder") }
        buildFolder = build
        guard let swiftc = options.swiftc ?? findInPath("swiftc") else {
            throw BenchFailure("swiftc is not in PATH; pass --swiftc PATH (the toolchain that built the host)")
        }
        let work = try benchWorkFolder()
        plugins = try BenchPlugins(workFolder: work, buildFolder: build, swiftc: swiftc, progress: progress)
        runFolder = "\(work)/run-\(getpid())"
        removeTree(runFolder)
        try makeFolder(runFolder)
    }

    func cleanUp() {
        if options.keepFiles {
            progress("kept the run's files in \(runFolder)")
        } else {
            removeTree(runFolder)
        }
    }

    /// A fresh folder name under the run folder (not created).
    func freshPath(_ what: String) -> String {
        serial += 1
        return "\(runFolder)/\(what)-\(serial)"
    }

    /// `n` fresh plugins in a fresh folder.
    func freshPlugins(_ n: Int) throws(BenchFailure) -> [String] {
        try plugins.makeSet(n, in: freshPath("plugins"))
    }

    /// A cache folder that already holds `<sha256>.so` for each path, as a previous start
    /// of the host would have left it (mode 0500 copies, as PluginCache writes them).
    func primedCache(for paths: [String]) throws(BenchFailure) -> String {
        let cache = freshPath("cache")
        try makeFolder(cache)
        for path in paths {
            let sha: String
            do {
                sha = try PluginInspection.plugin(at: path, name: "prime", pin: nil).sha256
            } catch {
                throw BenchFailure("inspecting \(path): \(error.message)")
            }
            try writeFile("\(cache)/\(sha).so", try readFile(path), mode: 0o500)
        }
        return cache
    }

    func makeLoader(cache: String) throws(BenchFailure) -> PluginLoader {
        do {
            return try PluginLoader(container: Container(), configuration: .init(cacheDirectory: cache))
        } catch {
            throw BenchFailure("loader: \(error.message)")
        }
    }

    /// One round of each kind, `n` plugins each, nothing recorded: the first load's lazy
    /// set-up (libcrypto, the host's toolchain line, the code) is not measured.
    /// Also checks, once, that both loops register what they should (not in the measured
    /// rounds: listing registrations names their types, which is slow after a dlopen).
    func warmUp(_ n: Int) async throws(BenchFailure) {
        let floorContainer = Container()
        _ = try await floorRound(try freshPlugins(n), container: floorContainer)
        let paths = try freshPlugins(n)
        let loader = try makeLoader(cache: freshPath("cache"))
        _ = try await loaderRound(paths, loader: loader)
        for (what, c) in [("floor", floorContainer), ("loader", loader.container)] {
            let probes = c.registrations().filter { $0.service.hasSuffix(".LoadBenchProbe") }.count
            guard probes == n else { throw BenchFailure("\(what): \(probes) LoadBenchProbe registrations, expected \(n)") }
        }
        let warmPaths = try freshPlugins(n)
        _ = try await loaderRound(warmPaths, loader: try makeLoader(cache: try primedCache(for: warmPaths)))
    }

    /// `rounds` rounds of `n` plugins through the floor and through the loader, each on
    /// fresh files, a fresh container and (loader) a fresh cache folder: empty (`warm`
    /// false), or holding every plugin's entry already. The two kinds alternate which goes
    /// first, since every round leaves its images mapped and later loads cost a little more.
    func loadCase(_ name: String, n: Int, warm: Bool) async throws(BenchFailure) -> LoadResult {
        let rounds = max(options.rounds, 30 / n)
        progress("measuring \(name) (\(rounds) rounds of \(n) plugin\(n == 1 ? "" : "s"))")
        var floor: [Double] = [], loader: [Double] = []
        let before = CPUSnapshot.now()
        for r in 0..<rounds {
            // Set-up, outside the measured loops.
            let floorPaths = try freshPlugins(n)
            let loaderPaths = try freshPlugins(n)
            let cache = warm ? try primedCache(for: loaderPaths) : freshPath("cache")
            let pluginLoader = try makeLoader(cache: cache)
            let floorContainer = Container()

            if r % 2 == 0 {
                floor.append(try await floorRound(floorPaths, container: floorContainer) / Double(n))
                loader.append(try await loaderRound(loaderPaths, loader: pluginLoader) / Double(n))
            } else {
                loader.append(try await loaderRound(loaderPaths, loader: pluginLoader) / Double(n))
                floor.append(try await floorRound(floorPaths, container: floorContainer) / Double(n))
            }
        }
        let other = CPUSnapshot.now().otherLoad(since: before)
        var result = LoadResult(name: name, plugins: n, rounds: rounds, usPerPlugin: loader.min()!,
                                floorUsPerPlugin: floor.min()!, medianUsPerPlugin: median(loader),
                                floorMedianUsPerPlugin: median(floor), otherLoad: other)
        if warm {
            result.note = "every cache entry present: the loader reads and hashes it again instead of writing it"
        } else {
            result.gate = Gate(text: "<= \(fmt(loadGateRatio, 1))x floor", pass: result.ratio <= loadGateRatio)
        }
        return result
    }

    /// The start-up of `plugboard services` as a whole process (spawn to exit), median of
    /// `startupRuns` runs each: with a manifest of 100 plugins and a cold cache (a fresh
    /// cache folder per run), the same with a warm cache, and with an empty manifest;
    /// interleaved.
    func startupCases(wanted: Set<String>, floorUsPerPlugin: Double) throws(BenchFailure) -> [LoadResult] {
        let plugboard = "\(buildFolder)/plugboard"
        guard access(plugboard, X_OK) == 0 else {
            throw BenchFailure("\(plugboard) is missing; build it with: swift build -c release --product plugboard "
                               + "(or leave the start-up cases out with --only)")
        }
        let n = 100
        let paths = try freshPlugins(n)
        let folder = freshPath("startup")
        try makeFolder(folder)
        let full = "\(folder)/plugins-\(n).json", empty = "\(folder)/plugins-0.json"
        let entries = paths.enumerated().map { i, p in "    {\"name\": \"p\(threeDigits(i))\", \"path\": \(jsonString(p))}" }
        try writeFile(full, "{\n  \"schemaVersion\": 1,\n  \"plugins\": [\n\(entries.joined(separator: ",\n"))\n  ]\n}\n")
        try writeFile(empty, "{\"schemaVersion\": 1, \"plugins\": []}\n")
        let warmCache = freshPath("cache")
        let out = "\(folder)/stdout", err = "\(folder)/stderr"

        /// One run of `plugboard services`, in ms; checks it succeeded and, if asked, that
        /// it listed `expect` services.
        func run(_ manifest: String, cache: String, expect: Int? = nil) throws(BenchFailure) -> Double {
            let t0 = nowNs()
            let status = try runProcess([plugboard, "--manifest", manifest, "--cache-dir", cache, "services"],
                                        stdout: expect == nil ? nil : out, stderr: err)
            let ms = Double(nowNs() - t0) / 1e6
            guard status == 0 else {
                let text = (try? readFile(err)).map { String(decoding: $0, as: UTF8.self) } ?? ""
                throw BenchFailure("plugboard services exited with status \(status):\n\(text)")
            }
            if let expect {
                let listed = String(decoding: try readFile(out), as: UTF8.self)
                    .split(separator: "\n").filter { $0.contains("LoadBenchProbe") }.count
                guard listed == expect else {
                    throw BenchFailure("plugboard services listed \(listed) LoadBenchProbe services, expected \(expect)")
                }
            }
            return ms
        }

        progress("measuring start-up of plugboard services (\(options.startupRuns) runs of each)")
        // Unmeasured: the page cache, and the warm cache's entries.
        _ = try run(empty, cache: freshPath("cache"), expect: 0)
        _ = try run(full, cache: warmCache, expect: n)
        var cold: [Double] = [], warm: [Double] = [], none: [Double] = []
        let before = CPUSnapshot.now(includingChildren: true)
        var kinds = ["empty"]
        if wanted.contains("startup-services-100") { kinds.append("cold") }
        if wanted.contains("startup-services-100-warm") { kinds.append("warm") }
        for k in 0..<options.startupRuns {
            for i in 0..<kinds.count {
                switch kinds[(i + k) % kinds.count] {
                case "empty": none.append(try run(empty, cache: freshPath("cache")))
                case "cold": cold.append(try run(full, cache: freshPath("cache")))
                default: warm.append(try run(full, cache: warmCache))
                }
            }
        }
        let other = CPUSnapshot.now(includingChildren: true).otherLoad(since: before)
        let emptyMs = median(none)
        var results: [LoadResult] = []
        for (name, times) in [("startup-services-100", cold), ("startup-services-100-warm", warm)] where !times.isEmpty {
            let ms = median(times)
            var r = LoadResult(name: name, plugins: n, rounds: times.count, usPerPlugin: (ms - emptyMs) * 1000 / Double(n),
                               floorUsPerPlugin: floorUsPerPlugin, otherLoad: other)
            r.startupMs = ms
            r.emptyStartupMs = emptyMs
            r.note = "median process wall time \(fmt(ms, 1)) ms vs \(fmt(emptyMs, 1)) ms with no plugins; "
                + (name.hasSuffix("warm") ? "warm cache" : "cold cache") + "; floor: load-100's in-process floor"
            results.append(r)
        }
        return results
    }
}

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Runs the cases `options` selects; `load-100`'s floor is measured whenever a start-up
/// case is, since their floor is its floor.
func runLoadBench(_ options: LoadOptions, progress: @escaping @Sendable (String) -> Void) async throws(BenchFailure) -> [LoadResult] {
    var wanted = Set(options.only ?? loadCases)
    if wanted.contains(where: { $0.hasPrefix("startup") }) { wanted.insert("load-100") }
    let run = try LoadRun(options, progress: progress)
    defer { run.cleanUp() }
    try await run.warmUp(3)
    var results: [LoadResult] = []
    for (name, n, warm) in [("load-1", 1, false), ("load-10", 10, false), ("load-100", 100, false), ("load-100-warm", 100, true)]
    where wanted.contains(name) {
        results.append(try await run.loadCase(name, n: n, warm: warm))
    }
    if wanted.contains(where: { $0.hasPrefix("startup") }) {
        let floor = results.first { $0.name == "load-100" }!.floorUsPerPlugin
        results += try run.startupCases(wanted: wanted, floorUsPerPlugin: floor)
    }
    return results
}

// MARK: - Report

func loadTextLine(_ r: LoadResult) -> String {
    var line = pad(r.name, 26) + pad(fmt(r.usPerPlugin, 1), 9, right: true) + " µs/plugin  floor "
        + pad(fmt(r.floorUsPerPlugin, 1), 7, right: true) + " µs  " + pad(fmt(r.ratio, 2), 7, right: true) + "x floor"
    if let g = r.gate { line += "  (gate \(g.text): \(g.pass ? "pass" : "FAIL"))" }
    if let m = r.medianUsPerPlugin, let f = r.floorMedianUsPerPlugin {
        line += "  [medians \(fmt(m, 1)) / \(fmt(f, 1)); \(r.rounds) rounds]"
    }
    if let ms = r.startupMs, let e = r.emptyStartupMs {
        line += "  [process \(fmt(ms, 1)) ms, empty manifest \(fmt(e, 1)) ms; median of \(r.rounds)]"
    }
    if r.otherLoad >= PlugboardBench.noisyLoad {
        line += "  [noisy: other processes used \(fmt(r.otherLoad, 2)) cores]"
    }
    return line
}

func loadJSONLine(_ r: LoadResult) -> String {
    var fields: [(String, String)] = [
        ("case", jsonString(r.name)),
        ("us_per_plugin", fmt(r.usPerPlugin, 3)),
        ("floor_us_per_plugin", fmt(r.floorUsPerPlugin, 3)),
        ("ratio_to_floor", fmt(r.ratio, 3)),
        ("plugins", String(r.plugins)),
        ("rounds", String(r.rounds)),
    ]
    if let m = r.medianUsPerPlugin { fields.append(("median_us_per_plugin", fmt(m, 3))) }
    if let f = r.floorMedianUsPerPlugin { fields.append(("floor_median_us_per_plugin", fmt(f, 3))) }
    if let ms = r.startupMs { fields.append(("startup_ms", fmt(ms, 3))) }
    if let e = r.emptyStartupMs { fields.append(("empty_startup_ms", fmt(e, 3))) }
    if let g = r.gate {
        fields.append(("gate", jsonString(g.text)))
        fields.append(("pass", g.pass ? "true" : "false"))
    }
    fields.append(("other_cpu_load", fmt(r.otherLoad, 2)))
    if let note = r.note { fields.append(("note", jsonString(note))) }
    return "{" + fields.map { "\(jsonString($0.0)):\($0.1)" }.joined(separator: ",") + "}"
}
