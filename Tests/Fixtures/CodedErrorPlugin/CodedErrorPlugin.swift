import InMemoryStorage
import PlugboardAPI

// A test fixture, not a product for users: a storage that throws error codes of its own,
// with the answers its config maps them to, so that both front ends' mapping can be
// tested against a real .so loaded the way the host loads one.

@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 7)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, CodedErrorPlugin.self)
}

/// Config:
/// - `mappings`: an object of `code: {"status": N, "s3Code": "Name"}`, handed to
///   `registrar.mapErrors` as it is (default: none);
/// - `label`: quoted in the errors' messages, to tell builds apart (default `fixture`).
///
/// Every operation on a key with the components `refuse/<code>` throws `PlugboardError(<code>, ...)`;
/// every other key is stored in memory.
enum CodedErrorPlugin: Plugin {
    static let name = "CodedErrorPlugin"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]

    static func register(into registrar: PluginRegistrar) throws {
        let config = registrar.config
        try config.requireOnly(["mappings", "label"])
        let label = try config.string("label", default: "fixture") ?? "fixture"
        let table = try config.object("mappings")
        var mappings: [PlugboardError.Code: PlugboardError.Mapping] = [:]
        for code in table.values.keys {
            let entry = try table.object(code)
            try entry.requireOnly(["status", "s3Code"])
            mappings[PlugboardError.Code(code)] = PlugboardError.Mapping(status: try entry.int("status"), s3Code: try entry.string("s3Code"))
        }
        try registrar.mapErrors(mappings)
        try registrar.register((any ObjectStorage).self) { _ in CodedErrorStorage(label: label) }
    }
}

final class CodedErrorStorage: ObjectStorage {
    private let base = InMemoryObjectStorage()
    private let label: String

    init(label: String) { self.label = label }

    /// The code a `.../refuse/<code>/...` key names (the S3 endpoint stores bucket `b`'s
    /// key `k` as `b/k`).
    private func refuse(_ key: String) throws {
        let parts = key.split(separator: "/")
        guard let at = parts.firstIndex(of: "refuse"), at + 1 < parts.count else { return }
        let code = parts[at + 1]
        throw PlugboardError(PlugboardError.Code(String(code)), "\(label) refuses \(PlugboardError.quoted(key))",
                             detail: "The key asks for code \(code).", hint: "Use a key outside refuse/.")
    }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try refuse(key)
        return try await base.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func get(_ key: String) async throws -> StoredObject {
        try refuse(key)
        return try await base.get(key)
    }

    func head(_ key: String) async throws -> ObjectInfo {
        try refuse(key)
        return try await base.head(key)
    }

    func delete(_ key: String) async throws {
        try refuse(key)
        try await base.delete(key)
    }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await base.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
