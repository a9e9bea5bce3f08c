#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI
import PlugboardIPC

let usage = """
    usage: plugboard-bench container [--json] [--seconds S] [--samples N] [--only CASES] [--check]
           plugboard-bench load [--json] [--rounds R] [--startup-runs N] [--only CASES] [--swiftc PATH]
                                [--keep] [--check]
           plugboard-bench s3 [--json] [--count N] [--size BYTES] [--rounds R] [--moto PATH] [--check]
           plugboard-bench ipc [--json] [--trips N] [--paced-trips N] [--seconds S] [--only CASES] [--echo PATH]
                               [--child-cpu N]
           plugboard-bench isolated [--json] [--calls N] [--paced-calls N] [--only CASES] [--products FOLDER]

      container      the container's resolve paths against the floor (a call into another
                     module that returns a stored reference, then the same method call)
      load           loading N distinct small plugins (N = 1, 10, 100) through the full
                     loader against a bare dlopen + entry-call loop, in one run; and the
                     start-up of `plugboard services` with 100 plugins, as a whole process

      s3             libS3Storage.so against boto3 on one moto_server started for the run:
                     N sequential puts, then N gets, of objects of one size (default 200 of
                     64 KiB), best of R rounds (default 3); the gate is S3Storage >= 1.0x boto3.
                     moto_server: --moto, PLUGBOARD_MOTO_SERVER or .venv/bin/moto_server;
                     build first: swift build -c release --product S3Storage
      ipc            a call-sized round trip (64 bytes out, 256 back) to ipc-echo in a child
                     process over the socket and the ring transport: p50/p99/p99.9 with one
                     caller back to back and paced (one call a millisecond, so both sides
                     sleep), throughput with 16 calls in flight from 4 threads; CPU time per
                     call in both processes. Build first: swift build -c release --product ipc-echo
      isolated       `head` and a 1 KiB `get` against MemoryStorage through a PluginHost, in
                     process and isolated ("isolation": "process") over the ring and the
                     socket transport: p50/p99/p99.9 back to back and paced (one call a
                     millisecond), the latency added to the in-process figure, CPU per call in
                     the host and the worker. Build first: swift build -c release

    Common options:
      --json         one JSON object per case and line, instead of a table
      --only CASES   only these cases, comma-separated (see below)
      --check        exit 1 if any acceptance gate fails
      -h, --help     this help

    container:
      --seconds S    time spent on each case, in seconds (default 0.5)
      --samples N    samples per case; the best counts (default 5; two-thread cases: at most 3)
      --only CASES   plus the floor and what their gates need (for profiling): floor,
                     singleton, handle, transient, alloc, named, miss, lease, floor-threads-one,
                     floor-threads-shared, floor-threads-distinct, threads-one,
                     threads-shared, threads-distinct

    load:
      --rounds R        rounds per case, each on N fresh plugins; the best counts
                        (default 3; load-1 takes at least 30)
      --startup-runs N  runs per start-up figure; the median counts (default 5)
      --only CASES      load-1, load-10, load-100, load-100-warm, startup-services-100,
                        startup-services-100-warm (a start-up case adds load-100)
      --swiftc PATH     the compiler for the benchmark's plugin (default: swiftc in PATH;
                        it must be the toolchain that built the host)
      --keep            keep the run's plugin copies, caches and manifests (under
                        $TMPDIR/plugboard-bench-<uid>/run-<pid>)

    ipc:
      --trips N        timed round trips per back-to-back case (default 20000)
      --paced-trips N  timed round trips per paced case (default 2000)
      --seconds S      time of each 16x4 case (default 2)
      --only CASES     \(ipcCases.map(\.name).joined(separator: ", "))
      --echo PATH      the echo child (default: ipc-echo beside this executable)
      --child-cpu N    run the child on CPU N (taskset); with `taskset -c M plugboard-bench`
                       the two sides run on distinct vCPUs whatever the scheduler prefers

    isolated:
      --calls N         timed calls per back-to-back case (default 20000)
      --paced-calls N   timed calls per paced case (default 2000)
      --only CASES      \(isolatedCases.map(\.name).joined(separator: ", "))
      --products DIR    where libMemoryStorage.so and plugboard are (default: this executable's folder)

    Build and run in release mode:
      swift build -c release --product plugboard-bench
      .build/release/plugboard-bench container
      swift build -c release --product plugboard    # for load's start-up cases
      .build/release/plugboard-bench load

    """

func fail(_ message: String) -> Never {
    var err = StandardError()
    print("plugboard-bench: \(message)\n", to: &err)
    print(usage, terminator: "", to: &err)
    exit(2)
}

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) {
        var s = string
        s.withUTF8 { buf in _ = Glibc.write(2, buf.baseAddress, buf.count) }
    }
}

