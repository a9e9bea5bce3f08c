import PlugboardAPI
import InMemoryStorage

// The plugin header (docs/PLUGIN_HEADER.md): magic, layout, ABI, API major, API minor.
@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, MemoryStoragePlugin.self)
}

/// `MemoryStorage`: an in-memory `ObjectStorage`, the mock backend for tests and drills.
///
/// Config (all optional):
/// - `latencyMilliseconds`: added to every operation (integer, 0...60000);
/// - `failureRate`: the share of operations that fail with `storage.unavailable`
///   (number, 0...1);
/// - `failOperations`: operations that always fail (`put`, `get`, `head`, `delete`,
///   `list`);
/// - `seed`: makes the random failures repeatable (integer).
enum MemoryStoragePlugin: Plugin {
    static let name = "MemoryStorage"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let faults = try FaultInjection(registrar.config)
        let logger = registrar.logger
        if faults.isActive {
            logger.notice("fault injection on", metadata: [
                "latencyMilliseconds": "\(faults.latencyMilliseconds)", "failureRate": "\(faults.failureRate)",
                "failOperations": .array(faults.failOperations.sorted().map { .string($0) })])
        }
        try registrar.register((any ObjectStorage).self, implementation: FaultInjectingStorage.self) { _ in
            FaultInjectingStorage(base: InMemoryObjectStorage(), faults: faults)
        }
    }
}
