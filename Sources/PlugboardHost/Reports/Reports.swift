import PlugboardAPI
import PlugboardJSON

/// The JSON documents that `plugboard ... --json` prints and `plugboard serve` answers
/// with: one builder each, so the two never drift apart.
public enum Reports {
    /// One plugin, as `plugboard plugins --json` lists it.
    public static func plugin(_ r: PluginRecord, extra: [(String, JSONOutput)] = []) -> JSONOutput {
        .object([
            ("name", .string(r.name)), ("state", .string(r.state.description)), ("version", .string(r.version)),
            ("path", .string(r.path)), ("sha256", .string(r.sha256)),
            ("services", .array(r.services.map { .string($0) })),
            ("generation", r.generation.map { .int(Int64($0)) } ?? .null), ("error", JSONOutput.errorBody(r.error)),
            ("signedBy", r.signedBy.map { .object([("key", .string($0.name)), ("keyId", .string($0.keyID))]) } ?? .null),
            ("isolation", .string(r.isolation.description)),
        ] + (r.worker.map { [("worker", worker($0))] } ?? []) + extra)
    }

    /// An isolated plugin's worker, live: its state, processes, restarts and recent crashes.
    public static func worker(_ w: IsolatedPlugin) -> JSONOutput {
        let restarts = w.restarts.sorted { $0.key < $1.key }.map { ($0.key, JSONOutput.int(Int64($0.value))) }
        return .object([
            ("state", .string("\(w.status)")), ("pid", w.pid.map { .int(Int64($0)) } ?? .null),
            ("sparePid", w.sparePID.map { .int(Int64($0)) } ?? .null),
            ("restarts", .object(restarts)),
            ("crashes", .array(w.crashes.suffix(10).map { c in
                .object([("time", .string(c.time.iso8601)), ("reason", .string(c.reason)), ("message", .string(c.message))])
            })),
            ("error", JSONOutput.errorBody(w.failure)),
        ])
    }

    /// `check --json`: the records as ``plugins(_:)-([PluginRecord])`` lists them, each with
    /// its `warnings` (in the error shape): a newer build beside the file loaded.
    public static func checkedPlugins(_ records: [PluginRecord], staleBuilds: [String: StaleBuild]) -> JSONOutput {
        .array(records.map { r in
            plugin(r, extra: [("warnings", .array(staleBuilds[r.name].map { [JSONOutput.errorBody($0.warning)] } ?? []))])
        })
    }

    /// `GET /v1/admin/plugins`: the plugins as `plugboard plugins --json` lists them, the
    /// generation serving, hot swap's mode, the last reload attempt, retired plugins and
    /// the mapped images.
    public static func adminPlugins(_ host: PluginHost) -> JSONOutput {
        let mode = host.hotSwapMode
        let stats = host.reloads.snapshot
        return .object([
            ("generation", .int(Int64(host.container.generation))),
            ("hotSwap", .object([("enabled", .bool(mode.enabled)), ("watching", .bool(mode.watching)),
                                 ("reason", .string(mode.reason))])),
            ("reload", .object([
                ("lastAttempt", stats.lastAttempt?.json ?? .null),
                ("applied", .int(Int64(stats.applied))), ("unchanged", .int(Int64(stats.unchanged))),
                ("refused", .int(Int64(stats.refused))),
            ])),
            ("plugins", plugins(host)),
            ("retired", .array(host.retiredRecords.map { plugin($0) })),
            ("mappedImages", .object([("count", .int(Int64(MappedImages.shared.count))),
                                      ("bytes", .int(Int64(MappedImages.shared.totalBytes)))])),
        ])
    }

    /// Every plugin of the host, in manifest order.
    public static func plugins(_ host: PluginHost) -> JSONOutput {
        plugins(host.records)
    }

    /// Plugin records, as `plugboard plugins --json` lists them (`check --json` adds warnings: ``checkedPlugins(_:staleBuilds:)``).
    public static func plugins(_ records: [PluginRecord]) -> JSONOutput {
        .array(records.map { plugin($0) })
    }

    /// Registrations, as `plugboard services --json` lists them. A layer's has `wraps`,
    /// the owner of the registration just below it in its stack; others have no such member.
    /// A registration of an isolated plugin (its owner is in `isolated`) has
    /// `"isolation": "process"`: its implementation is the host's stand-in, the plugin's
    /// own runs in the worker.
    public static func services(_ registrations: [RegistrationInfo], isolated: Set<String> = []) -> JSONOutput {
        .array(registrations.map { r in
            .object([("service", .string(r.service)), ("name", .string(r.name)), ("rank", .int(Int64(r.rank))),
                     ("scope", .string(r.scope.description)), ("owner", .string(r.owner)),
                     ("implementation", .string(r.implementation)), ("active", .bool(r.isActive))]
                    + (r.wraps.map { [("wraps", JSONOutput.string($0))] } ?? [])
                    + (isolated.contains(r.owner) ? [("isolation", JSONOutput.string("process"))] : []))
        })
    }

    /// The plugins of `records` that run in a worker process.
    public static func isolatedOwners(_ records: [PluginRecord]) -> Set<String> {
        Set(records.filter { $0.isolation.worker != nil }.map(\.name))
    }

    /// An object's information, as `plugboard storage head --json` prints it, with
    /// `extra` members at the end. A field the storage did not report (an S3 listing's
    /// content type and metadata) is `null`, not the default it holds.
    public static func object(_ info: ObjectInfo, extra: [(String, JSONOutput)] = []) -> JSONOutput {
        let metadata = info.knownMetadata.map { known in
            JSONOutput.object(known.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })
        }
        return .object([("key", .string(info.key)), ("size", .int(Int64(info.size))), ("etag", .string(info.etag)),
                        ("contentType", .string(info.knownContentType)), ("lastModified", .string(info.lastModified.iso8601)),
                        ("metadata", metadata ?? .null)]
                       + extra)
    }
}
