import PlugboardAPI

/// A browser upload's form, read from the request body as it arrives: the fields before
/// the file whole (they are small and bounded, as S3 bounds them), then the file's content
/// as an ``ObjectBody`` that streams to the storage and ends at the file part's delimiter.
/// S3 ignores what follows the file; ``discardRest(upTo:)`` reads it away.
///
/// ```swift
/// let reader = try MultipartFormReader(request.body, boundary: boundary)
/// let form = try await reader.fields()          // up to the part named "file"
/// try await storage.put(key, body: reader.fileContent(), ...)
/// ```
///
/// `@unchecked Sendable`: a reader belongs to one request and is used from its one task,
/// one call after another (the ObjectBody contract), first through ``fields()``, then
/// through the body of ``fileContent()``.
final class MultipartFormReader: @unchecked Sendable {
    /// S3's bounds on what precedes the file: it refuses a form whose fields before the
    /// file pass 20 KB; here each field may have 20 KiB, all of them 64 KiB together.
    struct Limits: Sendable {
        var maxFieldBytes = 20 << 10
        var maxFormBytes = 64 << 10
        var maxFields = 64
    }

    struct Field: Sendable, Equatable {
        var name: String
        var value: String
    }

    /// The file part's head, when the form has one.
    struct FilePart: Sendable, Equatable {
        var filename: String?
        var contentType: String?
    }

    struct Form: Sendable {
        /// The fields before the file, in order, names as sent.
        var fields: [Field]
        var file: FilePart?
    }

    /// The name of the part whose content is the object (S3 reads it without case).
    static let fileFieldName = "file"

    private var iterator: ObjectBody.Iterator
    private var parser: MultipartParser
    private let limits: Limits
    private var events: [MultipartParser.Event] = []
    private var nextEvent = 0
    private var bodyEnded = false
    private var fileEnded = false

    init(_ body: ObjectBody, boundary: String, limits: Limits = Limits()) throws(S3Error) {
        iterator = body.makeAsyncIterator()
        parser = try MultipartParser(boundary: boundary)
        self.limits = limits
    }

    /// The `boundary` of a `multipart/form-data` Content-Type; nil for any other type.
    static func boundary(contentType: String) -> String? {
        let (type, parameters) = MultipartPartHeaders.parameters(contentType)
        guard type.lowercased() == "multipart/form-data" else { return nil }
        return parameters.first { $0.0 == "boundary" }?.1
    }

    /// Reads the parts up to the file's head (or the end of the form, when it has no file).
    func fields() async throws -> Form {
        var fields: [Field] = []
        var formBytes = 0
        var current: (name: String, value: [UInt8])?
        while let event = try await nextEventOfBody() {
            switch event {
            case .partBegan(let headers):
                if headers.name.lowercased() == Self.fileFieldName {
                    return Form(fields: fields, file: FilePart(filename: headers.filename, contentType: headers.contentType))
                }
                guard fields.count < limits.maxFields else {
                    throw Self.tooLarge("expected at most \(limits.maxFields) fields before the file, found more")
                }
                formBytes += headers.name.utf8.count
                current = (headers.name, [])
            case .content(let bytes):
                guard var field = current else { continue }
                formBytes += bytes.count
                guard field.value.count + bytes.count <= limits.maxFieldBytes else {
                    throw Self.tooLarge("expected the field \(field.name.prefix(64)) to have at most \(limits.maxFieldBytes) bytes, found more")
                }
                guard formBytes <= limits.maxFormBytes else {
                    throw Self.tooLarge("expected the fields before the file to have at most \(limits.maxFormBytes) bytes together, found more")
                }
                // Taken out and put back, so that the value is appended to in place.
                current = nil
                field.value += bytes
                current = field
            case .partEnded:
                guard let field = current else { continue }
                current = nil
                guard let value = String(validating: field.value, as: UTF8.self) else {
                    throw S3Error.invalidArgument("The form field \(field.name.prefix(64)) must be UTF-8 text: found other bytes.",
                                                  name: String(field.name.prefix(64)))
                }
                fields.append(Field(name: field.name, value: value))
            }
        }
        return Form(fields: fields, file: nil)
    }

    /// The file's content, from where ``fields()`` stopped to the file part's end; its
    /// length is unknown until then. A body that ends before the part does throws (so the
    /// storage keeps nothing) instead of ending.
    func fileContent() -> ObjectBody {
        ObjectBody(length: nil) { try await self.nextFileChunk() }
    }

    /// Reads what follows the file, at most `limit` bytes, so that the connection can
    /// serve its next request; S3 ignores those fields, and so does this reader.
    func discardRest(upTo limit: Int) async {
        var read = 0
        while !bodyEnded, read <= limit, let chunk = try? await iterator.next() {
            read += chunk.count
        }
    }

    // MARK: Pieces

    private func nextFileChunk() async throws -> [UInt8]? {
        if fileEnded { return nil }
        while let event = try await nextEventOfBody() {
            switch event {
            case .content(let bytes): return bytes
            case .partEnded:
                fileEnded = true
                return nil
            case .partBegan:
                // A part begins only after the current one ended.
                continue
            }
        }
        throw MultipartParser.malformed("expected the file part to end with a boundary line, found the end of the body")
    }

    /// The next event, reading the body as far as it takes; nil at the end of the form
    /// (the close delimiter, or the body's end, which must follow one).
    private func nextEventOfBody() async throws -> MultipartParser.Event? {
        while nextEvent == events.count {
            events.removeAll(keepingCapacity: true)
            nextEvent = 0
            if parser.isComplete { return nil }
            guard let chunk = try await iterator.next() else {
                bodyEnded = true
                try parser.finish()
                return nil
            }
            events = try parser.feed(chunk)
        }
        defer { nextEvent += 1 }
        return events[nextEvent]
    }

    private static func tooLarge(_ detail: String) -> S3Error {
        S3Error("MaxPostPreDataLengthExceededError", status: 400,
                "Your POST request fields preceding the upload file were too large: \(detail).")
    }
}
