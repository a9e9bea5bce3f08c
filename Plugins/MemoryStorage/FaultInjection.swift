import PlugboardAPI

/// What `MemoryStorage` is told to get wrong, from its config.
struct FaultInjection: Sendable {
    static let operations: Set<String> = ["put", "get", "head", "delete", "list"]

    let latencyMilliseconds: Int
    let failureRate: Double
    let failOperations: Set<String>
    let seed: UInt64?

    init(_ config: PluginConfig) throws(PlugboardError) {
        try config.requireOnly(["latencyMilliseconds", "failureRate", "failOperations", "seed"])
        latencyMilliseconds = try config.int("latencyMilliseconds", default: 0)
        guard (0...60_000).contains(latencyMilliseconds) else {
            throw Self.outOfRange(config, "latencyMilliseconds", "an integer from 0 to 60000", "\(latencyMilliseconds)")
        }
        failureRate = try config.double("failureRate", default: 0)
        guard (0...1).contains(failureRate) else {
            throw Self.outOfRange(config, "failureRate", "a number from 0 to 1", "\(failureRate)")
        }
        var ops = Set<String>()
        switch config["failOperations"] {
        case nil, .null?: break
        case .array(let items)?:
            for item in items {
                guard case .string(let op) = item, Self.operations.contains(op) else {
                    throw Self.outOfRange(config, "failOperations", "names among \(Self.operations.sorted().joined(separator: ", "))", item.description)
                }
                ops.insert(op)
            }
        case let other?:
            throw Self.outOfRange(config, "failOperations", "an array of operation names", other.kindName)
        }
        failOperations = ops
        let seedValue = try config.int("seed", default: -1)
        seed = seedValue >= 0 ? UInt64(seedValue) : nil
    }

    var isActive: Bool { latencyMilliseconds > 0 || failureRate > 0 || !failOperations.isEmpty }

    private static func outOfRange(_ config: PluginConfig, _ key: String, _ expected: String, _ found: String) -> PlugboardError {
        PlugboardError(.configInvalid, "plugin \"\(config.plugin)\": invalid value for configuration key \"\(config.path).\(key)\"",
                       detail: "Expected \(expected), found \(found).",
                       hint: "Correct \"\(key)\" in the plugin's config in \(config.manifest ?? "the manifest").")
    }
}
