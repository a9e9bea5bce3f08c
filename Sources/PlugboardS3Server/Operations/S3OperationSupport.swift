import PlugboardAPI
import PlugboardHTTP

/// Small pieces the operations share: XML answers, S3's URL encoding of listings,
/// base64url for the front end's own tokens, percent-decoding that throws S3 errors.
enum S3OperationSupport {
    /// Object bodies up to this many bytes are read whole and answered in one piece;
    /// larger ones stream (as PlugboardServer's ObjectRoutes does).
    static let wholeAnswerBytes = 256 << 10

    /// Request documents (`<Delete>`, `<CreateBucketConfiguration>`) are read whole, up
    /// to this: 1,000 keys of 1,024 bytes each with their XML fit well inside.
    static let maxDocumentBytes = 4 << 20

    /// A 200 (or `status`) with an XML document.
    static func xml(_ body: [UInt8], status: Int = 200, headers: [(String, String)] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/xml")] + headers, body: body)
    }

    /// The request's document, read whole (at most ``maxDocumentBytes``).
    static func document(_ request: S3Request, what: String) async throws -> [UInt8] {
        do {
            return try await request.body.collect(upTo: maxDocumentBytes)
        } catch let error as PlugboardError where error.code == .storageInvalidArgument {
            throw S3Error.malformedXML("The \(what) document is not one this endpoint reads: expected at most \(maxDocumentBytes) bytes, found \(error.detail ?? error.message).")
        }
    }

    /// `transform` of each item, in order, with at most `width` running at once: for the
    /// storage calls of one answer (DeleteObjects' deletes, a listing's heads), which a
    /// remote backend would otherwise make one round trip after another.
    static func mapConcurrently<Item: Sendable, Result: Sendable>(
        _ items: [Item], width: Int = 16, _ transform: @escaping @Sendable (Item) async throws -> Result
    ) async throws -> [Result] {
        if items.count <= 1 { return try await items.asyncMap(transform) }
        return try await withThrowingTaskGroup(of: (Int, Result).self) { group in
            var results = [Result?](repeating: nil, count: items.count)
            var next = 0
            while next < items.count, next < width {
                let index = next, item = items[index]
                group.addTask { (index, try await transform(item)) }
                next += 1
            }
            while let (index, result) = try await group.next() {
                results[index] = result
                if next < items.count {
                    let index = next, item = items[index]
                    group.addTask { (index, try await transform(item)) }
                    next += 1
                }
            }
            return results.map { $0! }
        }
    }

    /// Spaces and tabs off both ends.
    static func trimmed(_ text: Substring) -> Substring {
        var view = text
        while let c = view.first, c == " " || c == "\t" { view.removeFirst() }
        while let c = view.last, c == " " || c == "\t" { view.removeLast() }
        return view
    }

    /// After a storage `storage.not_found` for an object of `bucket`: `NoSuchBucket` when
    /// the bucket is gone, else `NoSuchKey` naming `key`.
    static func missingObject(_ context: S3Context, bucket: String, key: String) async throws -> S3Error {
        try await S3Objects.requireBucket(context, bucket)
        return .noSuchKey(key)
    }

    // MARK: URL encoding (encoding-type=url)

    /// S3's `encoding-type=url` form of a key or prefix: unreserved characters and `/`
    /// as they are, space as `+`, every other byte `%XX` (upper-case hex), which the
    /// SDKs decode with form decoding (`unquote_plus`, `QueryUnescape`, `URLDecoder`).
    static func urlEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(b)
            case UInt8(ascii: " "):
                out.append(UInt8(ascii: "+"))
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0x0F)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `%XX` decoded (`+` stays a plus: S3 copy sources are path-encoded); nil for a
    /// malformed escape or bytes that are not UTF-8.
    static func percentDecoded(_ text: Substring) -> String? {
        var out: [UInt8] = []
        let bytes = Array(text.utf8)
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%") {
                guard i + 2 < bytes.count, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) else { return nil }
                out.append(hi << 4 | lo)
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    // MARK: base64url, unpadded (for the front end's listing tokens)

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i], b1: UInt8? = i + 1 < bytes.count ? bytes[i + 1] : nil, b2: UInt8? = i + 2 < bytes.count ? bytes[i + 2] : nil
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | (b1 ?? 0) >> 4)])
            if let b1 { out.append(alphabet[Int((b1 & 0x0F) << 2 | (b2 ?? 0) >> 6)]) }
            if let b2 { out.append(alphabet[Int(b2 & 0x3F)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of canonical unpadded base64url, nil for anything else.
    static func base64URLDecoded(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        for c in text.utf8 {
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): values.append(c - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): values.append(c - UInt8(ascii: "a") + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): values.append(c - UInt8(ascii: "0") + 52)
            case UInt8(ascii: "-"): values.append(62)
            case UInt8(ascii: "_"): values.append(63)
            default: return nil
            }
        }
        if values.count % 4 == 1 { return nil }
        var out: [UInt8] = []
        var i = 0
        while i < values.count {
            let remaining = values.count - i
            let v0 = values[i], v1 = values[i + 1]
            out.append(v0 << 2 | v1 >> 4)
            if remaining == 2 {
                if v1 & 0x0F != 0 { return nil }
                break
            }
            let v2 = values[i + 2]
            out.append((v1 & 0x0F) << 4 | v2 >> 2)
            if remaining == 3 {
                if v2 & 0x03 != 0 { return nil }
                break
            }
            out.append((v2 & 0x03) << 6 | values[i + 3])
            i += 4
        }
        return out
    }
}

/// A storage body handed to the HTTP writer, which calls `next` from one task, one call
/// after another.
///
/// `@unchecked Sendable`: `iterator` is used by the one task writing the answer, never by
/// two calls at once (the writer awaits each chunk before it asks for the next).
final class S3BodyChunks: @unchecked Sendable {
    private var iterator: ObjectBody.Iterator

    init(_ body: ObjectBody) { iterator = body.makeAsyncIterator() }

    func next() async throws -> [UInt8]? { try await iterator.next() }
}

extension Array {
    /// `transform` of each element, one after another.
    func asyncMap<Result>(_ transform: (Element) async throws -> Result) async rethrows -> [Result] {
        var results: [Result] = []
        results.reserveCapacity(count)
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
