import PlugboardAPI
import Synchronization

/// Orders DeleteBucket against the writes into the bucket across every process that
/// serves S3 over one storage, where ``S3BucketGate`` orders them within one: the fence
/// is the bucket's marker itself, which a deletion marks deleting before it looks for
/// objects, and removes after.
///
/// - DeleteBucket claims the deletion create-only (``deletionKey(_:)``, so that two
///   deletions through two gateways are one after the other, and only the claim's holder
///   writes the marker), marks the marker deleting, then looks for an object under the
///   bucket: finding one, it puts the marker back as it was and answers `BucketNotEmpty`;
///   finding none, it removes the marker. Either way it ends its claim.
/// - Every write, once what it stored has landed, reads the marker again (never trusted
///   from memory). Active: the write is answered. Gone: the deletion found the bucket
///   empty before the write landed, so the write removes what it stored (unless another
///   write replaced it meanwhile) and answers `NoSuchBucket`. Deleting: it waits for the
///   deletion's outcome, which is one of the two; past ``patience`` (the deleting gateway
///   stopped mid-way) it removes what it stored, which is safe whatever the outcome.
///
/// So a deletion either sees an acknowledged object, or the write that stored it was told
/// `NoSuchBucket`: no acknowledged object is lost, and none is left under a deleted
/// bucket's prefix for a bucket made again to show (unless the writing gateway is killed
/// between landing and removing). That needs a storage that reads back every write it
/// acknowledged; the claim needs its create-only writes to be atomic (no `If-Match`: Ceph
/// RGW 16.2 refuses every `If-Match` put, and FileStorage's is atomic in one process only).
/// The cost is one `head` of the marker per write, after the write (docs/BENCHMARKS.md).
enum S3BucketFence {
    /// The marker's metadata entry that says it is being deleted; an
    /// active marker has none (as every marker written before the fence).
    static let stateKey = "plugboard-s3-state"
    static let deletingState = "deleting"

    /// How long a write waits for a deletion that has marked its bucket to end.
    static let patience: Duration = .seconds(10)
    /// A deletion claimed longer ago than this is taken to have stopped (its gateway was
    /// killed), and another DeleteBucket takes it over rather than answering that one is
    /// in progress.
    static let abandonedAfter: Duration = .seconds(30)

    /// What the fence guarantees over `storage` when several gateways share it, for
    /// `serve --s3-listen` to say at start (docs/S3_API.md has the same per backend);
    /// `unknown` for a backend whose guarantees this build cannot vouch for.
    static func sharing(of storage: any ObjectStorage) -> (unknown: Bool, text: String) {
        switch String(describing: type(of: storage)) {
        case "S3Storage":
            return (false, "S3Storage may be shared by several gateways: a DeleteBucket and the writes into the bucket are fenced in the backend, which needs its read-after-write consistency, and two DeleteBuckets of one bucket at once are ordered by its If-None-Match (AWS S3 and Ceph RGW apply it atomically, moto not quite)")
        case "FileStorage":
            return (false, "FileStorage's root may be shared by several gateways on one machine: a DeleteBucket and the writes into the bucket are fenced in the folder, and two DeleteBuckets of one bucket at once are ordered by a create-only claim (a hard link, atomic across processes)")
        case "InMemoryObjectStorage", "FaultInjectingStorage":
            return (false, "MemoryStorage is this process's memory: no other gateway can share it")
        case let name:
            return (true, "\(name) may be shared by several gateways only if it reads back every write it acknowledged (the bucket fence needs it), and orders two DeleteBuckets of one bucket only if its If-None-Match is atomic (docs/S3_API.md)")
        }
    }

    /// The marker of `bucket` as the storage has it now; nil when there is none.
    static func marker(_ context: S3Context, _ bucket: String) async throws -> ObjectInfo? {
        do {
            return try await context.records.head(S3Namespace.markerKey(bucket: bucket))
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return nil
        }
    }

    static func isDeleting(_ marker: ObjectInfo) -> Bool { marker.metadata[stateKey] == deletingState }

