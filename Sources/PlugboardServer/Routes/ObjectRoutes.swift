import PlugboardAPI
import PlugboardHTTP
import PlugboardHost

/// `/v1/objects/{key}` and `/v1/objects`: the bound `ObjectStorage` over HTTP.
enum ObjectRoutes {
    static let metaPrefix = "x-plugboard-meta-"

    static func object(encodedKey: Substring, request: HTTPRequest,
                       storage: Result<any ObjectStorage, PlugboardError>) async -> HTTPResponse {
        let key: String
        let backend: any ObjectStorage
        do throws(HTTPError) {
            key = try decodeKey(encodedKey)
        } catch {
            return ErrorResponses.response(error)
        }
        switch storage {
        case .success(let s): backend = s
        case .failure(let e): return ErrorResponses.response(e)
        }
        do {
            switch request.method {
            case "PUT":
                let (contentType, metadata) = try putArguments(request.headers)
                let condition = writeCondition(request.headers)
                let info: ObjectInfo
                if condition == .none {
                    info = try await backend.put(key, data: request.body, contentType: contentType, metadata: metadata)
                } else {
                    info = try await backend.put(key, body: ObjectBody(request.body), contentType: contentType,
                                                 metadata: metadata, condition: condition)
                }
                return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")] + validators(info),
                                    body: Array((Reports.object(info).render(pretty: false) + "\n").utf8))
            case "GET":
                let ranges = request.headers.values("range")
                if ranges.count == 1, case .single(let range) = ByteRange.parse(header: ranges[0]) {
                    return try await rangedGet(key, range, backend)
                }
                let object = try await backend.get(key)
                return HTTPResponse(status: 200, headers: objectHeaders(object.info), body: object.data)
            case "HEAD":
                let info = try await backend.head(key)
                return HTTPResponse(status: 200, headers: objectHeaders(info), headLength: info.size)
            default:
                try await backend.delete(key)
                return HTTPResponse(status: 204)
            }
        } catch let error as HTTPError {
            return ErrorResponses.response(error)
        } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
            return ErrorResponses.response(error, status: 412)
        } catch let error as PlugboardError where error.code == .storageUnsupported {
            return ErrorResponses.response(error, status: 501)
        } catch {
            return ErrorResponses.response(thrown: error)
        }
    }

    /// `If-None-Match: *` (create only) or `If-Match: "etag"` (replace that version) of a
    /// PUT; other forms of the headers are not conditions the storage can check, and are
    /// ignored.
    static func writeCondition(_ headers: HTTPHeaders) -> WriteCondition {
        let noneMatch = headers.values("if-none-match"), match = headers.values("if-match")
        if noneMatch.count == 1, trimmed(noneMatch[0]) == "*" { return .absent }
        if match.count == 1 {
            var tag = trimmed(match[0])
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag.count >= 2, tag.first == "\"", tag.last == "\"" { tag = tag.dropFirst().dropLast() }
            if !tag.isEmpty, tag != "*", !tag.contains(",") { return .matches(etag: String(tag)) }
        }
        return .none
    }

    /// `text` without the spaces and tabs around it.
    private static func trimmed(_ text: String) -> Substring {
        var view = Substring(text)
        while let c = view.first, c == " " || c == "\t" { view.removeFirst() }
        while let c = view.last, c == " " || c == "\t" { view.removeLast() }
        return view
    }

    /// GET with one satisfiable range: 206 with `Content-Range`; 416 with
    /// `Content-Range: bytes */size` when it selects nothing. A suffix of an empty object
    /// selects zero bytes, which no Content-Range can name: the whole, empty object (200).
    static func rangedGet(_ key: String, _ range: ByteRange, _ backend: any ObjectStorage) async throws -> HTTPResponse {
        let stream: ObjectStream
        do {
            stream = try await backend.get(key, range: range)
        } catch let error as PlugboardError where error.code == .storageRangeNotSatisfiable {
            let size = try? await backend.head(key).size
            return ErrorResponses.response(error, status: 416, headers: size.map { [("Content-Range", "bytes */\($0)")] } ?? [])
        }
        let bytes = try await stream.body.collect(upTo: max(stream.info.size, 0))
        guard let offsets = stream.range, !offsets.isEmpty else {
            return HTTPResponse(status: 200, headers: objectHeaders(stream.info), body: bytes)
        }
        return HTTPResponse(status: 206,
                            headers: objectHeaders(stream.info)
                                + [("Content-Range", "bytes \(offsets.lowerBound)-\(offsets.upperBound - 1)/\(stream.info.size)")],
                            body: bytes)
    }

    /// The key: percent-decoded bytes, then the storage's key rules.
    static func decodeKey(_ encoded: Substring) throws(HTTPError) -> String {
        let bytes = try PercentDecoding.decode(encoded)
        do throws(PlugboardError) {
            return try ObjectKey.validate(bytes: bytes)
        } catch {
            throw HTTPError(400, error)
        }
    }

    static func putArguments(_ headers: HTTPHeaders) throws(HTTPError) -> (String?, [String: String]) {
        let types = headers.values("content-type")
        guard types.count <= 1 else {
            throw HTTPError.badRequest("more than one Content-Type header", hint: "Send one Content-Type.")
        }
        var metadata: [String: String] = [:]
        for field in headers.fields where field.name.hasPrefix(metaPrefix) {
            let name = String(field.name.dropFirst(metaPrefix.count))
            guard metadata.updateValue(field.value, forKey: name) == nil else {
                throw HTTPError(400, PlugboardError(.storageInvalidMetadata, "metadata key \"\(name)\" given twice",
                                                    hint: "Send one X-Plugboard-Meta-\(name) header."))
            }
        }
        return (types.first, metadata)
    }

    /// ETag (quoted), Last-Modified and the millisecond timestamp.
    static func validators(_ info: ObjectInfo) -> [(String, String)] {
        [("ETag", "\"\(info.etag)\""), ("Last-Modified", info.lastModified.httpDate),
         ("X-Plugboard-Last-Modified", info.lastModified.iso8601)]
    }

    /// What GET and HEAD of an object answer with, besides the length. `X-Plugboard-Key`
    /// names the object answered, so a client can tell when a proxy rewrote the path
    /// (`a/../b` folded to `b`) and it got another object than it asked for.
    static func objectHeaders(_ info: ObjectInfo) -> [(String, String)] {
        [("Content-Type", info.contentType), ("X-Plugboard-Key", PercentEncoding.encode(info.key))] + validators(info)
            + info.metadata.sorted { $0.key < $1.key }.map { ("X-Plugboard-Meta-\($0.key)", $0.value) }
    }

    /// `GET /v1/objects?prefix=&limit=&cursor=`.
    static func listing(query: Substring?, storage: Result<any ObjectStorage, PlugboardError>) async -> HTTPResponse {
        let backend: any ObjectStorage
        switch storage {
        case .success(let s): backend = s
        case .failure(let e): return ErrorResponses.response(e)
        }
        let items: [(name: String, value: String)]
        do throws(HTTPError) {
            items = try PercentDecoding.queryItems(query)
        } catch {
            return ErrorResponses.response(error)
        }
        func first(_ name: String) -> String? { items.first { $0.name == name }?.value }
        var limit = 1000
        if let text = first("limit") {
            guard let n = Int(text), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 || $0 == UInt8(ascii: "-") }) else {
                return ErrorResponses.response(PlugboardError(.storageInvalidArgument, "invalid limit \"\(text.prefix(40))\"",
                    detail: "Expected a decimal integer from 1 to 1000.", hint: "Write limit=100, or leave it out for 1000."))
            }
            limit = n
        }
        do {
            let page = try await backend.list(prefix: first("prefix") ?? "", limit: limit, continuationToken: first("cursor"))
            let body = JSONOutput.object([("objects", .array(page.objects.map { Reports.object($0) })),
                                          ("nextCursor", .string(page.nextContinuationToken))])
            return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")],
                                body: Array((body.render(pretty: false) + "\n").utf8))
        } catch {
            return ErrorResponses.response(thrown: error)
        }
    }
}
