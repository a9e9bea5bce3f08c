import PlugboardAPI
import PlugboardHTTP

/// Small pieces the operations share: XML answers, request documents read whole, storage
/// calls run side by side, the missing-object answer.
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

    /// After a storage `storage.not_found` for an object of `bucket`: `NoSuchBucket` when
    /// the bucket is gone, else `NoSuchKey` naming `key`.
    static func missingObject(_ context: S3Context, bucket: String, key: String) async throws -> S3Error {
        try await S3Objects.requireBucket(context, bucket)
        return .noSuchKey(key)
    }
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
