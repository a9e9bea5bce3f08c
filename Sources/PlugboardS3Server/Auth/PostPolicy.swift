import PlugboardAPI
import PlugboardBytes
import PlugboardHost
import PlugboardJSON

/// The policy of a browser upload (POST Object): a base64 JSON document, signed by the
/// form, that says until when the form may be used and what its fields may hold:
///
/// ```json
/// {"expiration": "2026-12-01T12:00:00.000Z",
///  "conditions": [{"bucket": "photos"}, ["starts-with", "$key", "uploads/"],
///                 ["content-length-range", 1, 10485760], {"x-amz-date": "20261201T110000Z"}]}
/// ```
///
/// Conditions are S3's: an object `{"field": "value"}` and `["eq", "$field", "value"]`
/// match exactly, `["starts-with", "$field", "prefix"]` by prefix (`""` lets any value
/// through; for `Content-Type`, every comma-separated type must start so), and
/// `["content-length-range", min, max]` bounds the file's size, which only the file's
/// bytes can tell (``contentLengthRange``). Field names are read without case, values
/// with it. A field the form lacks is the empty text (the bucket is the request's).
///
/// A policy that does not read is `InvalidPolicyDocument`; a form it refuses is
/// `AccessDenied` with S3's "Invalid according to Policy: ..." messages.
struct PostPolicy: Sendable {
    enum Condition: Sendable, Equatable {
        case equals(field: String, value: String)
        case startsWith(field: String, prefix: String)
        case contentLengthRange(min: Int, max: Int)

        /// The field the condition covers, lower-cased; nil for content-length-range.
        var field: String? {
            switch self {
            case .equals(let field, _), .startsWith(let field, _): field
            case .contentLengthRange: nil
            }
        }

        /// The condition as S3 quotes it in "Policy Condition failed: [...]".
        var text: String {
            switch self {
            case .equals(let field, let value): "[\"eq\", \"$\(field)\", \"\(Self.escaped(value))\"]"
            case .startsWith(let field, let prefix): "[\"starts-with\", \"$\(field)\", \"\(Self.escaped(prefix))\"]"
            case .contentLengthRange(let min, let max): "[\"content-length-range\", \(min), \(max)]"
            }
        }

        private static func escaped(_ text: String) -> String {
            String(text.prefix(256)).replacing("\\", with: "\\\\").replacing("\"", with: "\\\"")
        }
    }

    let expiration: Timestamp
    let conditions: [Condition]

    /// The longest policy read (its JSON): S3 allows the whole form 20 KB.
    static let maxDocumentBytes = 20 << 10

    /// Form fields no condition needs to cover (S3's list, and any `x-ignore-` field):
    /// `awsaccesskeyid` and `signature` are Signature Version 2's.
    static let exemptFields: Set<String> = ["file", "policy", "x-amz-signature", "awsaccesskeyid", "signature"]

    init(expiration: Timestamp, conditions: [Condition]) {
        self.expiration = expiration
        self.conditions = conditions
    }

    /// The policy of a form's `policy` field.
    init(base64 text: String) throws(S3Error) {
        guard let bytes = Base64.decode(text.filter { $0 != "\r" && $0 != "\n" }) else {
            throw Self.invalid("expected the policy field to be base64 (RFC 4648, padded), found \"\(text.prefix(40))\"")
        }
        try self.init(json: bytes)
    }

    /// The policy of a JSON document.
    init(json bytes: [UInt8]) throws(S3Error) {
        let root: JSONValue
        do throws(PlugboardError) {
            root = try JSONParser.parse(bytes, source: "policy", limits: .init(maxBytes: Self.maxDocumentBytes, maxDepth: 8))
        } catch {
            throw Self.invalid("Invalid JSON: \(error.message)\(error.detail.map { " (\($0))" } ?? "")")
        }
        guard case .object = root.kind else { throw Self.invalid("expected a JSON object, found \(root.kindDescription)") }
        guard let expirationValue = root["expiration"] else { throw Self.invalid("Policy missing expiration") }
        guard case .string(let expirationText) = expirationValue.kind, let expiration = Timestamp(iso8601: expirationText) else {
            throw Self.invalid("Invalid 'expiration' value: expected an ISO 8601 time such as 2026-12-01T12:00:00.000Z, found \(expirationValue.description.prefix(64))")
        }
        guard let conditionsValue = root["conditions"] else { throw Self.invalid("Policy missing conditions") }
        guard case .array(let list) = conditionsValue.kind else {
            throw Self.invalid("Invalid 'conditions' value: must be a List, found \(conditionsValue.kindDescription)")
        }
        var conditions: [Condition] = []
        for item in list {
            switch item.kind {
            case .object(let members):
                for member in members {
                    guard case .string(let value) = member.value.kind else {
                        throw Self.invalid("Invalid Simple-Condition: value must be a string, found \(member.value.kindDescription) for \"\(member.key.prefix(64))\"")
                    }
                    conditions.append(.equals(field: member.key.lowercased(), value: value))
                }
            case .array(let elements):
                conditions.append(try Self.condition(elements, text: item.description))
            default:
                throw Self.invalid("Invalid condition: expected an object {\"field\": \"value\"} or a list [operation, ...], found \(item.kindDescription)")
            }
        }
        self.init(expiration: expiration, conditions: conditions)
    }

