import PlugboardAPI
import PlugboardConcurrency

/// An `ObjectStorage` that passes every call to `base` after the configured latency, or
/// fails it with `storage.unavailable` as the configuration says.
final class FaultInjectingStorage: ObjectStorage {
    private let base: any ObjectStorage
    private let faults: FaultInjection
    private let random: LockedRandom

    init(base: any ObjectStorage, faults: FaultInjection) {
        self.base = base
        self.faults = faults
        self.random = LockedRandom(seed: faults.seed)
    }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try await before("put")
        return try await base.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try await before("put")
        return try await base.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        try await before("get")
        return try await base.get(key, range: range)
    }

    /// The base's answer at once only without faults: latency and failures are injected
    /// on the way to the async methods, and a read answered here would skip them.
    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        guard !faults.isActive else { return nil }
        return try base.getWithoutWaiting(key, range: range)
    }

    func get(_ key: String) async throws -> StoredObject {
        try await before("get")
        return try await base.get(key)
    }

    func head(_ key: String) async throws -> ObjectInfo {
        try await before("head")
        return try await base.head(key)
    }

    func delete(_ key: String) async throws {
        try await before("delete")
        try await base.delete(key)
    }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await before("list")
        return try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }

    private func before(_ operation: String) async throws {
        if faults.latencyMilliseconds > 0 {
            try await Task.sleep(nanoseconds: UInt64(faults.latencyMilliseconds) * 1_000_000)
        }
        if faults.failOperations.contains(operation) || (faults.failureRate > 0 && random.next() < faults.failureRate) {
            throw PlugboardError(.storageUnavailable, "injected fault: \(operation) failed",
                                 detail: "MemoryStorage is configured to fail \(faults.failOperations.contains(operation) ? "every \(operation)" : "a share \(faults.failureRate) of operations").",
                                 hint: "Retry, or remove the fault injection from the plugin's config.")
        }
    }
}

/// A seedable pseudo-random source shared by concurrent calls (SplitMix64).
final class LockedRandom: Sendable {
    private let state: LockedValueBox<UInt64>

    init(seed: UInt64?) { state = LockedValueBox(seed ?? UInt64.random(in: 0...UInt64.max)) }

    /// A number in 0..<1.
    func next() -> Double {
        state.withLock { state in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return Double(z >> 11) / Double(1 << 53)
        }
    }
}
