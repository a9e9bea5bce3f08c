import PlugboardAPI
import PlugboardBytes
import PlugboardJSON

/// What etcd's JSON gateway reads and writes (grpc-gateway over etcd's protobuf messages):
/// keys and values base64, int64 fields as decimal strings, and fields at their default
/// value (0, false, empty) left out, as protobuf's JSON mapping does.
enum EtcdGateway {
    /// What the answer was expected to be and what it was, for ``PlugboardError/etcdMalformed``.
    struct Malformed: Error, Sendable {
        var expected: String
        var found: String
    }

    // MARK: Requests

    /// The `key` and, for a prefix, the `range_end` that selects every key starting with it.
    static func range(_ key: String, prefix: Bool) -> [(String, JSONOutput)] {
        let bytes = Array(key.utf8)
        var members: [(String, JSONOutput)] = [("key", .string(Base64.encode(bytes.isEmpty && prefix ? [0] : bytes)))]
        if prefix { members.append(("range_end", .string(Base64.encode(prefixEnd(bytes))))) }
        return members
    }

    /// The first key after every key that starts with `prefix`: its last byte below 0xff
    /// raised by one, what follows dropped; `[0]` (to the end of the key space) when there
    /// is none, as for the empty prefix.
    static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
        var end = prefix
        while let last = end.last {
            if last < 0xff {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return [0]
    }

    static func put(_ key: String, _ value: [UInt8], lease: Int64?) -> JSONOutput {
        var members: [(String, JSONOutput)] = [("key", .string(Base64.encode(Array(key.utf8)))), ("value", .string(Base64.encode(value)))]
        if let lease, lease != 0 { members.append(("lease", .string(String(lease)))) }
        return .object(members)
    }

    static func txn(_ txn: EtcdTxn) -> JSONOutput {
        .object([
            ("compare", .array(txn.compare.map(compare))),
            ("success", .array(txn.success.map(operation))),
            ("failure", .array(txn.failure.map(operation))),
        ])
    }

    private static func compare(_ compare: EtcdCompare) -> JSONOutput {
        let target: (name: String, field: String) = switch compare.target {
        case .version: ("VERSION", "version")
        case .createRevision: ("CREATE", "create_revision")
        case .modRevision: ("MOD", "mod_revision")
        case .value: ("VALUE", "value")
        case .lease: ("LEASE", "lease")
        }
        let result = switch compare.result {
        case .equal: "EQUAL"
        case .notEqual: "NOT_EQUAL"
        case .greater: "GREATER"
        case .less: "LESS"
        }
        let operand: JSONOutput = switch compare.operand {
        case .number(let number): .string(String(number))
        case .bytes(let bytes): .string(Base64.encode(bytes))
        }
        return .object([("key", .string(Base64.encode(Array(compare.key.utf8)))), ("target", .string(target.name)),
                        ("result", .string(result)), (target.field, operand)])
    }

    private static func operation(_ operation: EtcdOperation) -> JSONOutput {
        switch operation {
        case .put(let key, let value, let lease):
            .object([("request_put", put(key, value, lease: lease))])
        case .delete(let key, let prefix):
            .object([("request_delete_range", .object(range(key, prefix: prefix)))])
        case .get(let key):
            .object([("request_range", .object(range(key, prefix: false)))])
        }
    }

    static func watch(_ key: String, prefix: Bool, fromRevision: Int64?) -> JSONOutput {
        var members = range(key, prefix: prefix)
        if let fromRevision { members.append(("start_revision", .string(String(fromRevision)))) }
        // Progress notifications say how far the watch has seen when nothing changes, so
        // that a reconnection resumes from there rather than from an old change.
        members.append(("progress_notify", .bool(true)))
        return .object([("create_request", .object(members))])
    }

    // MARK: Answers

    static func parse(_ bytes: [UInt8]) throws(Malformed) -> JSONValue {
        do {
            return try JSONParser.parse(bytes, source: "etcd answer", limits: .init(maxBytes: 64 << 20, maxDepth: 32))
        } catch {
            throw Malformed(expected: "a JSON object", found: "\(bytes.count) bytes that are not JSON (\(error.message))")
        }
    }

    /// The error of a unary answer whose status is not 2xx, or of a stream's message.
    static func error(_ root: JSONValue, status: Int) -> GatewayError? {
        guard let error = root["error"] else { return nil }
        if case .object = error.kind {
            let code = (try? int64(error["grpc_code"], "error.grpc_code")).map(Int.init) ?? 2
            return GatewayError(status: status, code: code, message: string(error["message"]) ?? "no message")
        }
        let code = (try? int64(root["code"], "code")).map(Int.init) ?? 2
        return GatewayError(status: status, code: code, message: string(root["message"]) ?? string(error) ?? "no message")
    }

    /// The `header.revision` of an answer.
    static func revision(_ root: JSONValue) throws(Malformed) -> Int64 {
        try int64(root["header"]?["revision"], "header.revision")
    }

    static func keyValues(_ root: JSONValue) throws(Malformed) -> [EtcdKeyValue] {
        guard let kvs = root["kvs"] else { return [] }
        guard case .array(let items) = kvs.kind else { throw Malformed(expected: "\"kvs\" as an array", found: kvs.kindDescription) }
        var out: [EtcdKeyValue] = []
        out.reserveCapacity(items.count)
        for item in items { out.append(try keyValue(item)) }
        return out
    }

    static func keyValue(_ item: JSONValue) throws(Malformed) -> EtcdKeyValue {
        guard case .object = item.kind else { throw Malformed(expected: "a key-value object", found: item.kindDescription) }
        let key = try bytes(item["key"], "kv.key")
        guard !key.isEmpty else { throw Malformed(expected: "a key-value with a \"key\"", found: "none") }
        return EtcdKeyValue(key: String(decoding: key, as: UTF8.self), value: try bytes(item["value"], "kv.value"),
                            createRevision: try int64(item["create_revision"], "kv.create_revision"),
                            modRevision: try int64(item["mod_revision"], "kv.mod_revision"),
                            version: try int64(item["version"], "kv.version"), lease: try int64(item["lease"], "kv.lease"))
    }

    static func txnResult(_ root: JSONValue) throws(Malformed) -> EtcdTxnResult {
        var ranges: [[EtcdKeyValue]] = []
        if let responses = root["responses"] {
            guard case .array(let items) = responses.kind else {
                throw Malformed(expected: "\"responses\" as an array", found: responses.kindDescription)
            }
            for item in items {
                if let range = item["response_range"] { ranges.append(try keyValues(range)) }
            }
        }
        return EtcdTxnResult(succeeded: try bool(root["succeeded"], "succeeded"), revision: try revision(root), ranges: ranges)
    }

    /// One message of a watch stream.
    struct WatchMessage: Sendable {
        var created = false
        var canceled = false
        var compactRevision: Int64 = 0
        var cancelReason = ""
        var revision: Int64 = 0
        var changes: [EtcdChange] = []
    }

    /// A watch stream's `{"result": {...}}`; a `{"error": ...}` message is the caller's to look for first.
    static func watchMessage(_ root: JSONValue) throws(Malformed) -> WatchMessage {
        guard let result = root["result"], case .object = result.kind else {
            throw Malformed(expected: "a watch message with a \"result\" object", found: root.kindDescription)
        }
        var message = WatchMessage()
        message.created = try bool(result["created"], "result.created")
        message.canceled = try bool(result["canceled"], "result.canceled")
        message.compactRevision = try int64(result["compact_revision"], "result.compact_revision")
        message.cancelReason = string(result["cancel_reason"]) ?? ""
        message.revision = try revision(result)
        if let events = result["events"] {
            guard case .array(let items) = events.kind else {
                throw Malformed(expected: "\"events\" as an array", found: events.kindDescription)
            }
            for event in items {
                guard let kv = event["kv"] else { throw Malformed(expected: "an event with a \"kv\"", found: "none") }
                let type = string(event["type"]) ?? "PUT"
                switch type {
                case "PUT":
                    message.changes.append(.put(try keyValue(kv)))
                case "DELETE":
                    let key = try bytes(kv["key"], "kv.key")
                    message.changes.append(.delete(key: String(decoding: key, as: UTF8.self),
                                                   modRevision: try int64(kv["mod_revision"], "kv.mod_revision")))
                default:
                    throw Malformed(expected: "an event of type PUT or DELETE", found: "type \(JSONOutput.quote(type))")
                }
            }
        }
        return message
    }

    /// The `ID` and `TTL` of a lease grant or keep-alive; a TTL of 0 (or none) says the
    /// lease is gone.
    static func lease(_ root: JSONValue) throws(Malformed) -> (id: Int64, ttl: Int64) {
        (try int64(root["ID"], "ID"), try int64(root["TTL"], "TTL"))
    }

    /// The leader's member id and the answering member's, from `/v3/maintenance/status`.
    static func status(_ root: JSONValue) throws(Malformed) -> (leader: UInt64, member: UInt64) {
        (try uint64(root["leader"], "leader"), try uint64(root["header"]?["member_id"], "header.member_id"))
    }

    // MARK: Fields

    /// An int64 field: a decimal string as protobuf's JSON writes it (a JSON number is
    /// taken too); 0 when absent.
    static func int64(_ value: JSONValue?, _ name: String) throws(Malformed) -> Int64 {
        guard let value else { return 0 }
        switch value.kind {
        case .integer(let number): return number
        case .string(let text):
            guard let number = Int64(text) else { throw Malformed(expected: "\"\(name)\" as a decimal int64", found: JSONOutput.quote(String(text.prefix(40)))) }
            return number
        case .null: return 0
        default: throw Malformed(expected: "\"\(name)\" as a decimal int64", found: value.kindDescription)
        }
    }

    /// A uint64 field (member ids use the whole range).
    static func uint64(_ value: JSONValue?, _ name: String) throws(Malformed) -> UInt64 {
        guard let value else { return 0 }
        switch value.kind {
        case .integer(let number) where number >= 0: return UInt64(number)
        case .string(let text):
            guard let number = UInt64(text) else { throw Malformed(expected: "\"\(name)\" as a decimal uint64", found: JSONOutput.quote(String(text.prefix(40)))) }
            return number
        case .null: return 0
        default: throw Malformed(expected: "\"\(name)\" as a decimal uint64", found: value.kindDescription)
        }
    }

    /// A bytes field, base64; empty when absent.
    static func bytes(_ value: JSONValue?, _ name: String) throws(Malformed) -> [UInt8] {
        guard let value else { return [] }
        switch value.kind {
        case .string(let text):
            guard let bytes = Base64.decode(text) else { throw Malformed(expected: "\"\(name)\" as base64", found: "\(text.utf8.count) characters that are not base64") }
            return bytes
        case .null: return []
        default: throw Malformed(expected: "\"\(name)\" as a base64 string", found: value.kindDescription)
        }
    }

    /// A bool field; false when absent.
    static func bool(_ value: JSONValue?, _ name: String) throws(Malformed) -> Bool {
        guard let value else { return false }
        switch value.kind {
        case .bool(let flag): return flag
        case .null: return false
        default: throw Malformed(expected: "\"\(name)\" as true or false", found: value.kindDescription)
        }
    }

    static func string(_ value: JSONValue?) -> String? {
        guard let value, case .string(let text) = value.kind else { return nil }
        return text
    }
}
