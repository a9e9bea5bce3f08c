import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto

/// The final object's body at completion: each part's `get` stream in turn, never more
/// than one chunk of one part in memory. Checks each part against what the completion
/// validated (its ETag and size), so that a part replaced in the meantime fails the put
/// (which then stores nothing) instead of slipping into the object.
///
/// `@unchecked Sendable`: an ``ObjectBody`` is read by one task, one call after another
/// (its contract), so `current`, `remaining` and `left` are never touched by two calls at once.
final class PartConcatenation: @unchecked Sendable {
    struct Part: Sendable {
        var number: Int
        var storageKey: String
        var etag: String
        var size: Int
    }

    private let storage: any ObjectStorage
    private var remaining: ArraySlice<Part>
    private var current: ObjectBody.Iterator?
    private var currentPart: Part?
    private var left = 0

    init(storage: any ObjectStorage, parts: [Part]) {
        self.storage = storage
        self.remaining = parts[...]
    }

    var body: ObjectBody {
        ObjectBody(length: remaining.reduce(0) { $0 + $1.size }) { [self] in try await self.next() }
    }

    func next() async throws -> [UInt8]? {
        while true {
            if var iterator = current, let part = currentPart {
                let chunk = try await iterator.next()
                current = iterator
                if let chunk {
                    if chunk.isEmpty { continue }
                    left -= chunk.count
                    guard left >= 0 else {
                        throw S3Error.invalidPart("Part \(part.number) changed while the upload was being completed: expected \(part.size) bytes, found more. Upload it again and complete again.")
                    }
                    return chunk
                }
                guard left == 0 else {
                    throw S3Error.invalidPart("Part \(part.number) changed while the upload was being completed: expected \(part.size) bytes, found \(part.size - left). Upload it again and complete again.")
                }
                current = nil
                currentPart = nil
            }
            guard let part = remaining.popFirst() else { return nil }
            let stream: ObjectStream
            do {
                stream = try await storage.get(part.storageKey, range: nil)
            } catch let error as PlugboardError where error.code == .storageNotFound {
                throw S3Error.invalidPart("Part \(part.number) was removed while the upload was being completed: expected it with ETag \"\(part.etag)\", found none.")
            }
            guard stream.info.etag == part.etag, stream.info.size == part.size else {
                throw S3Error.invalidPart("Part \(part.number) changed while the upload was being completed: expected ETag \"\(part.etag)\" and \(part.size) bytes, found \"\(stream.info.etag)\" and \(stream.info.size) bytes. Complete again with the new ETag.")
            }
            current = stream.body.makeAsyncIterator()
            currentPart = part
            left = part.size
        }
    }
}
