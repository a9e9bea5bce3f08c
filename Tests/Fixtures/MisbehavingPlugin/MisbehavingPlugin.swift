#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import InMemoryStorage
import Synchronization

// A test fixture, not a product for users: a plugin that misbehaves as its config says,
// so that preflight, hot swap and crash reports can be tested against a real .so.

@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 7)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, MisbehavingPlugin.self)
}

/// Config:
/// - `fault`: `none` (default), `fatalError`, `segfault`, `hang`, `exit`, or `error`
///   (with `faultIn: get`: every get throws an error that quotes the label);
/// - `faultIn`: where the fault strikes: `register` (default), `start`, `get`, `stop`;
/// - `healthy`: false makes `healthCheck()` throw (default true);
/// - `stopLog`: a file the managed storage appends `stopped <label>` to when stopped;
/// - `label`: names this build in `stopLog` and in the `x-fixture-label` metadata of gets;
/// - `getDelayMilliseconds`: how long every `get` takes (default 0);
/// - `faultKey`: with `faultIn: get`, the fault strikes only on a get of this key;
/// - faults at request time besides those above: `allocate` (memory without bound),
///   `execve` (runs /bin/true; the get throws the error it got), `writeOutside` (creates
///   the file `outsidePath`; the get throws the error it got, or answers when it could);
///   with `faultIn: start`, these two fail the start with the error they got;
/// - `exitAfterRequests`: the process exits on this get (counted over every get);
/// - `seed`: objects `seed-0` ... `seed-(N-1)`, each holding `seed N`, present from the
///   start (so that every process of an isolated plugin holds them);
/// - `layer`: true makes it a layer (`registerLayer`) over the storage its manifest entry
///   wraps, faulting as configured and passing every call to the storage below.
enum MisbehavingPlugin: Plugin {
    static let name = "MisbehavingPlugin"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let config = registrar.config
        try config.requireOnly(["fault", "faultIn", "healthy", "stopLog", "label", "getDelayMilliseconds", "faultKey",
                                "outsidePath", "exitAfterRequests", "seed", "layer"])
        let fault = try config.string("fault", default: "none") ?? "none"
        let place = try config.string("faultIn", default: "register") ?? "register"
        let settings = FixtureSettings(fault: fault, place: place, healthy: try config.bool("healthy", default: true),
                                       stopLog: try config.string("stopLog", default: nil),
                                       label: try config.string("label", default: "fixture") ?? "fixture",
                                       getDelayMilliseconds: try config.int("getDelayMilliseconds", default: 0),
                                       faultKey: try config.string("faultKey", default: nil),
                                       outsidePath: try config.string("outsidePath", default: nil),
                                       exitAfterRequests: try config.int("exitAfterRequests", default: 0),
                                       seed: try config.int("seed", default: 0))
        if place == "register" { strike(fault) }
        if try config.bool("layer", default: false) {
            try registrar.registerLayer((any ObjectStorage).self, managed: true) { _, below in FixtureStorage(settings, base: below) }
        } else {
            try registrar.register((any ObjectStorage).self, managed: true) { _ in FixtureStorage(settings, base: InMemoryObjectStorage()) }
        }
    }

    static func strike(_ fault: String) {
        switch fault {
        case "fatalError": fatalError("MisbehavingPlugin: fatalError as configured")
        case "segfault":
            let p = UnsafeMutablePointer<Int>(bitPattern: 8)
            p?.pointee = 1
        case "hang": while true { sleep(1) }
        case "exit": _exit(0)
        case "allocate":
            var hoard: [[UInt8]] = []
            while true { hoard.append([UInt8](repeating: 1, count: 16 << 20)) }
        default: break
        }
    }

    /// The faults that fail a request instead of ending the process: the error says what
    /// the system answered.
    static func attempt(_ fault: String, outsidePath: String?) throws {
        switch fault {
        case "execve":
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
            _ = execv("/bin/true", argv)
            let code = errno
            throw PlugboardError(.storageFailed, "execve was refused: \(String(cString: strerror(code)))", detail: "errno \(code)")
        case "writeOutside":
            let path = outsidePath ?? "/tmp/misbehaving-outside"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else {
                let code = errno
                throw PlugboardError(.storageFailed, "writing outside was refused: \(String(cString: strerror(code))): \(path)", detail: "errno \(code)")
            }
            close(fd)
        default:
            break
        }
    }
}

struct FixtureSettings: Sendable {
    let fault: String
    let place: String
    let healthy: Bool
    let stopLog: String?
    let label: String
    let getDelayMilliseconds: Int
    let faultKey: String?
    let outsidePath: String?
    let exitAfterRequests: Int
    let seed: Int
}

final class FixtureStorage: ObjectStorage, ManagedService, HealthChecking {
    private let base: any ObjectStorage
    private let settings: FixtureSettings
    private let gets = Atomic<Int>(0)

    init(_ settings: FixtureSettings, base: any ObjectStorage) {
        self.settings = settings
        self.base = base
    }

    func start() async throws {
        if settings.place == "start" {
            MisbehavingPlugin.strike(settings.fault)
            try MisbehavingPlugin.attempt(settings.fault, outsidePath: settings.outsidePath)
        }
        for i in 0..<settings.seed {
            _ = try await base.put("seed-\(i)", data: Array("seed \(i)".utf8), contentType: "text/plain", metadata: [:])
        }
    }

    func stop() async {
        if settings.place == "stop" { MisbehavingPlugin.strike(settings.fault) }
        guard let path = settings.stopLog else { return }
        let line = Array("stopped \(settings.label)\n".utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }

    func healthCheck() async throws {
        guard settings.healthy else {
            throw PlugboardError(.storageUnavailable, "MisbehavingPlugin \(settings.label) is configured unhealthy",
                                 hint: "Set \"healthy\": true in its config.")
        }
    }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await base.put(key, data: data, contentType: contentType, metadata: metadata.merging(["x-fixture-label": settings.label]) { a, _ in a })
    }

    func get(_ key: String) async throws -> StoredObject {
        if settings.place == "get" && settings.fault == "error" {
            throw PlugboardError(.storageUnavailable, "fixture \(settings.label) refuses every get",
                                 detail: "Configured with fault \"error\"; label \"\(settings.label)\".")
        }
        let count = gets.add(1, ordering: .relaxed).newValue
        if settings.exitAfterRequests > 0, count >= settings.exitAfterRequests { _exit(0) }
        if settings.place == "get", settings.faultKey == nil || settings.faultKey == key {
            MisbehavingPlugin.strike(settings.fault)
            try MisbehavingPlugin.attempt(settings.fault, outsidePath: settings.outsidePath)
        }
        if settings.getDelayMilliseconds > 0 { try await Task.sleep(nanoseconds: UInt64(settings.getDelayMilliseconds) * 1_000_000) }
        return try await base.get(key)
    }

    func head(_ key: String) async throws -> ObjectInfo { try await base.head(key) }
    func delete(_ key: String) async throws { try await base.delete(key) }
    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
