#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import PlugboardAPI
import PlugboardHost

/// `plugboard-bench s3`: libS3Storage.so (loaded through the host's loader) against boto3,
/// both talking to one moto_server started for the run: N sequential puts, then N
/// sequential gets, of objects of one size; the best of R rounds of each, interleaved.
struct S3BenchOptions {
    var count = 200
    var size = 64 * 1024
    var rounds = 3
    var moto: String?
}

struct S3Timing {
    var putSeconds: Double
    var getSeconds: Double
}

struct S3BenchResult {
    var plugboard: S3Timing
    var boto3: S3Timing
    var count: Int
    var size: Int
    var rounds: Int
    /// How many times faster S3Storage is than boto3 (above 1: faster).
    var putRatio: Double { boto3.putSeconds / plugboard.putSeconds }
    var getRatio: Double { boto3.getSeconds / plugboard.getSeconds }
}

/// The access key moto is given; moto accepts any, boto3 and the plugin use the same.
private let benchAccessKey = "AKIAPLUGBOARDBENCH00"
private let benchSecretKey = "plugboard-bench-secret"

func runS3Bench(_ options: S3BenchOptions, progress: (String) -> Void) async throws -> S3BenchResult {
    guard let build = executableFolder() else { throw BenchFailure("cannot find the executable's folder") }
    guard let root = packageRoot(from: build) else { throw BenchFailure("no Package.swift above \(build)") }
    let moto = try locateMoto(options.moto, root: root)
    let python = String(moto[..<(moto.lastIndex(of: "/") ?? moto.endIndex)]) + "/python"
    let script = "\(root)/Tests/S3StorageTests/Python/boto3_peer.py"
    let plugin = "\(build)/libS3Storage.so"
    guard fileExists(python), fileExists(script) else { throw BenchFailure("need \(python) (with boto3) and \(script)") }
    guard fileExists(plugin) else {
        throw BenchFailure("\(plugin) is missing; build it: swift build -c release --product S3Storage")
    }
    let folder = "/tmp/plugboard-bench-s3-\(getpid())"
    try makeFolder(folder)
    defer { removeTree(folder) }

    let port = try freeLoopbackPort()
    let endpoint = "http://127.0.0.1:\(port)"
    progress("starting moto_server on \(endpoint)")
    let server = try spawnProcess([moto, "-H", "127.0.0.1", "-p", String(port)], stdout: "\(folder)/moto.log", stderr: "\(folder)/moto.log")
    defer {
        kill(server, SIGKILL)  // moto_server ignores SIGTERM
        var status: Int32 = 0
        waitpid(server, &status, 0)
    }
    var listening = false
    for _ in 0..<300 where !listening {
        listening = canConnect(port: port)
        if !listening { usleep(50_000) }
    }
    guard listening else { throw BenchFailure("moto_server did not listen on \(endpoint) within 15 s; see \(folder)/moto.log") }

    setenv("AWS_ACCESS_KEY_ID", benchAccessKey, 1)
    setenv("AWS_SECRET_ACCESS_KEY", benchSecretKey, 1)
    setenv("AWS_REGION", "us-east-1", 1)
    unsetenv("AWS_SESSION_TOKEN")
    let bucket = "plugboard-bench"
    _ = try boto3(python, script, ["create-bucket", endpoint, bucket], folder: folder)

    progress("loading \(plugin)")
    let container = Container(environment: .staging)
    let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: "\(folder)/cache"))
    let record = await loader.load(.init(name: "S3Storage", path: plugin, config: PluginConfig([
        "bucket": .string(bucket), "endpoint": .string(endpoint), "region": .string("us-east-1"),
        "accessKeyId": .string(benchAccessKey), "secretAccessKey": .string(benchSecretKey),
    ], plugin: "S3Storage")))
    guard record.state == .active else { throw BenchFailure("S3Storage did not load: \(record.error.map { "\($0)" } ?? "?")") }
    let storage: any ObjectStorage = try container.resolve()

    var generator = SystemRandomNumberGenerator()
    let data = (0..<options.size).map { _ in UInt8.random(in: 0...255, using: &generator) }
    let keys = (0..<options.count).map { "bench/plugboard/" + threeDigits($0 / 10) + String($0 % 10) }
    progress("warming up")
    for key in keys.prefix(10) {
        try await storage.put(key, data: data)
        _ = try await storage.get(key)
    }

    var best = S3BenchResult(plugboard: S3Timing(putSeconds: .infinity, getSeconds: .infinity),
                             boto3: S3Timing(putSeconds: .infinity, getSeconds: .infinity),
                             count: options.count, size: options.size, rounds: options.rounds)
    for round in 1...options.rounds {
        progress("round \(round) of \(options.rounds): S3Storage")
        var start = nowNs()
        for key in keys { try await storage.put(key, data: data) }
        let putSeconds = Double(nowNs() - start) / 1e9
        start = nowNs()
        for key in keys {
            let object = try await storage.get(key)
            guard object.data.count == options.size else { throw BenchFailure("short read of \(key): \(object.data.count) bytes") }
        }
        let getSeconds = Double(nowNs() - start) / 1e9
        for key in keys { try await storage.delete(key) }
        best.plugboard.putSeconds = min(best.plugboard.putSeconds, putSeconds)
        best.plugboard.getSeconds = min(best.plugboard.getSeconds, getSeconds)

        progress("round \(round) of \(options.rounds): boto3")
        let output = try boto3(python, script, ["bench", endpoint, bucket, String(options.count), String(options.size)], folder: folder)
        guard let boto3Put = jsonNumber(output, "putSeconds"), let boto3Get = jsonNumber(output, "getSeconds") else {
            throw BenchFailure("boto3_peer.py bench printed no timings: \(output)")
        }
        best.boto3.putSeconds = min(best.boto3.putSeconds, boto3Put)
        best.boto3.getSeconds = min(best.boto3.getSeconds, boto3Get)
    }
    return best
}

