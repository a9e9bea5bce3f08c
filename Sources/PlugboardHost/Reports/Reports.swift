import PlugboardAPI

/// The JSON documents that `plugboard ... --json` prints and `plugboard serve` answers
/// with: one builder each, so the two never drift apart.
public enum Reports {
    /// One plugin, as `plugboard plugins --json` lists it.
    public static func plugin(_ r: PluginRecord) -> JSONOutput {
        .object([
            ("name", .string(r.name)), ("state", .string(r.state.description)), ("version", .string(r.version)),
            ("path", .string(r.path)), ("sha256", .string(r.sha256)),
            ("services", .array(r.services.map { .string($0) })), ("error", JSONOutput.errorBody(r.error)),
        ])
    }

    /// Every plugin of the host, in manifest order.
    public static func plugins(_ host: PluginHost) -> JSONOutput {
        .array(host.records.map(plugin))
    }

    /// Registrations, as `plugboard services --json` lists them.
    public static func services(_ registrations: [RegistrationInfo]) -> JSONOutput {
        .array(registrations.map { r in
            .object([("service", .string(r.service)), ("name", .string(r.name)), ("rank", .int(Int64(r.rank))),
                     ("scope", .string(r.scope.description)), ("owner", .string(r.owner)),
                     ("implementation", .string(r.implementation)), ("active", .bool(r.isActive))])
        })
    }

    /// An object's information, as `plugboard storage head --json` prints it, with
    /// `extra` members at the end.
    public static func object(_ info: ObjectInfo, extra: [(String, JSONOutput)] = []) -> JSONOutput {
        .object([("key", .string(info.key)), ("size", .int(Int64(info.size))), ("etag", .string(info.etag)),
                 ("contentType", .string(info.contentType)), ("lastModified", .string(info.lastModified.iso8601)),
                 ("metadata", .object(info.metadata.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) }))]
                + extra)
    }
}