    /// After a write into `bucket` landed `landed`: returns when the bucket is still
    /// there, else removes what landed and throws `NoSuchBucket`.
    static func confirm(_ context: S3Context, _ bucket: String, landed: [ObjectInfo]) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + patience
        var pause = Duration.milliseconds(5)
        while true {
            let marker = try await marker(context, bucket)
            if let marker, !isDeleting(marker) { return }
            // A request cancelled while it waits (its client went away) removes what it
            // stored all the same: a bucket made again must not find it.
            if marker != nil, clock.now < deadline, !Task.isCancelled {
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(100))
                continue
            }
            for info in landed { await undo(context, info) }
            var error = S3Error.noSuchBucket(bucket)
            error.message += marker == nil
                ? " Expected the bucket to stay while the write landed, found it deleted meanwhile (through another endpoint); nothing was stored."
                : " Expected the bucket's deletion through another endpoint to end within \(patience), found it still in progress; nothing was stored, retry."
            throw error
        }
    }

    /// Removes `info`'s object unless another write replaced it since. (The storage has no
    /// conditional delete: a write of the same key between the look and the delete would
    /// be removed too, which needs a bucket deleted and made again in that moment.)
    private static func undo(_ context: S3Context, _ info: ObjectInfo) async {
        // What landed under the reserved prefix is the front end's (a part, an upload's record).
        let storage = info.key.hasPrefix(S3Namespace.reservedPrefix) ? context.records : context.storage
        do {
            let current = try await storage.head(info.key)
            guard current.etag == info.etag, current.lastModified == info.lastModified else { return }
            try await storage.delete(info.key)
            context.logger.info("write of \(info.key) undone: its bucket was deleted while it landed")
        } catch let error as PlugboardError where error.code == .storageNotFound {
            return
        } catch {
            context.logger.error("could not undo the write of \(info.key) into a deleted bucket: \(error); it is left under the bucket's prefix")
        }
    }

    /// A deletion's hold on the bucket: the marker as it was, for ``reactivate(_:_:_:)``.
    struct Hold: Sendable {
        var original: ObjectInfo
    }

    /// Where a deletion of `bucket` in progress claims it, create-only: two DeleteBuckets
    /// through two endpoints at once are one after the other, on a storage whose `If-Match`
    /// is atomic in one process only (FileStorage) too.
    static func deletionKey(_ bucket: String) -> String { S3Namespace.reservedPrefix + "deleting/" + bucket }

    /// Claims the deletion of `bucket` and marks its marker deleting; nil when the storage
    /// cannot write conditionally (then the deletion is ordered against this endpoint's
    /// writes only, as before the fence). Throws `OperationAborted` while another
    /// endpoint's deletion of the bucket is in progress.
    static func markDeleting(_ context: S3Context, _ bucket: String) async throws -> Hold? {
        let claim = deletionKey(bucket)
        // The claim says when it was made by this host's clock, which the hosts keep in
        // step anyway (signatures are checked against it); the storage's clock may differ.
        let now = Timestamp.now()
        let content = Array("deleting-since \(now.seconds)".utf8)
        let busy = { (since: Int64) in
            S3Error("OperationAborted", status: 409,
                    "A conflicting conditional operation is currently in progress against this resource: expected no other deletion of bucket \(bucket), found one in progress through another endpoint since \(Timestamp(secondsSince1970: since).iso8601). Retry once it has ended (one cut short is taken over after \(abandonedAfter)).")
        }
        do {
            do {
                _ = try await context.records.put(claim, data: content, contentType: nil, metadata: [:], condition: .absent)
            } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
                // A claim older than any deletion takes is one whose endpoint stopped: taken over.
                let held: [UInt8]
                do {
                    held = try await context.records.get(claim, range: nil).body.collect(upTo: 256)
                } catch let error as PlugboardError where error.code == .storageNotFound {
                    throw busy(now.seconds)
                }
                let since = Int64(String(decoding: held, as: UTF8.self).split(separator: " ").last ?? "") ?? 0
                guard now.seconds - since >= Int64(abandonedAfter.components.seconds) else { throw busy(since) }
                context.logger.warning("taking over the deletion of bucket \(bucket) begun at \(Timestamp(secondsSince1970: since).iso8601) and never ended")
                try await context.records.delete(claim)
                do {
                    _ = try await context.records.put(claim, data: content, contentType: nil, metadata: [:], condition: .absent)
                } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
                    throw busy(now.seconds)
                }
            }
        } catch let error as PlugboardError where error.code == .storageUnsupported {
            context.logger.warning("The storage cannot write conditionally (\(error.message)); the deletion of bucket \(bucket) is ordered against the writes through this endpoint only.")
            return nil
        }
        // Read again under the claim: a deletion that ended meanwhile removed it.
        let current: ObjectInfo
        do {
            guard let found = try await self.marker(context, bucket) else { throw S3Error.noSuchBucket(bucket) }
            current = found
            var metadata = current.metadata
            metadata[stateKey] = deletingState
            _ = try await context.records.put(S3Namespace.markerKey(bucket: bucket), data: Array(deletingState.utf8), contentType: nil, metadata: metadata)
        } catch {
            await release(context, bucket)
            throw error
        }
        return Hold(original: current)
    }

    /// Puts the marker back as it was before ``markDeleting(_:_:)``, the bucket found
    /// not empty (or its deletion failed), and ends the deletion's claim.
    static func reactivate(_ context: S3Context, _ bucket: String, _ hold: Hold) async {
        var metadata = hold.original.metadata
        metadata[stateKey] = nil
        do {
            _ = try await context.records.put(S3Namespace.markerKey(bucket: bucket), data: [], contentType: nil, metadata: metadata)
        } catch {
            context.logger.error("could not put bucket \(bucket)'s marker back after its deletion failed: \(error); writes into it answer NoSuchBucket until DeleteBucket is asked again")
        }
        await release(context, bucket)
    }

    /// Ends the deletion's claim, the marker removed or put back.
    static func release(_ context: S3Context, _ bucket: String) async {
        do {
            try await context.records.delete(deletionKey(bucket))
        } catch {
            context.logger.error("could not remove the claim of bucket \(bucket)'s deletion: \(error); the next DeleteBucket takes it over after \(abandonedAfter)")
        }
    }
}

/// What a write into a bucket stored, for ``S3BucketFence/confirm(_:_:landed:)`` to
/// remove should the bucket be deleted while it landed.
public final class S3LandedWrites: Sendable {
    private let infos = Mutex<[ObjectInfo]>([])

    init() {}

    /// Notes an object the write stored, once it is stored; returns it.
    @discardableResult
    public func landed(_ info: ObjectInfo) -> ObjectInfo {
        infos.withLock { $0.append(info) }
        return info
    }

    var all: [ObjectInfo] { infos.withLock { $0 } }
}
