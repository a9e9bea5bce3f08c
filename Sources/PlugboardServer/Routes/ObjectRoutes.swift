import PlugboardAPI
import PlugboardBytes
import PlugboardConcurrency
import PlugboardHTTP
import PlugboardHost
import PlugboardJSON

/// `/v1/objects/{key}` and `/v1/objects`: the bound `ObjectStorage` over HTTP.
enum ObjectRoutes {
    static let metaPrefix = "x-plugboard-meta-"

    /// Answers of up to this many bytes are read whole and sent in one piece: streaming
    /// costs a hand-over per chunk, which only pays off for large bodies.
    static let wholeAnswerBytes = 256 << 10

    /// The object's route, on a task: PUT, GET, HEAD or DELETE of the request's key.
    static func object(_ object: ObjectRequest) async -> HTTPResponse {
        let (key, backend) = (object.key, object.storage)
        do {
            switch object.request.head.method {
            case "PUT": return try await put(object)
            case "GET": return try await get(object)
            case "HEAD": return head(try await backend.head(key), object.headers)
            default:
                try await backend.delete(key)
                return HTTPResponse(status: 204)
            }
        } catch let error as HTTPError {
            return object.errors.response(error)
        } catch {
            return object.errors.response(thrown: error)
        }
    }

    /// The body goes to the storage as it arrives. The write's conditions are checked by
    /// the storage in the same step as the write (``WriteCondition``): `If-None-Match: *`
    /// and a single `If-Match` ETag directly; any other condition (an ETag list,
    /// `If-Unmodified-Since`) is evaluated against the object found now, and the write
    /// then made conditional on that very object still being there, so it stays atomic.
    static func put(_ object: ObjectRequest) async throws -> HTTPResponse {
        let (key, request, backend) = (object.key, object.request, object.storage)
        let (contentType, metadata) = try putArguments(request.headers)
        let preconditions = Preconditions(request.headers)
        let condition: WriteCondition
        if let direct = preconditions.directWriteCondition {
            condition = direct
        } else {
            let current: ObjectInfo?
            do {
                current = try await backend.head(key)
            } catch let error as PlugboardError where error.code == .storageNotFound {
                current = nil
            }
            if let refusal = preconditions.refusal(for: current, reading: false) { return refusal }
            condition = current.map { .matches(etag: $0.etag) } ?? .absent
        }
        let info = try await backend.put(key, body: ObjectBody(length: request.body.length, request.body),
                                         contentType: contentType, metadata: metadata, condition: condition)
        return HTTPResponse(status: 200, headers: [("Content-Type", "application/json")] + validators(info),
                            body: Array((Reports.object(info).render(pretty: false) + "\n").utf8))
    }

    /// GET: conditions first (RFC 9110 section 13.2.2), then one range (206, or 416 with
    /// `Content-Range: bytes */size`); several ranges or an invalid `Range` get the whole
    /// object, as S3 answers. Large bodies stream from the storage as the client reads.
    static func get(_ object: ObjectRequest) async throws -> HTTPResponse {
        let (key, backend) = (object.key, object.storage)
        let preconditions = Preconditions(object.headers)
        let range = requestedRange(object.headers)
        let stream: ObjectStream
        do {
            stream = try await backend.get(key, range: range)
        } catch let error as PlugboardError where error.code == .storageRangeNotSatisfiable {
            let info = try await backend.head(key)
            if let refusal = preconditions.refusal(for: info, reading: true) { return refusal }
            return object.errors.response(error, status: 416, headers: [("Content-Range", "bytes */\(info.size)")])
        }
        // A refused read drops the stream unread; the storage's open file goes with it.
        if let refusal = preconditions.refusal(for: stream.info, reading: true) { return refusal }
        let (status, headers) = readHead(stream.info, stream.range)
        let length = stream.body.length ?? stream.range?.count ?? stream.info.size
        if length <= wholeAnswerBytes {
            return HTTPResponse(status: status, headers: headers, body: try await stream.body.collect(upTo: length))
        }
        return HTTPResponse(status: status, headers: headers, stream: ResponseStream(length: length, body: stream.body))
    }

    /// GET answered on the caller's thread, when the storage has the bytes at once
    /// (``ObjectStorage/getWithoutWaiting(_:range:)``): the same answers as ``get(_:)``.
    /// Nil when the storage would wait, and for an unsatisfiable range, whose 416 names
    /// the object's size and so needs a `head` that may wait.
    static func getWithoutWaiting(_ object: ObjectRequest) -> HTTPResponse? {
        let ready: ReadyObject
        do throws(PlugboardError) {
            guard let found = try object.storage.getWithoutWaiting(object.key, range: requestedRange(object.headers)) else {
                return nil
            }
            ready = found
        } catch {
            if error.code == .storageRangeNotSatisfiable { return nil }
            return object.errors.response(error)
        }
        if let refusal = Preconditions(object.headers).refusal(for: ready.info, reading: true) { return refusal }
        let (status, headers) = readHead(ready.info, ready.range)
        return HTTPResponse(status: status, headers: headers, body: ready.bytes)
    }

