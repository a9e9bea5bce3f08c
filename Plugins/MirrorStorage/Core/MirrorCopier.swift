import PlugboardAPI
import PlugboardConcurrency

/// The mirror's background copy: lists the old backend a page at a time and copies each
/// object the new backend lacks or has older (same bytes, content type and metadata),
/// `concurrency` at a time, writing a checkpoint after each page.
///
/// A pass that ends with failed copies is followed by another from the start after
/// `retrySeconds` (it skips what is already there); a pass without failures finishes the
/// migration: the checkpoint says so, the fence opens, and a notice asks for the reload
/// that drops the old backend. Stopping cancels the copies in flight (a cancelled put
/// stores nothing) and keeps the checkpoint of the last whole page.
public final class MirrorCopier: Sendable {
    private let old: any ObjectStorage
    private let new: any ObjectStorage
    private let fence: CopyFence
    private let from: String
    private let configuration: MirrorConfiguration
    private let plugin: String
    private let logger: Logger
    private let file: CheckpointFile
    private let counter = ProgressCounter()
    private let task = LockedValueBox<Task<Void, Never>?>(nil)
    /// Cleared when the new backend refuses conditional writes (`storage.unsupported`):
    /// the copier then writes without a condition, and relies on the fence alone.
    private let conditional = LockedValueBox(true)

    init(old: any ObjectStorage, new: any ObjectStorage, fence: CopyFence, from: String,
         configuration: MirrorConfiguration, plugin: String, logger: Logger) {
        self.old = old
        self.new = new
        self.fence = fence
        self.from = from
        self.configuration = configuration
        self.plugin = plugin
        self.logger = logger
        self.file = CheckpointFile(path: configuration.checkpoint, plugin: plugin)
    }

    /// The labels of its metrics.
    var labels: [String: String] { ["plugin": plugin, "from": from, "to": configuration.to] }

    /// The counters of this run, and whether the migration has finished.
    public var progress: MirrorProgress { counter.snapshot }

    /// Waits for the copier to end: finished, or stopped.
    public func waitUntilEnded() async {
        await task.withLock { $0 }?.value
    }

    func start() {
        let checkpoint: MirrorCheckpoint
        do {
            checkpoint = try loadCheckpoint()
        } catch {
            logger.warning("mirror checkpoint not read; copying from the start", metadata: ["error": .string(error.message)])
            checkpoint = MirrorCheckpoint(from: from, to: configuration.to)
        }
        let run = Task { [self] in
            if !checkpoint.finished && configuration.startDelaySeconds > 0 {
                do {
                    try await Task.sleep(for: .seconds(configuration.startDelaySeconds))
                } catch {
                    return
                }
            }
            await self.run(from: checkpoint)
        }
        task.withLock { $0 = run }
    }

    func stop() async {
        let run = task.withLock { $0 }
        run?.cancel()
        await run?.value
    }

    private func loadCheckpoint() throws(PlugboardError) -> MirrorCheckpoint {
        let fresh = MirrorCheckpoint(from: from, to: configuration.to)
        guard let saved = try file.load() else { return fresh }
        guard saved.from == from, saved.to == configuration.to else {
            logger.notice("mirror checkpoint of another migration ignored", metadata: [
                "checkpoint": .string(file.path), "from": .string(saved.from), "to": .string(saved.to)])
            return fresh
        }
        return saved
    }

    private func run(from start: MirrorCheckpoint) async {
        var checkpoint = start
        counter.update { $0.examinedBefore = start.examined }
        if checkpoint.finished {
            finish(checkpoint, already: true)
            return
        }
        if checkpoint.after != nil {
            logger.info("mirror copy resumed", metadata: ["after": .string(checkpoint.after ?? ""),
                                                          "examined": "\(checkpoint.examined)"])
        }
        while !Task.isCancelled {
            counter.update { $0.passes += 1 }
            let failedBefore = counter.snapshot.failed
            do {
                try await pass(&checkpoint)
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled { return }
                logger.warning("mirror pass stopped: could not list the old backend", metadata: [
                    "error": .string("\(error)"), "retrySeconds": "\(configuration.retrySeconds)"])
                counter.update { $0.failed += 1 }
            }
            if Task.isCancelled { return }
            if counter.snapshot.failed == failedBefore {
                checkpoint.finished = true
                save(checkpoint)
                finish(checkpoint, already: false)
                return
            }
            logger.warning("mirror pass ended with failed copies; another pass follows", metadata: [
                "failed": "\(counter.snapshot.failed - failedBefore)", "retrySeconds": "\(configuration.retrySeconds)"])
            checkpoint.token = nil
            checkpoint.after = nil
            save(checkpoint)
            do {
                try await Task.sleep(for: .seconds(configuration.retrySeconds))
            } catch {
                return
            }
        }
    }