@main
enum PlugboardBench {
    static func main() async {
        var args = Array(CommandLine.arguments.dropFirst())
        if args.contains("-h") || args.contains("--help") {
            print(usage, terminator: "")
            exit(0)
        }
        guard let command = args.first else { fail("missing subcommand") }
        args.removeFirst()
        switch command {
        case "container": container(args)
        case "load": await load(args)
        case "s3": await s3(args)
        case "ipc": ipc(args)
        case "isolated": await isolated(args)
        default: fail("unknown subcommand '\(command)'")
        }
    }

    static func load(_ args: [String]) async {
        var options = LoadOptions()
        var json = false, check = false
        var args = BenchArguments(args)
        while let option = args.next() {
            switch option {
            case "--json": json = true
            case "--check": check = true
            case "--keep": options.keepFiles = true
            case "--rounds": options.rounds = args.integer(option, in: 1...20, what: "a whole number in [1, 20]")
            case "--startup-runs": options.startupRuns = args.integer(option, in: 1...100, what: "a whole number in [1, 100]")
            case "--only": options.only = args.cases(option, known: loadCases)
            case "--swiftc": options.swiftc = args.value(option)
            default: fail("unknown option '\(option)'")
            }
        }

        let results: [LoadResult]
        let quiet = json
        do {
            results = try await runLoadBench(options) { message in
                if !quiet {
                    var err = StandardError()
                    print("  \(message)...", to: &err)
                }
            }
        } catch {
            var err = StandardError()
            print("plugboard-bench: \(error)", to: &err)
            exit(1)
        }
        if json {
            for r in results { print(loadJSONLine(r)) }
        } else {
            print("plugboard-bench load: µs per plugin, best round; floor = dlopen + dlsym + handshake call + register call + commit")
            print("loadavg: \(loadAverage())")
            for r in results { print(loadTextLine(r)) }
        }
        report(gatesFailed: results.filter { $0.gate?.pass == false }.map(\.name),
               noisy: results.filter { $0.otherLoad >= noisyLoad }.map(\.name), json: json, check: check)
    }

    static func ipc(_ args: [String]) {
        var options = IPCOptions()
        var json = false
        var args = BenchArguments(args)
        while let option = args.next() {
            switch option {
            case "--json": json = true
            case "--trips": options.trips = args.integer(option, in: 100...10_000_000, what: "a whole number in [100, 10000000]")
            case "--paced-trips": options.pacedTrips = args.integer(option, in: 100...1_000_000, what: "a whole number in [100, 1000000]")
            case "--seconds":
                guard let s = Double(args.value(option)), s > 0, s <= 60 else { fail("--seconds needs a number of seconds in (0, 60]") }
                options.seconds = s
            case "--only": options.only = args.cases(option, known: ipcCases.map(\.name))
            case "--echo": options.echo = args.value(option)
            case "--child-cpu": options.childCPU = args.integer(option, in: 0...4095, what: "a CPU number")
            default: fail("unknown option '\(option)'")
            }
        }
        var err = StandardError()
        let results: [IPCResult]
        do {
            results = try runIPCBench(options) { message in if !json { print("  \(message)...", to: &err) } }
        } catch {
            print("plugboard-bench: \(error)", to: &err)
            exit(1)
        }
        if json {
            for r in results { print(ipcJSONLine(r)) }
        } else {
            print("plugboard-bench ipc: \(callBytes)-byte call, \(answerBytes)-byte answer; ring spin \(RingTransport.Configuration().spinNanoseconds / 1000) µs "
                  + "unless -spin0; nproc \(sysconf(Int32(_SC_NPROCESSORS_ONLN)))" + (options.childCPU.map { "; child on CPU \($0)" } ?? ""))
            print("loadavg: \(loadAverage())")
            for r in results { print(ipcTextLine(r)) }
        }
        report(gatesFailed: [], noisy: results.filter { $0.otherLoad >= noisyLoad }.map(\.name), json: json, check: false)
    }

    static func isolated(_ args: [String]) async {
        var options = IsolatedOptions()
        var json = false
        var args = BenchArguments(args)
        while let option = args.next() {
            switch option {
            case "--json": json = true
            case "--calls": options.calls = args.integer(option, in: 100...10_000_000, what: "a whole number in [100, 10000000]")
            case "--paced-calls": options.pacedCalls = args.integer(option, in: 100...1_000_000, what: "a whole number in [100, 1000000]")
            case "--only": options.only = args.cases(option, known: isolatedCases.map(\.name))
            case "--products": options.products = args.value(option)
            default: fail("unknown option '\(option)'")
            }
        }
        var err = StandardError()
        let results: [IsolatedResult]
        do {
            results = try await runIsolatedBench(options) { message in if !json { print("  \(message)...", to: &err) } }
        } catch {
            print("plugboard-bench: \(error)", to: &err)
            exit(1)
        }
        if json {
            for r in results { print(isolatedJSONLine(r, in: results)) }
        } else {
            print("plugboard-bench isolated: MemoryStorage, head and \(isolatedObjectBytes)-byte get, one caller; nproc \(sysconf(Int32(_SC_NPROCESSORS_ONLN)))")
            print("loadavg: \(loadAverage())")
            for r in results { print(isolatedTextLine(r, in: results)) }
        }
        report(gatesFailed: [], noisy: results.filter { $0.otherLoad >= noisyLoad }.map(\.c.name), json: json, check: false)
    }

