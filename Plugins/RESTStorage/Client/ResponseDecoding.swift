import PlugboardAPI
import PlugboardHTTPClient
import PlugboardHTTPCodec
import PlugboardJSON

/// What a response should have held and what it held instead: becomes `storage.failed`.
struct UnexpectedResponse: Error, Sendable, Equatable {
    /// `the object info JSON of a PUT`, `an ETag header`, ...
    var expected: String
    var found: String
}

/// Reads the server's answers: object info from JSON or from GET/HEAD headers, listing
/// pages, error bodies. Nothing here traps on any input.
enum ResponseDecoding {
    /// The `error` object of an error response (the CLI's `--json` shape), when the body
    /// is one.
    struct ErrorBody: Sendable, Equatable {
        var code: String
        var message: String
        var detail: String?
        var hint: String?
    }

    static func errorBody(_ body: [UInt8]) -> ErrorBody? {
        guard let error = (try? json(body))?["error"], let code = stringValue(error["code"]),
              let message = stringValue(error["message"])
        else { return nil }
        return ErrorBody(code: code, message: message, detail: stringValue(error["detail"]), hint: stringValue(error["hint"]))
    }

    /// An object info JSON object (`plugboard storage head --json`'s shape). `contentType`
    /// and `metadata` may be `null` or missing: the remote storage does not know them (an S3
    /// listing behind it), which the entry carries on in ``ObjectInfo/unknown``.
    static func objectInfo(_ object: JSONValue, at path: String) throws(UnexpectedResponse) -> ObjectInfo {
        guard case .object = object.kind else {
            throw UnexpectedResponse(expected: "an object info JSON object at \(path)", found: kind(object))
        }
        let key = try string(object, "key", path)
        do {
            _ = try ObjectKey.validate(bytes: Array(key.utf8))
        } catch {
            throw UnexpectedResponse(expected: "a valid object key at \(path).key", found: error.message)
        }
        guard let sizeValue = object["size"], let size = integer(sizeValue), size >= 0 else {
            throw UnexpectedResponse(expected: "a size in bytes (an integer of 0 or more) at \(path).size",
                                     found: object["size"].map(kind) ?? "nothing")
        }
        let etag = try string(object, "etag", path)
        guard isETag(etag) else {
            throw UnexpectedResponse(expected: "an ETag of 32 lowercase hex digits at \(path).etag",
                                     found: RESTStorageText.quote(etag))
        }
        let modified = try string(object, "lastModified", path)
        guard let lastModified = Timestamp(iso8601: modified) else {
            throw UnexpectedResponse(expected: "an ISO 8601 timestamp at \(path).lastModified",
                                     found: RESTStorageText.quote(modified))
        }
        var unknown: ObjectInfo.Fields = [.contentType, .metadata]
        var contentType = ObjectContentType.defaultValue
        if let value = object["contentType"], !isNull(value) {
            guard let text = stringValue(value) else {
                throw UnexpectedResponse(expected: "a string at \(path).contentType", found: kind(value))
            }
            contentType = text
            unknown.remove(.contentType)
        }
        var metadata: [String: String] = [:]
        if let value = object["metadata"], !isNull(value) {
            unknown.remove(.metadata)
            guard case .object(let entries) = value.kind else {
                throw UnexpectedResponse(expected: "an object of strings at \(path).metadata", found: kind(value))
            }
            for entry in entries {
                guard let text = stringValue(entry.value) else {
                    throw UnexpectedResponse(expected: "a string at \(path).metadata.\(entry.key)", found: kind(entry.value))
                }
                metadata[entry.key] = text
            }
        }
        return ObjectInfo(key: key, size: size, etag: etag, contentType: contentType,
                          lastModified: lastModified, metadata: metadata, unknown: unknown)
    }

    /// A PUT's answer: the object info JSON.
    static func putInfo(_ body: [UInt8]) throws(UnexpectedResponse) -> ObjectInfo {
        try objectInfo(try document(body, "the object info JSON"), at: "the response")
    }

    /// A listing page: `{"objects": [...], "nextCursor": "..." | null}`.
    static func listing(_ body: [UInt8]) throws(UnexpectedResponse) -> ObjectListing {
        let root = try document(body, "a listing JSON object")
        guard case .object = root.kind else {
            throw UnexpectedResponse(expected: "a listing JSON object", found: kind(root))
        }
        guard case .array(let entries)? = root["objects"]?.kind else {
            throw UnexpectedResponse(expected: "an array at objects", found: root["objects"].map(kind) ?? "nothing")
        }
        var objects: [ObjectInfo] = []
        objects.reserveCapacity(entries.count)
        for (index, entry) in entries.enumerated() {
            objects.append(try objectInfo(entry, at: "objects[\(index)]"))
        }
        let cursor: String?
        switch root["nextCursor"]?.kind {
        case .string(let text)?: cursor = text
        case .null?: cursor = nil
        case _?: throw UnexpectedResponse(expected: "a string or null at nextCursor", found: root["nextCursor"].map(kind) ?? "nothing")
        case nil: throw UnexpectedResponse(expected: "a string or null at nextCursor", found: "nothing")
        }
        return ObjectListing(objects: objects, nextContinuationToken: cursor)
    }