/// Runs the boto3 peer script; returns its standard output.
private func boto3(_ python: String, _ script: String, _ arguments: [String], folder: String) throws(BenchFailure) -> String {
    let status = try runProcess([python, script] + arguments, stdout: "\(folder)/boto3.out", stderr: "\(folder)/boto3.err")
    let output = String(decoding: try readFile("\(folder)/boto3.out"), as: UTF8.self)
    guard status == 0 else {
        let errors = String(decoding: (try? readFile("\(folder)/boto3.err")) ?? [], as: UTF8.self)
        throw BenchFailure("boto3_peer.py \(arguments.first ?? "") exited with \(status): \(errors.suffix(1500))")
    }
    return output
}

/// moto_server: --moto, then PLUGBOARD_MOTO_SERVER, then `.venv/bin/moto_server` in the package.
private func locateMoto(_ given: String?, root: String) throws(BenchFailure) -> String {
    let candidates = [given, getenv("PLUGBOARD_MOTO_SERVER").map { String(cString: $0) }, "\(root)/.venv/bin/moto_server"]
    for case let candidate? in candidates where access(candidate, X_OK) == 0 { return candidate }
    throw BenchFailure("moto_server not found; install it from the package root with: python3 -m venv .venv && .venv/bin/pip install -r Tests/requirements.txt")
}

/// The first folder at or above `folder` that holds Package.swift.
private func packageRoot(from folder: String) -> String? {
    var current = folder
    while !current.isEmpty {
        if fileExists("\(current)/Package.swift") && fileExists("\(current)/Sources/PlugboardAPI/Package.swift") { return current }
        guard let slash = current.lastIndex(of: "/") else { return nil }
        current = String(current[..<slash])
    }
    return nil
}

/// The number after `"name":` in a one-line JSON object.
private func jsonNumber(_ text: String, _ name: String) -> Double? {
    let marker = Array("\"\(name)\":".utf8)
    let bytes = Array(text.utf8)
    guard let start = bytes.indices.first(where: { bytes[$0...].starts(with: marker) }) else { return nil }
    let rest = String(decoding: bytes[(start + marker.count)...], as: UTF8.self).drop { $0 == " " }
    return Double(rest.prefix { "0123456789.eE+-".contains($0) })
}

