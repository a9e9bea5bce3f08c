import PlugboardAPI
import Synchronization

// A test fixture, not a product for users: the content-type policy layer a plugin author
// writes from docs/PLUGIN_GUIDE.md ("What flows through your layer"), loaded the way the
// host loads one, so that the S3 front end's records and uploads are tested through it.

@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, ContentTypePolicyPlugin.self)
}

/// A layer over the `ObjectStorage` its entry `wraps`: a put of a user's object whose
/// content type is not in `allowed` is refused with `policy.content_type`, answered 415,
/// and counted in `/metrics` (`plugboard_policy_refused_total`).
///
/// Config: `allowed`, an array of media types (`["text/plain", "image/png"]`).
enum ContentTypePolicyPlugin: Plugin {
    static let name = "ContentTypePolicyPlugin"
    static let version = "1.0.0"
    static let services = ["PlugboardAPI.ObjectStorage"]
    static let refusedCode: PlugboardError.Code = "policy.content_type"

    static func register(into registrar: PluginRegistrar) throws {
        let config = registrar.config
        try config.requireOnly(["allowed"])
        guard case .array(let values)? = config["allowed"] else {
            throw PlugboardError(.configInvalid, "plugin \"\(registrar.pluginName)\": \"allowed\" is missing",
                                 detail: "Expected an array of media types, found none.", hint: "Add \"allowed\": [\"text/plain\"].")
        }
        let allowed = Set(values.compactMap { if case .string(let type) = $0 { type.lowercased() } else { nil } })
        try registrar.mapErrors([refusedCode: .init(status: 415, s3Code: "UnsupportedMediaType")])
        let plugin = registrar.pluginName
        try registrar.registerLayer((any ObjectStorage).self) { _, below in
            ContentTypePolicy(inner: below, allowed: allowed, plugin: plugin)
        }
    }
}

final class ContentTypePolicy: ObjectStorage, MetricsReporting {
    private let inner: any ObjectStorage
    private let allowed: Set<String>
    private let plugin: String
    /// Refusals by this instance: a reload builds a new one, from zero.
    private let refused = Atomic<Int>(0)

    init(inner: any ObjectStorage, allowed: Set<String>, plugin: String) {
        self.inner = inner
        self.allowed = allowed
        self.plugin = plugin
    }

    func metricSamples() -> [MetricSample] {
        [MetricSample(name: "plugboard_policy_refused_total", help: "Puts refused for their content type.", kind: .counter,
                      labels: ["plugin": plugin], value: Double(refused.load(ordering: .relaxed)))]
    }

    /// Judges what becomes a user's object: the object itself, or the upload that
    /// announces it; the front end's records and an upload's parts pass untouched.
    private func check(_ key: String, _ contentType: String?) throws {
        let call = StorageCall.current
        guard call.purpose == .object || call.purpose == .upload else { return }
        let type = (contentType ?? "application/octet-stream").split(separator: ";").first.map { String($0).lowercased() } ?? ""
        guard !allowed.contains(type) else { return }
        let object = call.object ?? key
        refused.add(1, ordering: .relaxed)
        throw PlugboardError(ContentTypePolicyPlugin.refusedCode,
                             "content type \(PlugboardError.quoted(type)) of \(PlugboardError.quoted(object)) is not allowed",
                             detail: "Expected one of \(allowed.sorted().joined(separator: ", ")), found \(type).",
                             hint: "Send the object with an allowed Content-Type.")
    }

    func put(_ key: String, data: [UInt8], contentType: String?, metadata: [String: String]) async throws -> ObjectInfo {
        try check(key, contentType)
        return try await inner.put(key, data: data, contentType: contentType, metadata: metadata)
    }

    func put(_ key: String, body: ObjectBody, contentType: String?, metadata: [String: String],
             condition: WriteCondition) async throws -> ObjectInfo {
        try check(key, contentType)
        return try await inner.put(key, body: body, contentType: contentType, metadata: metadata, condition: condition)
    }

    func get(_ key: String) async throws -> StoredObject { try await inner.get(key) }

    func get(_ key: String, range: ByteRange?) async throws -> ObjectStream { try await inner.get(key, range: range) }

    func getWithoutWaiting(_ key: String, range: ByteRange?) throws(PlugboardError) -> ReadyObject? {
        try inner.getWithoutWaiting(key, range: range)
    }

    func head(_ key: String) async throws -> ObjectInfo { try await inner.head(key) }

    func delete(_ key: String) async throws { try await inner.delete(key) }

    func list(prefix: String, limit: Int, continuationToken: String?) async throws -> ObjectListing {
        try await inner.list(prefix: prefix, limit: limit, continuationToken: continuationToken)
    }
}
