#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import InMemoryStorage

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
/// - `getDelayMilliseconds`: how long every `get` takes (default 0).
enum MisbehavingPlugin: Plugin {
    static let name = "MisbehavingPlugin"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let config = registrar.config
        try config.requireOnly(["fault", "faultIn", "healthy", "stopLog", "label", "getDelayMilliseconds"])
        let fault = try config.string("fault", default: "none") ?? "none"
        let place = try config.string("faultIn", default: "register") ?? "register"
        let settings = FixtureSettings(fault: fault, place: place, healthy: try config.bool("healthy", default: true),
                                       stopLog: try config.string("stopLog", default: nil),
                                       label: try config.string("label", default: "fixture") ?? "fixture",
                                       getDelayMilliseconds: try config.int("getDelayMilliseconds", default: 0))
        if place == "register" { strike(fault) }
        try registrar.register((any ObjectStorage).self, managed: true) { _ in FixtureStorage(settings) }
    }

    static func strike(_ fault: String) {
        switch fault {
        case "fatalError": fatalError("MisbehavingPlugin: fatalError as configured")
        case "segfault":
            let p = UnsafeMutablePointer<Int>(bitPattern: 8)
            p?.pointee = 1
        case "hang": while true { sleep(1) }
        case "exit": _exit(0)
        default: break
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
}

final class FixtureStorage: ObjectStorage, ManagedService, HealthChecking {
    private let base = InMemoryObjectStorage()
    private let settings: FixtureSettings

    init(_ settings: FixtureSettings) { self.settings = settings }

    func start() async throws {
        if settings.place == "start" { MisbehavingPlugin.strike(settings.fault) }
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
        if settings.place == "get" { MisbehavingPlugin.strike(settings.fault) }
        if settings.getDelayMilliseconds > 0 { try await Task.sleep(nanoseconds: UInt64(settings.getDelayMilliseconds) * 1_000_000) }
        return try await base.get(key)
    }

    func head(_ key: String) async throws -> ObjectInfo { try await base.head(key) }
    func delete(_ key: String) async throws { try await base.delete(key) }
    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