private func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
}

private func freeLoopbackPort() throws(BenchFailure) -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchFailure("socket() failed") }
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
            bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
        }
    }
    guard bound else { throw BenchFailure("cannot bind a loopback port") }
    return Int(UInt16(bigEndian: address.sin_port))
}

private func canConnect(port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopbackAddress(port: port)
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

extension PlugboardBench {
    static func s3(_ args: [String]) async {
        var options = S3BenchOptions()
        var json = false, check = false
        var args = BenchArguments(args)
        while let option = args.next() {
            switch option {
            case "--json": json = true
            case "--check": check = true
            case "--count": options.count = args.integer(option, in: 1...10_000, what: "a whole number in [1, 10000]")
            case "--size": options.size = args.integer(option, in: 0...(64 << 20), what: "a byte count in [0, 64 MiB]")
            case "--rounds": options.rounds = args.integer(option, in: 1...20, what: "a whole number in [1, 20]")
            case "--moto": options.moto = args.value(option)
            default: fail("unknown option '\(option)'")
            }
        }
        var err = StandardError()
        let result: S3BenchResult
        do {
            result = try await runS3Bench(options) { message in
                if !json { print("  \(message)...", to: &err) }
            }
        } catch {
            print("plugboard-bench: \(error)", to: &err)
            fflush(nil)
            _exit(1)
        }
        let gatesFailed = (result.putRatio >= 1 ? [] : ["s3-put"]) + (result.getRatio >= 1 ? [] : ["s3-get"])
        if json {
            for (name, p, b, ratio) in [("s3-put", result.plugboard.putSeconds, result.boto3.putSeconds, result.putRatio),
                                        ("s3-get", result.plugboard.getSeconds, result.boto3.getSeconds, result.getRatio)] {
                print("{\"case\":\"\(name)\",\"count\":\(result.count),\"size\":\(result.size),\"rounds\":\(result.rounds),"
                      + "\"s3storageSeconds\":\(fmt(p, 4)),\"boto3Seconds\":\(fmt(b, 4)),\"ratio\":\(fmt(ratio, 3)),"
                      + "\"gate\":\"ratio >= 1.0\",\"pass\":\(ratio >= 1)}")
            }
        } else {
            let n = Double(result.count)
            print("plugboard-bench s3: \(result.count) puts, then \(result.count) gets, of \(result.size / 1024) KiB objects against one moto_server, sequential, best of \(result.rounds) rounds")
            print("loadavg: \(loadAverage())")
            print(pad("client", 12) + pad("puts/s", 9, right: true) + pad("gets/s", 9, right: true)
                  + pad("put ms", 9, right: true) + pad("get ms", 9, right: true))
            for (name, t) in [("S3Storage", result.plugboard), ("boto3", result.boto3)] {
                print(pad(name, 12) + pad(fmt(n / t.putSeconds, 0), 9, right: true) + pad(fmt(n / t.getSeconds, 0), 9, right: true)
                      + pad(fmt(t.putSeconds * 1000 / n, 2), 9, right: true) + pad(fmt(t.getSeconds * 1000 / n, 2), 9, right: true))
            }
            print("S3Storage / boto3: puts \(fmt(result.putRatio, 2))x, gets \(fmt(result.getRatio, 2))x (gate >= 1.0x: \(gatesFailed.isEmpty ? "pass" : "FAIL"))")
        }
        if !json { print(gatesFailed.isEmpty ? "all gates pass" : "gates failed: \(gatesFailed.joined(separator: ", "))") }
        // The plugin pulled Foundation in with dlopen: exiting from this async context
        // would hang in Foundation's exit handlers (see Sources/plugboard/main.swift), so
        // flush and leave directly; moto_server is already stopped.
        fflush(nil)
        _exit(check && !gatesFailed.isEmpty ? 1 : 0)
    }
}