    private static func condition(_ elements: [JSONValue], text: String) throws(S3Error) -> Condition {
        guard let first = elements.first, case .string(let operation) = first.kind else {
            throw invalid("Invalid condition \(text.prefix(128)): expected an operation name first (eq, starts-with, content-length-range)")
        }
        switch operation.lowercased() {
        case "eq", "starts-with":
            guard elements.count == 3, case .string(let name) = elements[1].kind, case .string(let value) = elements[2].kind else {
                throw invalid("Invalid '\(operation)' condition \(text.prefix(128)): expected [\"\(operation)\", \"$field\", \"value\"] with three strings")
            }
            guard name.hasPrefix("$"), name.count > 1 else {
                throw invalid("Invalid '\(operation)' condition \(text.prefix(128)): expected the field's name after a \"$\", found \"\(name.prefix(64))\"")
            }
            let field = String(name.dropFirst()).lowercased()
            return operation.lowercased() == "eq" ? .equals(field: field, value: value) : .startsWith(field: field, prefix: value)
        case "content-length-range":
            guard elements.count == 3, let min = size(elements[1]), let max = size(elements[2]), min <= max else {
                throw invalid("Invalid 'content-length-range' condition \(text.prefix(128)): expected [\"content-length-range\", min, max] with 0 <= min <= max")
            }
            return .contentLengthRange(min: min, max: max)
        default:
            throw invalid("Invalid condition \(text.prefix(128)): unknown operation \"\(operation.prefix(32))\", expected eq, starts-with or content-length-range")
        }
    }

    /// A size in a content-length-range: a non-negative integer, or its decimal text.
    private static func size(_ value: JSONValue) -> Int? {
        switch value.kind {
        case .integer(let n): return n >= 0 ? Int(n) : nil
        case .string(let s):
            guard !s.isEmpty, s.utf8.count <= 18, s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            return Int(s)
        default: return nil
        }
    }

    // MARK: Evaluation

    /// The sizes every content-length-range allows together (`min > max` when two of
    /// them do not meet: every size then fails); nil when none bounds the file.
    var contentLengthRange: (min: Int, max: Int)? {
        var bounds: (min: Int, max: Int)?
        for case .contentLengthRange(let min, let max) in conditions {
            bounds = (Swift.max(min, bounds?.min ?? min), Swift.min(max, bounds?.max ?? max))
        }
        return bounds
    }

    /// Refuses the form unless the policy is still valid at `now`, every condition on a
    /// field holds, and every field (but the exempt ones) is named by a condition.
    /// content-length-range is left to the file's bytes.
    func check(fields: [(name: String, value: String)], bucket: String, now: Timestamp) throws(S3Error) {
        guard now <= expiration else {
            throw S3Error("AccessDenied", status: 403,
                          "Invalid according to Policy: Policy expired: it was valid until \(SigV4Verifier.isoSeconds(expiration)); the server's time is \(SigV4Verifier.isoSeconds(now)).")
        }
        var values: [String: String] = [:]
        for field in fields { values[field.name.lowercased()] = field.value }
        for condition in conditions {
            guard let name = condition.field else { continue }
            let value = name == "bucket" ? bucket : values[name] ?? ""
            if !Self.holds(condition, value: value) {
                throw S3Error("AccessDenied", status: 403,
                              "Invalid according to Policy: Policy Condition failed: \(condition.text) (the form's \(name) is \"\(value.prefix(128))\").")
            }
        }
        let covered = Set(conditions.compactMap(\.field))
        var extra: [String] = []
        for field in fields {
            let name = field.name.lowercased()
            if Self.exemptFields.contains(name) || name.hasPrefix("x-ignore-") || covered.contains(name) { continue }
            if !extra.contains(field.name) { extra.append(field.name) }
        }
        if !extra.isEmpty {
            throw S3Error("AccessDenied", status: 403,
                          "Invalid according to Policy: Extra input fields: \(extra.map { String($0.prefix(64)) }.joined(separator: ", ")) (every form field but file, policy, x-amz-signature (or V2's AWSAccessKeyId and signature) and x-ignore-* must be named by a condition of the policy).")
        }
    }

    static func holds(_ condition: Condition, value: String) -> Bool {
        switch condition {
        case .equals(_, let expected): return value == expected
        case .startsWith(let field, let prefix):
            if prefix.isEmpty { return true }
            // S3: each type of a comma-separated Content-Type must start with the prefix.
            if field == "content-type" {
                return value.split(separator: ",", omittingEmptySubsequences: false)
                    .allSatisfy { ASCIIText.trimmed($0).utf8.starts(with: prefix.utf8) }
            }
            return value.utf8.starts(with: prefix.utf8)
        case .contentLengthRange: return true
        }
    }

    private static func invalid(_ detail: String) -> S3Error {
        S3Error("InvalidPolicyDocument", status: 400, "Invalid Policy: \(detail).")
    }
}
