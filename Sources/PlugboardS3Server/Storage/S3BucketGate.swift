import PlugboardAPI
import PlugboardConcurrency

/// Orders a bucket's deletion against the writes into it, so that one of the two fails:
/// either the write answers `NoSuchBucket` and stores nothing, or DeleteBucket answers
/// `BucketNotEmpty`. Without it, a PutObject that found the bucket's marker could store
/// its object after DeleteBucket had listed the bucket as empty and removed the marker: an
/// acknowledged object that no listing shows, which a bucket made again under the name
/// would bring back.
///
/// A write (PutObject, PostObject, CopyObject, CreateMultipartUpload, UploadPart,
/// UploadPartCopy, CompleteMultipartUpload) checks the marker inside ``write(into:_:)``, after any
/// deletion of the bucket in progress has ended; a deletion runs inside
/// ``deletion(of:_:)``, which refuses at once while a write into the bucket is in flight
/// (that write will most likely leave an object, and a long upload must not hold the
/// deleter, or writers queued behind it, for its whole length).
///
/// The gate is one process's: it orders the requests one S3 endpoint serves. Processes
/// serving S3 over one shared backend are ordered against each other by
/// ``S3BucketFence``, in the backend.
public final class S3BucketGate: Sendable {
    private struct Bucket {
        var writers = 0
        var deleting = false
        /// Writers and deleters that arrived during a deletion; resumed with nil when it
        /// ends, to look again.
        var waiting: [CheckedContinuation<Int?, Never>] = []
    }

    private let buckets = LockedValueBox<[String: Bucket]>([:])
    /// Buckets found lately, with the storage that had them and when: a request trusts
    /// such a bucket for ``trust`` instead of asking the storage for its marker each time
    /// (through S3Storage, a second request to the backend for every request). Beside
    /// them, how many deletions have begun or ended: a marker found before one of those
    /// is not noted after it (the deletion may have removed it in between).
    private let seen = LockedValueBox<(buckets: [String: (storage: ObjectIdentifier, at: ContinuousClock.Instant)], deletions: UInt64)>(([:], 0))
    /// How long a bucket found stays trusted: a second, unless a test asks for longer.
    let trust: Duration

    public init(trust: Duration = .seconds(1)) {
        self.trust = trust
    }

    /// Whether `bucket` was found in `storage` within ``trust``. A storage that is not a
    /// class (no identity to compare) is never trusted.
    func recentlySeen(_ bucket: String, in storage: any ObjectStorage) -> Bool {
        guard type(of: storage) is AnyClass else { return false }
        let identity = ObjectIdentifier(storage as AnyObject)
        let now = ContinuousClock.now
        return seen.withLock { state in
            guard let entry = state.buckets[bucket], entry.storage == identity else { return false }
            return now - entry.at < trust
        }
    }

    /// A mark to take before asking the storage for a marker, for ``noteSeen(_:in:since:)``.
    func mark() -> UInt64 { seen.withLock { $0.deletions } }

    /// Notes that `bucket`'s marker was found in `storage`, unless a deletion has begun or
    /// ended since `mark`.
    func noteSeen(_ bucket: String, in storage: any ObjectStorage, since mark: UInt64) {
        guard type(of: storage) is AnyClass else { return }
        let identity = ObjectIdentifier(storage as AnyObject)
        let now = ContinuousClock.now
        seen.withLock { state in
            guard state.deletions == mark else { return }
            // Bounded: a flood of bucket names never grows it past a few thousand.
            if state.buckets.count >= 4096 { state.buckets.removeAll(keepingCapacity: true) }
            state.buckets[bucket] = (identity, now)
        }
    }

    /// Runs `body`, a write into `bucket`, once no deletion of the bucket is in progress;
    /// the bucket's deletion is refused until `body` returns.
    public func write<R>(into bucket: String, _ body: () async throws -> R) async throws -> R {
        _ = await enter(bucket) { state in
            state.writers += 1
            return state.writers
        }
        defer { leave(bucket) { $0.writers -= 1 } }
        return try await body()
    }

    /// Runs `body`, the deletion of `bucket`, alone: after any other deletion of it has
    /// ended, with writes into it held back until `body` returns. Throws `BucketNotEmpty`
    /// without running `body` while a write into the bucket is in flight.
    public func deletion<R>(of bucket: String, _ body: () async throws -> R) async throws -> R {
        let writing = await enter(bucket) { state in
            if state.writers == 0 { state.deleting = true }
            return state.writers
        }
        guard writing == 0 else {
            var error = S3Error.bucketNotEmpty(bucket)
            error.message += " Expected no objects and no writes in progress, found \(writing) write\(writing == 1 ? "" : "s") into it in progress; retry once they have ended."
            throw error
        }
        // Nothing trusts the bucket from the moment its deletion begins to its end, and no
        // marker found before its end is noted after (the deletion's own look at the
        // marker included, which is forgotten again when it ends).
        forget(bucket)
        defer {
            forget(bucket)
            leave(bucket) { $0.deleting = false }
        }
        return try await body()
    }

    /// How many requests wait for a deletion of `bucket` to end (for tests to wait on).
    func waitingCount(_ bucket: String) -> Int {
        buckets.withLock { $0[bucket]?.waiting.count ?? 0 }
    }

    private func forget(_ bucket: String) {
        seen.withLock { state in
            state.deletions &+= 1
            state.buckets[bucket] = nil
        }
    }

    /// Waits while a deletion of `bucket` is in progress, then returns what `admit` makes
    /// of the bucket's state, under the lock.
    private func enter(_ bucket: String, _ admit: (inout Bucket) -> Int) async -> Int {
        while true {
            let admitted: Int? = await withCheckedContinuation { (resume: CheckedContinuation<Int?, Never>) in
                let result: Int? = buckets.withLock { all in
                    var state = all[bucket] ?? Bucket()
                    defer { all[bucket] = state.writers == 0 && !state.deleting && state.waiting.isEmpty ? nil : state }
                    if state.deleting {
                        state.waiting.append(resume)
                        return nil
                    }
                    return admit(&state)
                }
                if let result { resume.resume(returning: result) }
            }
            if let admitted { return admitted }
        }
    }

    /// Applies `release` under the lock, wakes the waiters once no deletion is in progress,
    /// and forgets the bucket once nothing is left of its state.
    private func leave(_ bucket: String, _ release: (inout Bucket) -> Void) {
        let woken: [CheckedContinuation<Int?, Never>] = buckets.withLock { all in
            guard var state = all[bucket] else { return [] }
            release(&state)
            var woken: [CheckedContinuation<Int?, Never>] = []
            if !state.deleting {
                woken = state.waiting
                state.waiting = []
            }
            all[bucket] = state.writers == 0 && !state.deleting && state.waiting.isEmpty ? nil : state
            return woken
        }
        for waiter in woken { waiter.resume(returning: nil) }
    }
}
