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
                // The decoder has held the body to --max-body-bytes already.
                let data = try await request.body.collect(upTo: .max)
                let info = try await backend.put(key, data: data, contentType: contentType, metadata: metadata)
                return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")] + validators(info),
                                    body: Array((Reports.object(info).render(pretty: false) + "\n").utf8))
            case "GET":
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
        } catch {
            return ErrorResponses.response(thrown: error)
        }
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
