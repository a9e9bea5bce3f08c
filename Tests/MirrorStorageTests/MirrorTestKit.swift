import InMemoryStorage
import MirrorStorageCore
import PlugboardAPI
import PlugboardConcurrency
import PlugboardTestSupport
import PlugboardTesting

/// Two in-memory backends and a mirror over them, with a checkpoint in a fresh folder.
struct MirrorFixture {
    let old: any ObjectStorage
    let new: any ObjectStorage
    let checkpoint: String
    let log = RecordingLogHandler()

    init(old: any ObjectStorage = InMemoryObjectStorage(), new: any ObjectStorage = InMemoryObjectStorage(),
         checkpoint: String = BuildProducts.temporaryFolder("mirror") + "/Mirror.mirror-checkpoint") {
        self.old = old
        self.new = new
        self.checkpoint = checkpoint
    }

    func mirror(concurrency: Int = 4, pageSize: Int = 1000) -> MirrorStorage {
        MirrorStorage(old: old, new: new, from: "Old",
                      configuration: MirrorConfiguration(to: "New", checkpoint: checkpoint, concurrency: concurrency,
                                                         pageSize: pageSize, retrySeconds: 1, startDelaySeconds: 0),
                      plugin: "Mirror", logger: Logger(label: "test", handler: log))
    }

    static func key(_ i: Int) -> String { "obj/" + String(repeating: "0", count: 4 - String(i).count) + String(i) }
    static func bytes(_ i: Int, _ version: String = "v1") -> [UInt8] { Array("\(version) of object \(i)".utf8) }

    func fill(_ storage: any ObjectStorage, count: Int) async throws {
        for i in 0..<count {
            _ = try await storage.put(Self.key(i), data: Self.bytes(i), contentType: "text/plain", metadata: ["n": "\(i)"])
        }
    }
}

/// Keeps every line, for asserting on what the copier said.
final class RecordingLogHandler: LogHandler {
    private let lines = LockedValueBox<[(Logger.Level, String)]>([])

    func log(level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) {
        lines.withLock { $0.append((level, message)) }
    }

    func contains(_ level: Logger.Level, _ prefix: String) -> Bool {
        lines.withLock { $0.contains { $0.0 == level && $0.1.hasPrefix(prefix) } }
    }
}

/// The old backend of a race: a `get` of ``key`` reads it, says so on ``reached`` and waits until
/// ``release()`` (or until its task is cancelled, which releases it too), so that a test
/// writes while the copier holds the key.
final class GatedStorage: ForwardingStorage {
    let base: InMemoryObjectStorage
    let key: String
    let reached: AsyncStream<Void>
    private let reachedSink: AsyncStream<Void>.Continuation
    private let gate = LockedValueBox<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    init(base: InMemoryObjectStorage, key: String) {
        self.base = base
        self.key = key
        (reached, reachedSink) = AsyncStream.makeStream()
    }

    func release() {
        let waiting = gate.withLock { g in
            g.open = true
            defer { g.waiting = [] }
            return g.waiting
        }
        for c in waiting { c.resume() }
    }

    /// Reads first, then waits: the copier holds the bytes it read while the test writes.
    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream {
        let read = try await base.get(key, range: range)
        if key == self.key {
            reachedSink.yield()
            await withTaskCancellationHandler {
                await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                    let open = gate.withLock { g in
                        if !g.open { g.waiting.append(c) }
                        return g.open
                    }
                    if open { c.resume() }
                }
            } onCancel: {
                release()
            }
            try Task.checkCancellation()
        }
        return read
    }
}