    private func finish(_ checkpoint: MirrorCheckpoint, already: Bool) {
        fence.open()
        counter.update { $0.finished = true }
        let p = counter.snapshot
        logger.notice(already ? "mirror already finished (checkpoint)" : "mirror finished: every object is in the new backend", metadata: [
            "from": .string(from), "to": .string(configuration.to), "examined": "\(checkpoint.examined)",
            "copied": "\(p.copied)", "next": "reload with a manifest that drops \"\(from)\" and this mirror"])
    }

    /// One walk over the old backend from the checkpoint.
    private func pass(_ checkpoint: inout MirrorCheckpoint) async throws {
        var token = checkpoint.token
        repeat {
            try Task.checkCancellation()
            let page: ObjectListing
            do {
                page = try await old.list(prefix: "", limit: configuration.pageSize, continuationToken: token)
            } catch let error as PlugboardError where error.code == .storageInvalidArgument && token != nil {
                // A token issued before the restart that the old backend no longer takes:
                // list from the start and skip what the checkpoint says is done.
                logger.info("mirror checkpoint token refused; listing from the start", metadata: ["error": .string(error.message)])
                token = nil
                checkpoint.token = nil
                continue
            }
            let after = checkpoint.after
            let objects = page.objects.filter { object in after.map { ObjectKey.precedes($0, object.key) } ?? true }
            try await copy(objects)
            try Task.checkCancellation()
            checkpoint.token = page.nextContinuationToken
            checkpoint.after = page.objects.last?.key ?? checkpoint.after
            checkpoint.examined += objects.count
            counter.update { $0.examined += objects.count }
            save(checkpoint)
            let p = counter.snapshot
            logger.info("mirror page copied", metadata: [
                "examined": "\(checkpoint.examined)", "copied": "\(p.copied)", "skipped": "\(p.skipped)", "failed": "\(p.failed)"])
            token = page.nextContinuationToken
        } while token != nil
    }

    /// Copies `objects`, at most `concurrency` at once.
    private func copy(_ objects: [ObjectInfo]) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = objects.makeIterator()
            for _ in 0..<configuration.concurrency {
                guard let object = next.next() else { break }
                group.addTask { try await self.copyOne(object) }
            }
            while try await group.next() != nil {
                if let object = next.next() { group.addTask { try await self.copyOne(object) } }
            }
        }
    }

    private func copyOne(_ object: ObjectInfo) async throws {
        let key = object.key
        guard fence.beginCopy(key) else {
            counter.update { $0.skipped += 1 }
            return
        }
        defer { fence.endCopy(key) }
        do {
            let condition: WriteCondition
            do {
                let there = try await new.head(key)
                if there.etag == object.etag || !(there.lastModified < object.lastModified) {
                    counter.update { $0.skipped += 1 }
                    return
                }
                condition = .matches(etag: there.etag)
            } catch let error as PlugboardError where error.code == .storageNotFound {
                condition = .absent
            }
            let size = try await copyBytes(key, condition: conditional.withLock { $0 } ? condition : .none)
            counter.update {
                if let size {
                    $0.copied += 1
                    $0.bytesCopied += size
                } else {
                    $0.skipped += 1
                }
            }
        } catch {
            if Task.isCancelled { throw CancellationError() }
            counter.update { $0.failed += 1 }
            logger.warning("mirror could not copy an object", metadata: ["key": .string(key), "error": .string("\(error)")])
        }
    }

    /// Copies `key` with `condition`: its size, or nil when there was nothing to do (gone
    /// from the old backend, or written in the new one meanwhile).
    private func copyBytes(_ key: String, condition: WriteCondition) async throws -> Int? {
        let stream: ObjectStream
        do {
            stream = try await old.get(key, range: nil)
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return nil
        }
        do {
            let info = try await new.put(key, body: stream.body, contentType: stream.info.knownContentType,
                                         metadata: stream.info.knownMetadata ?? [:], condition: condition)
            return info.size
        } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
            return nil
        } catch let error as PlugboardError where error.code == .storageUnsupported && condition != .none {
            // Refused before the body was read (the contract): writing again without one.
            conditional.withLock { $0 = false }
            logger.info("mirror's new backend takes no conditional writes; copying under the fence alone", metadata: [
                "to": .string(configuration.to)])
            return try await copyBytes(key, condition: .none)
        }
    }

    private func save(_ checkpoint: MirrorCheckpoint) {
        do {
            try file.save(checkpoint)
        } catch {
            logger.warning("mirror checkpoint not written", metadata: ["error": .string(error.message)])
        }
    }
}