    static func container(_ args: [String]) {
        var options = BenchOptions()
        var json = false, check = false
        var args = BenchArguments(args)
        while let option = args.next() {
            switch option {
            case "--json": json = true
            case "--check": check = true
            case "--seconds":
                guard let s = Double(args.value(option)), s > 0, s <= 60 else {
                    fail("--seconds needs a number of seconds in (0, 60]")
                }
                options.seconds = s
            case "--samples": options.samples = args.integer(option, in: 1...100, what: "a whole number in [1, 100]")
            case "--only": options.only = args.cases(option, known: allCases)
            default: fail("unknown option '\(option)'")
            }
        }

        var err = StandardError()
        let results: [CaseResult]
        do {
            results = try runContainerBench(options) { name in
                if !json { print("  measuring \(name)...", to: &err) }
            }
        } catch {
            print("plugboard-bench: the container failed: \(error)", to: &err)
            exit(1)
        }
        let floor = results.first { $0.name == "floor" }!.nsPerOp
        if json {
            for r in results { print(jsonLine(r, floor: floor)) }
        } else {
            print(header(options))
            for r in results { print(textLine(r, floor: floor)) }
        }
        report(gatesFailed: results.filter { $0.gate?.pass == false }.map(\.name),
               noisy: results.filter { ($0.otherLoad ?? 0) >= noisyLoad }.map(\.name), json: json, check: check)
    }

    /// The verdict line, the noise warning, and the exit status for --check.
    static func report(gatesFailed failed: [String], noisy: [String], json: Bool, check: Bool) {
        if !json {
            print(failed.isEmpty ? "all gates pass" : "gates failed: \(failed.joined(separator: ", "))")
        }
        if !noisy.isEmpty {
            var err = StandardError()
            print("plugboard-bench: warning: other processes used the CPU during \(noisy.joined(separator: ", ")); "
                  + "run again on an idle machine", to: &err)
        }
        if check && !failed.isEmpty { exit(1) }
    }

    /// Other processes' load, in cores, from which a case's figure is flagged as noisy.
    static let noisyLoad = 0.2

    static func loadAverage() -> String {
        var load = "?"
        if let f = fopen("/proc/loadavg", "r") {
            var buf = [CChar](repeating: 0, count: 128)
            if fgets(&buf, Int32(buf.count), f) != nil {
                load = String(decoding: buf.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            fclose(f)
        }
        return load
    }

    static func header(_ o: BenchOptions) -> String {
        """
        plugboard-bench container: 100+ registered keys, \(fmt(o.seconds, 2)) s per case, best of \(o.samples) samples
        loadavg: \(loadAverage())
        """
    }

    static func textLine(_ r: CaseResult, floor: Double) -> String {
        var line = pad(r.name, 23) + pad(fmt(r.nsPerOp, 1), 8, right: true) + " ns/op  "
            + pad(fmt(r.nsPerOp / floor, 2), 6, right: true) + "x floor"
        if let speedup = r.speedup {
            line += "  \(r.threads) threads: \(fmt(speedup, 2))x one thread"
        }
        if let g = r.gate {
            line += "  (gate \(g.text): \(g.pass ? "pass" : "FAIL"))"
        }
        if let rps = r.replacementsPerSecond {
            line += "  [\(fmt(rps, 0)) replacements/s]"
        }
        if let note = r.note, r.gate == nil {
            line += "  (\(note))"
        }
        if let other = r.otherLoad, other >= noisyLoad {
            line += "  [noisy: other processes used \(fmt(other, 2)) cores]"
        }
        return line
    }

    static func jsonLine(_ r: CaseResult, floor: Double) -> String {
        var fields: [(String, String)] = [
            ("case", jsonString(r.name)),
            ("ns_per_op", fmt(r.nsPerOp, 3)),
            ("floor_ns_per_op", fmt(floor, 3)),
            ("ratio_to_floor", fmt(r.nsPerOp / floor, 3)),
            ("threads", String(r.threads)),
        ]
        if let one = r.oneThreadNsPerOp { fields.append(("one_thread_ns_per_op", fmt(one, 3))) }
        if let speedup = r.speedup { fields.append(("speedup_vs_one_thread", fmt(speedup, 3))) }
        if let rps = r.replacementsPerSecond { fields.append(("replacements_per_second", fmt(rps, 0))) }
        if let g = r.gate {
            fields.append(("gate", jsonString(g.text)))
            fields.append(("pass", g.pass ? "true" : "false"))
        }
        if let other = r.otherLoad { fields.append(("other_cpu_load", fmt(other, 2))) }
        if let note = r.note { fields.append(("note", jsonString(note))) }
        return "{" + fields.map { "\(jsonString($0.0)):\($0.1)" }.joined(separator: ",") + "}"
    }
}