    /// The object info a GET or HEAD carries in its headers. `size` is the body's size for
    /// a GET, `Content-Length` for a HEAD.
    static func headerInfo(_ response: HTTPResponse, key: String, size bodySize: Int?) throws(UnexpectedResponse) -> ObjectInfo {
        // The server names the object it answered: a proxy that decoded and normalized the
        // path (`a/../b` to `b`) would otherwise hand back another object, unnoticed.
        let named = response.header("x-plugboard-key")
        guard named == Endpoint.percentEncode(key) else {
            throw UnexpectedResponse(expected: "X-Plugboard-Key \(Endpoint.percentEncode(key)) (the key asked for; a proxy between here and the server may rewrite paths)",
                                     found: named.map { RESTStorageText.quote($0) } ?? "none")
        }
        guard let quotedETag = response.header("etag") else {
            throw UnexpectedResponse(expected: "an ETag header", found: "none")
        }
        let etag = quotedETag.count >= 2 && quotedETag.hasPrefix("\"") && quotedETag.hasSuffix("\"")
            ? String(quotedETag.dropFirst().dropLast()) : quotedETag
        guard isETag(etag) else {
            throw UnexpectedResponse(expected: "an ETag header of 32 lowercase hex digits in quotes",
                                     found: RESTStorageText.quote(quotedETag))
        }
        let length = response.header("content-length")
        let declared = length.flatMap { $0.utf8.allSatisfy { (0x30...0x39).contains($0) } ? Int($0) : nil }
        if length != nil && declared == nil {
            throw UnexpectedResponse(expected: "a Content-Length header of decimal digits", found: RESTStorageText.quote(length ?? ""))
        }
        let size: Int
        if let bodySize {
            if let declared, declared != bodySize {
                throw UnexpectedResponse(expected: "a body of \(declared) bytes (its Content-Length)", found: "\(bodySize) bytes")
            }
            size = bodySize
        } else {
            guard let declared else { throw UnexpectedResponse(expected: "a Content-Length header", found: "none") }
            size = declared
        }
        guard let contentType = response.header("content-type") else {
            throw UnexpectedResponse(expected: "a Content-Type header", found: "none")
        }
        guard let modified = response.header("x-plugboard-last-modified") else {
            throw UnexpectedResponse(expected: "an X-Plugboard-Last-Modified header", found: "none")
        }
        guard let lastModified = Timestamp(iso8601: modified) else {
            throw UnexpectedResponse(expected: "an ISO 8601 timestamp in X-Plugboard-Last-Modified",
                                     found: RESTStorageText.quote(modified))
        }
        var metadata: [String: String] = [:]
        let prefix = MetadataHeaders.prefix
        for (name, value) in response.headers where name.hasPrefix(prefix) && name.utf8.count > prefix.utf8.count {
            metadata[String(name.dropFirst(prefix.count))] = value.trimmingOWS()
        }
        return ObjectInfo(key: key, size: size, etag: etag, contentType: contentType,
                          lastModified: lastModified, metadata: metadata)
    }

    // MARK: - JSON helpers

    /// The largest answer read: a listing page of 1,000 entries with their metadata is far
    /// below it; the parser's own default (1 MiB, sized for a manifest) is not.
    static let maxDocumentBytes = 64 << 20

    private static func json(_ body: [UInt8]) throws(PlugboardError) -> JSONValue {
        try JSONParser.parse(body, source: "the server's answer", limits: .init(maxBytes: maxDocumentBytes, maxDepth: 64))
    }

    private static func document(_ body: [UInt8], _ expected: String) throws(UnexpectedResponse) -> JSONValue {
        do {
            return try json(body)
        } catch {
            // The parser's message says where and why (a duplicate key, a trailing comma).
            throw UnexpectedResponse(expected: expected,
                                     found: "\(RESTStorageText.describeBody(body)), which is not JSON (\(error.message))")
        }
    }

    private static func string(_ object: JSONValue, _ name: String, _ path: String) throws(UnexpectedResponse) -> String {
        guard let value = object[name] else {
            throw UnexpectedResponse(expected: "a string at \(path).\(name)", found: "nothing")
        }
        guard let text = stringValue(value) else {
            throw UnexpectedResponse(expected: "a string at \(path).\(name)", found: kind(value))
        }
        return text
    }

    private static func stringValue(_ value: JSONValue?) -> String? {
        guard case .string(let text)? = value?.kind else { return nil }
        return text
    }

    private static func isNull(_ value: JSONValue) -> Bool {
        if case .null = value.kind { return true }
        return false
    }

    /// An integral JSON number that fits an `Int`; `5.0` counts too, whichever way the server
    /// writes its numbers.
    private static func integer(_ value: JSONValue) -> Int? {
        switch value.kind {
        case .integer(let integer): return Int(exactly: integer)
        case .number(let double):
            guard double.rounded() == double, abs(double) < 9.0e15 else { return nil }
            return Int(double)
        default: return nil
        }
    }

    static func isETag(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `a string`, `a number`, `null`, ... for messages.
    static func kind(_ value: JSONValue) -> String {
        switch value.kind {
        case .string(let text): return "the string \(RESTStorageText.quote(text, maxCharacters: 40))"
        case .integer(let integer): return "the number \(integer)"
        case .number(let double): return "the number \(double)"
        case .bool(let bool): return "the boolean \(bool)"
        case .null, .array, .object: return value.kindDescription
        }
    }
}

/// The `X-Plugboard-Meta-<name>` headers that carry user metadata.
enum MetadataHeaders {
    static let prefix = "x-plugboard-meta-"

    static func fields(_ metadata: [String: String]) -> [(name: String, value: String)] {
        metadata.sorted { $0.key < $1.key }.map { (name: "X-Plugboard-Meta-" + $0.key, value: $0.value) }
    }
}