    /// HEAD answered on the caller's thread, when the storage has the object at once: its
    /// first byte read without waiting (``ObjectStorage/getWithoutWaiting(_:range:)``)
    /// brings the object's whole `ObjectInfo`, which is all a HEAD answers with; the same
    /// answers as the task's. Nil when the storage would wait, and for an empty object,
    /// which has no first byte (the task's `head` answers it).
    static func headWithoutWaiting(_ object: ObjectRequest) -> HTTPResponse? {
        let info: ObjectInfo
        do throws(PlugboardError) {
            guard let found = try object.storage.getWithoutWaiting(object.key, range: .closed(first: 0, last: 0)) else {
                return nil
            }
            info = found.info
        } catch {
            if error.code == .storageRangeNotSatisfiable { return nil }
            return object.errors.response(error)
        }
        return head(info, object.headers)
    }

    /// HEAD's answer for the object `info` describes: GET's headers and conditions, no body.
    private static func head(_ info: ObjectInfo, _ headers: HTTPHeaders) -> HTTPResponse {
        if let refusal = Preconditions(headers).refusal(for: info, reading: true) { return refusal }
        return HTTPResponse(status: 200, headers: objectHeaders(info), headLength: info.size)
    }

    /// The one range a GET asks for; several ranges, or an invalid `Range`, ask for the
    /// whole object, as S3 answers.
    private static func requestedRange(_ headers: HTTPHeaders) -> ByteRange? {
        guard headers.count(of: "range") == 1, let text = headers["range"],
              case .single(let one) = ByteRange.parse(header: text) else { return nil }
        return one
    }

    /// A read's status and headers: 206 with `Content-Range` for a part of the object.
    private static func readHead(_ info: ObjectInfo, _ offsets: Range<Int>?) -> (Int, [(String, String)]) {
        var headers = objectHeaders(info)
        guard let offsets, !offsets.isEmpty else { return (200, headers) }
        headers.append(("Content-Range", "bytes \(offsets.lowerBound)-\(offsets.upperBound - 1)/\(info.size)"))
        return (206, headers)
    }

    /// The key: percent-decoded bytes, then the storage's key rules.
    static func decodeKey(_ encoded: Substring) throws(HTTPError) -> String {
        let bytes = try PercentDecoding.decode(encoded)
        do throws(PlugboardError) {
            // The usual key, ASCII, is made here and then held to the key rules as a
            // string; ObjectKey's check of bytes is generic code across the API library
            // (costly on every GET: docs/BENCHMARKS.md, "The request path trimmed past
            // 0.8×"), kept for every other key.
            if let key = bytes.withUnsafeBufferPointer(ASCIIText.string) {
                try ObjectKey.validate(key)
                return key
            }
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

    /// ETag (quoted), Last-Modified and the millisecond timestamp. `Accept-Ranges` tells
    /// clients that a `Range` is honoured.
    static func validators(_ info: ObjectInfo) -> [(String, String)] {
        var headers: [(String, String)] = []
        appendValidators(info, to: &headers)
        return headers
    }

    static func appendValidators(_ info: ObjectInfo, to headers: inout [(String, String)]) {
        let (http, iso) = lastFormatted.text(of: info.lastModified)
        headers.append(("ETag", quoted(info.etag)))
        headers.append(("Last-Modified", http))
        headers.append(("X-Plugboard-Last-Modified", iso))
    }

    static let lastFormatted = TimestampTexts()

    /// `"etag"`, written into a string of its size (interpolation grew one piece by piece).
    static func quoted(_ etag: String) -> String {
        var etag = etag
        return etag.withUTF8 { raw in
            String(unsafeUninitializedCapacity: raw.count + 2) { out in
                out[0] = UInt8(ascii: "\"")
                _ = UnsafeMutableBufferPointer(rebasing: out[1...]).initialize(from: raw)
                out[raw.count + 1] = UInt8(ascii: "\"")
                return raw.count + 2
            }
        }
    }

    /// What GET and HEAD of an object answer with, besides the length. `X-Plugboard-Key`
    /// names the object answered, so a client can tell when a proxy rewrote the path
    /// (`a/../b` folded to `b`) and it got another object than it asked for.
    static func objectHeaders(_ info: ObjectInfo) -> [(String, String)] {
        // One array, sized once (with room for Content-Range and the generation): these
        // are made for every object answer.
        var headers: [(String, String)] = []
        headers.reserveCapacity(8 + info.metadata.count)
        headers.append(("Content-Type", info.contentType))
        headers.append(("X-Plugboard-Key", PercentEncoding.encode(info.key, encodingDots: true)))
        headers.append(("Accept-Ranges", "bytes"))
        appendValidators(info, to: &headers)
        if !info.metadata.isEmpty {
            for (name, value) in info.metadata.sorted(by: { $0.key < $1.key }) {
                headers.append(("X-Plugboard-Meta-" + name, value))
            }
        }
        return headers
    }

    /// `GET /v1/objects?prefix=&limit=&cursor=`.
    static func listing(query: Substring?, storage: Result<any ObjectStorage, PlugboardError>,
                        errors: ErrorResponses) async -> HTTPResponse {
        let backend: any ObjectStorage
        switch storage {
        case .success(let s): backend = s
        case .failure(let e): return errors.response(e)
        }
        let items: [(name: String, value: String)]
        do throws(HTTPError) {
            items = try PercentDecoding.queryItems(query)
        } catch {
            return errors.response(error)
        }
        func first(_ name: String) -> String? { items.first { $0.name == name }?.value }
        var limit = 1000
        if let text = first("limit") {
            guard let n = Int(text), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 || $0 == UInt8(ascii: "-") }) else {
                return errors.response(PlugboardError(.storageInvalidArgument, "invalid limit \"\(text.prefix(40))\"",
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
            return errors.response(thrown: error)
        }
    }
}
