import PlugboardAPI
import PlugboardConcurrency
import PlugboardHost
import PlugboardHTTPClient

/// A fleet host's side (`serve --fleet`): before the host starts, which manifest to start
/// from (``prepare()``, then ``fallback(after:)`` for each one the host's checked start
/// refuses); while it serves, its status under its lease and each new desired manifest
/// applied through the host's reload (``run(host:address:totals:)``).
///
/// The desired manifest is `targets/<id>` if present, else `stable`. Each new desired
/// digest is fetched, written to the state folder's `manifest.json`, and reloaded exactly
/// as a changed manifest file is (stage, preflight child, one commit, drain); one that
/// applies is kept as `applied.json`, one that is refused is reported and `manifest.json`
/// goes back to the applied one. A refused digest is not tried again until the desired
/// digest changes.
public actor FleetAgent {
    public struct Configuration: Sendable {
        public var keys: FleetKeys
        public var hostID: String
        public var localCopy: FleetLocalCopy
        /// plugboard's version, reported in the status.
        public var version: String
        /// The host key's lease: a host that dies leaves the fleet after this long.
        public var leaseTTLSeconds: Int = 10
        /// How often the status is refreshed (when it changed) and the desired manifest
        /// read again without a change having been seen.
        public var heartbeatSeconds: Double = 1
        /// The status is written at least this often, changed or not.
        public var refreshSeconds: Double = 5
        /// The longest wait between attempts while etcd is unreachable: each wait is
        /// `RetryPolicy`'s, a random time up to the heartbeat doubled for each failure in
        /// a row, at most this.
        public var maxBackoffSeconds: Double = 8
        /// How long a host with a local copy waits at start for etcd to name and hand over
        /// its desired manifest before it starts from the copy (etcd without quorum does
        /// not refuse, it keeps a read waiting for its own timeouts); the desired manifest
        /// then comes as a reload once etcd answers. A host without a copy waits for the
        /// client's own bound: it has nothing else to serve.
        public var startWaitSeconds: Double = 2
        public var logger: Logger

        public init(keys: FleetKeys, hostID: String, localCopy: FleetLocalCopy, version: String, logger: Logger = .disabled) {
            self.keys = keys
            self.hostID = hostID
            self.localCopy = localCopy
            self.version = version
            self.logger = logger
        }
    }

    /// The manifest the host starts from.
    public struct StartPlan: Sendable {
        /// The digest of the manifest at ``FleetLocalCopy/manifestPath`` ("" for the empty one).
        public var digest: String
        /// `etcd`, `local copy` or `empty`.
        public var startedFrom: String
    }

    public let store: any FleetStore
    public let configuration: Configuration
    private var applied = ""
    private var startedFrom = "empty"
    private var lastReload: HostStatus.LastReload?
    private var refused: String?
    /// The desired manifest's rollout, while the host starts from it.
    private var startRollout: String?
    /// The last invalid record met on the way to the desired manifest, logged once.
    private var invalidRecord: String?
    private var baseline = (requests: 0, errors: 0)
    private var since = Timestamp.now().iso8601
    private var lease: Int64?
    private var lastWritten: HostStatus?
    private var lastWrittenAt = 0.0
    private var lastKeptAlive = 0.0
    private var reachable = true
    /// The manifest the host was started from, kept as the local copy once it started.
    private var startBytes: [UInt8] = []

    /// An empty manifest: a host with nothing to run yet serves not-ready.
    static let emptyManifest = Array("{\"schemaVersion\": 1, \"plugins\": []}\n".utf8)

    public init(store: any FleetStore, configuration: Configuration) {
        self.store = store
        self.configuration = configuration
    }

    private var logger: Logger { configuration.logger.with("component", "fleet") }
    private var keys: FleetKeys { configuration.keys }

    /// The desired digest: the host's target if it has one (with its rollout), else
    /// stable; nil when neither.
    func desired() async throws(PlugboardError) -> (digest: String, rollout: String?)? {
        if let bytes = try await store.get(keys.target(configuration.hostID)) {
            let target = try TargetRecord(bytes: bytes, what: "targets/\(configuration.hostID)")
            return (target.digest, target.rollout)
        }
        return try await FleetManifests.stable(in: store, keys: keys).map { ($0.digest, nil) }
    }

    /// Writes the manifest the host is to start from: the desired one from etcd; the
    /// local copy when etcd cannot be reached (or, with a copy, does not answer within
    /// ``Configuration/startWaitSeconds``), or the desired one cannot be had; else an
    /// empty manifest (the host serves not-ready until one applies). The host then starts
    /// from it only if it passes the reload's checks (`PluginHost.startChecked`), and
    /// tells ``fallback(after:)`` when it does not.
    public func prepare() async throws(PlugboardError) -> StartPlan {
        let local = configuration.localCopy
        try local.prepare()
        let copy = local.applied()
        let copyDigest = try copy.map { b throws(PlugboardError) in try Digest.sha256Hex(b) }
        let read = await Self.first(within: copy == nil ? nil : configuration.startWaitSeconds) { [self] () async -> Result<Desired?, PlugboardError> in
            do throws(PlugboardError) {
                return .success(try await desiredBytes(known: copyDigest))
            } catch {
                return .failure(error)
            }
        }
        switch read {
        case nil:
            logger.warning("fleet: etcd did not hand over the desired manifest within \(RolloutStateMachine.seconds(configuration.startWaitSeconds)) s of the start; starting from the local copy, the desired manifest follows as a reload")
            reachable = false
        case .success(let desired?)?:
            startRollout = desired.rollout
            guard let missing = desired.missing else {
                return try begin(desired.bytes ?? copy ?? [], digest: desired.digest, from: "etcd")
            }
            refused = desired.digest
            record(refusal: missing, of: desired.digest, rollout: desired.rollout)
            logger.error("fleet: refused manifest \(desired.digest) at start: \(missing.code): \(missing.message); \(copy == nil ? "starting with no plugins" : "starting from the local copy")")
        case .success(nil)?:
            break
        case .failure(let error)? where error.code == .fleetLocalCopyFailed:
            throw error
        case .failure(let error)? where error.code == .fleetRecordInvalid:
            noteInvalid(error, serving: copy == nil ? "no plugins" : "the local copy")
        case .failure(let error)?:
            logger.warning("fleet: could not read the desired manifest from etcd at start (\(error.code): \(error.message)); \(copy == nil ? "no local copy, starting with no plugins" : "starting from the local copy")")
            reachable = false
        }
        if let copy, let copyDigest {
            logger.notice("fleet: starting from the local copy of manifest \(copyDigest) (\(local.appliedPath))")
            return try begin(copy, digest: copyDigest, from: "local copy")
        }
        return try begin(Self.emptyManifest, digest: "", from: "empty")
    }

    /// The desired manifest as a start needs it: its digest, its rollout, and its bytes
    /// (nil when they are the local copy's), or why they cannot be had.
    struct Desired: Sendable {
        var digest: String
        var rollout: String?
        var bytes: [UInt8]?
        /// `fleet.manifest_missing`: a refusal of the digest, not an unreachable etcd.
        var missing: PlugboardError?
    }

    private func desiredBytes(known: String?) async throws(PlugboardError) -> Desired? {
        guard let desired = try await desired() else { return nil }
        var out = Desired(digest: desired.digest, rollout: desired.rollout)
        guard desired.digest != known else { return out }
        do throws(PlugboardError) {
            out.bytes = try await FleetManifests.fetch(desired.digest, from: store, keys: keys)
        } catch where error.code == .fleetManifestMissing {
            out.missing = error
        }
        return out
    }

    /// `body`'s result, or nil when `seconds` (nil: no bound) passed first; `body` is
    /// cancelled then.
    static func first<T: Sendable>(within seconds: Double?, _ body: @escaping @Sendable () async -> T) async -> T? {
        guard let seconds else { return await body() }
        return await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1e9))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The host could not start from the plan: its manifest was refused (what a reload
    /// refuses, `PluginHost.startChecked`). The refusal is recorded as a running host
    /// records one (a refused desired manifest is not tried again until the desired
    /// digest changes), and the next plan is the local copy if that was not it, else the
    /// empty manifest; nil when the empty one was refused.
    public func fallback(after error: PlugboardError) throws(PlugboardError) -> StartPlan? {
        guard startedFrom != "empty" else { return nil }
        let copy = configuration.localCopy.applied()
        let copyDigest = try copy.map { b throws(PlugboardError) in try Digest.sha256Hex(b) }
        let next = startedFrom == "etcd" && copyDigest != nil && copyDigest != applied ? "the local copy of manifest \(copyDigest ?? "")"
            : "no plugins (not ready until a manifest applies)"
        if startedFrom == "etcd" || lastReload == nil {
            refused = applied
            record(refusal: error, of: applied, rollout: startedFrom == "etcd" ? startRollout : nil)
        }
        logger.error("fleet: refused manifest \(applied) at start: \(error.code): \(error.message); starting from \(next)")
        if startedFrom == "etcd", let copy, let copyDigest, copyDigest != applied {
            return try begin(copy, digest: copyDigest, from: "local copy")
        }
        return try begin(Self.emptyManifest, digest: "", from: "empty")
    }

    private func begin(_ bytes: [UInt8], digest: String, from: String) throws(PlugboardError) -> StartPlan {
        try configuration.localCopy.setManifest(bytes)
        startBytes = bytes
        applied = digest
        startedFrom = from
        if from == "etcd" { logger.notice("fleet: starting from manifest \(digest) from etcd") }
        return StartPlan(digest: digest, startedFrom: from)
    }

    private func refuse(_ digest: String, _ error: PlugboardError, rollout: String? = nil) {
        refused = digest
        record(refusal: error, of: digest, rollout: rollout)
        logger.error("fleet: refused manifest \(digest): \(error.code): \(error.message); still serving manifest \(applied.isEmpty ? "(none)" : applied)")
    }

    /// The status's `lastReload`: `digest` refused with `error`.
    private func record(refusal error: PlugboardError, of digest: String, rollout: String?) {
        lastReload = .init(outcome: "refused", digest: digest, rollout: rollout, errorCode: error.code.rawValue, errorMessage: error.message,
                           at: Timestamp.now().iso8601)
    }

    /// A record on the way to the desired manifest (`stable`, the host's target) is not
    /// what FLEET.md describes: logged once while it stays so; the host serves on, and
    /// keeps its status fresh, as if nothing were desired.
    private func noteInvalid(_ error: PlugboardError, serving: String) {
        guard invalidRecord != error.message else { return }
        invalidRecord = error.message
        logger.error("fleet: \(error.message); serving \(serving) until it is set again (plugboard fleet set)")
    }

    /// The host started from the plan; `requiredFailure` is its own
    /// (``PluginHost/requiredFailure``). The start counts as the first reload, for the
    /// rollout's view; a manifest from etcd that started with every required plugin
    /// active becomes the local copy, to start from while etcd is down.
    public func started(requiredFailure: PlugboardError?) throws(PlugboardError) {
        guard startedFrom != "empty", lastReload == nil else { return }
        lastReload = .init(outcome: requiredFailure == nil ? "applied" : "refused", digest: applied,
                           errorCode: requiredFailure?.code.rawValue, errorMessage: requiredFailure?.message, at: Timestamp.now().iso8601)
        if requiredFailure == nil && startedFrom == "etcd" { try configuration.localCopy.setApplied(startBytes) }
    }

    /// Registers the host, then follows the desired manifest and keeps the status fresh
    /// until the task is cancelled; ``leave()`` then removes the host at once.
    /// `totals` are the server's object requests and 5xx answers so far.
    public func run(host: PluginHost, address: String, totals: @escaping @Sendable () -> (requests: Int, errors: Int)) async {
        baseline = totals()
        since = Timestamp.now().iso8601
        let wakeups = FleetWakeups(store: store, prefixes: [keys.stable, keys.target(configuration.hostID)],
                                   tickSeconds: configuration.heartbeatSeconds)
        defer { wakeups.stop() }
        // Full jitter: a fleet's hosts that lost etcd together do not all come back in the
        // same instant.
        let retry = RetryPolicy(maxRetries: .max, baseDelay: .seconds(configuration.heartbeatSeconds),
                                maxDelay: .seconds(configuration.maxBackoffSeconds))
        var failures = 0
        for await _ in wakeups.stream {
            do throws(PlugboardError) {
                try await step(host: host, address: address, totals: totals)
                if !reachable {
                    logger.notice("fleet: etcd reachable again; host \"\(configuration.hostID)\" registered")
                    reachable = true
                }
                failures = 0
            } catch {
                if reachable {
                    logger.warning("fleet: etcd unreachable (\(error.code): \(error.message)); serving manifest \(applied.isEmpty ? "(none)" : applied), retrying")
                    reachable = false
                }
                try? await Task.sleep(for: retry.delay(beforeRetry: failures))
                failures += 1
            }
            if Task.isCancelled { break }
        }
    }

    /// One round: the lease, the desired manifest, the status.
    private func step(host: PluginHost, address: String, totals: @Sendable () -> (requests: Int, errors: Int)) async throws(PlugboardError) {
        let now = MonotonicClock.now()
        if let current = lease, now - lastKeptAlive >= Double(configuration.leaseTTLSeconds) / 3 {
            if try await !store.keepAlive(current) {
                logger.warning("fleet: the host's lease ended (etcd was unreachable longer than \(configuration.leaseTTLSeconds) s); registering again")
                lease = nil
            }
            lastKeptAlive = now
        }
        if lease == nil {
            lease = try await store.grantLease(ttlSeconds: configuration.leaseTTLSeconds)
            lastKeptAlive = now
            lastWritten = nil
        }
        let wanted: (digest: String, rollout: String?)?
        do throws(PlugboardError) {
            wanted = try await desired()
            invalidRecord = nil
        } catch where error.code == .fleetRecordInvalid {
            noteInvalid(error, serving: applied.isEmpty ? "no plugins" : "manifest \(applied)")
            wanted = nil
        }
        if let desired = wanted {
            if desired.digest == applied {
                refused = nil
            } else if desired.digest != refused {
                try await apply(desired.digest, rollout: desired.rollout, host: host, totals: totals)
            }
        }
        var status = HostStatus(id: configuration.hostID, address: address, version: configuration.version,
                                generation: Int64(host.container.generation), manifestDigest: applied, lastReload: lastReload,
                                ready: host.notReadyReasons.isEmpty, requests: 0, errors: 0, since: since, startedFrom: startedFrom,
                                updatedAt: "")
        let counts = totals()
        status.requests = Int64(max(0, counts.requests - baseline.requests))
        status.errors = Int64(max(0, counts.errors - baseline.errors))
        guard status != lastWritten || now - lastWrittenAt >= configuration.refreshSeconds, let lease else { return }
        var written = status
        written.updatedAt = Timestamp.now().iso8601
        try await store.put(keys.host(configuration.hostID), written.json.bytes, lease: lease)
        if lastWritten == nil {
            logger.notice("fleet: host \"\(configuration.hostID)\" registered at \(address), running manifest \(applied.isEmpty ? "(none)" : applied)")
        }
        lastWritten = status
        lastWrittenAt = now
    }

    /// Fetches `digest`, writes it as the host's manifest and reloads.
    private func apply(_ digest: String, rollout: String?, host: PluginHost, totals: @Sendable () -> (requests: Int, errors: Int)) async throws(PlugboardError) {
        let bytes: [UInt8]
        do throws(PlugboardError) {
            bytes = try await FleetManifests.fetch(digest, from: store, keys: keys)
        } catch where error.code == .fleetManifestMissing {
            refuse(digest, error, rollout: rollout)
            return
        }
        let local = configuration.localCopy
        try local.setManifest(bytes)
        logger.info("fleet: reloading to manifest \(digest)")
        let outcome = await host.reload(trigger: "fleet")
        switch outcome.result {
        case .applied, .unchanged:
            try local.setApplied(bytes)
            applied = digest
            refused = nil
            baseline = totals()
            since = Timestamp.now().iso8601
            lastReload = .init(outcome: outcome.result.rawValue, digest: digest, rollout: rollout, at: Timestamp.now().iso8601)
            logger.notice("fleet: applied manifest \(digest) (generation \(outcome.generation))")
        case .refused:
            try local.setManifest(local.applied() ?? Self.emptyManifest)
            refuse(digest, outcome.error ?? PlugboardError(.fleetRecordInvalid, "the reload was refused without an error"), rollout: rollout)
        }
    }

    /// Removes the host from the fleet now (its lease revoked), at shutdown.
    public func leave() async {
        guard let lease else { return }
        self.lease = nil
        try? await store.revokeLease(lease)
    }
}
