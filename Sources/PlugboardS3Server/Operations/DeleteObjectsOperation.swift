import PlugboardAPI
import PlugboardHTTP

/// DeleteObjects: `POST /bucket?delete` with a `<Delete>` document of up to 1,000 keys.
///
/// S3 requires `Content-MD5` or an `x-amz-checksum-*` header on this call; like MinIO,
/// this endpoint accepts the request without either (the router's body decoder verifies
/// them when they are sent).
enum DeleteObjectsOperation {
    static let maxObjects = 1000

    static func deleteObjects(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        guard let bucket = request.bucket, !bucket.isEmpty else {
            throw S3Error.invalidRequest("DeleteObjects is an operation on a bucket: expected a bucket name in the path or host, found none.")
        }
        let body = try await S3OperationSupport.document(request, what: "Delete")
        let (quiet, objects) = try parse(body)
        try await S3Objects.requireBucket(context, bucket)

        // The deletes a few at a time (a remote backend's round trips), answered in order.
        let outcomes = try await S3OperationSupport.mapConcurrently(objects) { object in
            try await delete(object, bucket: bucket, context)
        }
        var xml = S3XMLWriter(root: "DeleteResult")
        for (object, outcome) in zip(objects, outcomes) {
            if let failure = outcome {
                writeError(into: &xml, key: object.key, versionId: object.versionId, code: failure.code, message: failure.message)
            } else if !quiet {
                xml.open("Deleted")
                xml.element("Key", object.key)
                xml.element("VersionId", ifPresent: object.versionId)
                xml.close("Deleted")
            }
        }
        return S3OperationSupport.xml(xml.finish())
    }

    /// Deletes one object: nil, or the code and message of its `<Error>` entry.
    static func delete(_ object: (key: String, versionId: String?), bucket: String,
                       _ context: S3Context) async throws -> (code: String, message: String)? {
        if let version = object.versionId, version != "null" {
            return ("NoSuchVersion", "The specified version does not exist: expected \"null\" (the bucket is not versioned), found \"\(version.prefix(128))\".")
        }
        do {
            let storageKey = try S3Objects.storageKey(bucket: bucket, key: object.key)
            try await context.storage.delete(storageKey)
            // The part manifest of an object completed from parts would describe nothing now.
            try await MultipartOperations.forgetParts(context, bucket: bucket, key: object.key)
            return nil
        } catch let error as S3Error {
            return (error.code, error.message)
        } catch let error as PlugboardError {
            context.logger.warning("DeleteObjects could not delete \(bucket)/\(object.key): \(error)")
            let s3 = S3Error(storage: error, bucket: bucket, key: object.key, mapping: context.pluginErrorMapping(error.code))
            // The storage's texts may name server paths; the log line above keeps them.
            return (s3.code, ServerPaths.scrubbed(s3.message))
        } catch {
            if error is CancellationError { throw error }
            return ("InternalError", "The storage failed: \(error).")
        }
    }

    /// `Quiet` and the objects of a `<Delete>` document; `MalformedXML` for anything else
    /// (no objects, more than 1,000, an object without a key, a `Quiet` not a boolean).
    static func parse(_ body: [UInt8]) throws(S3Error) -> (quiet: Bool, objects: [(key: String, versionId: String?)]) {
        let root = try S3XMLReader.parse(body)
        guard root.name == "Delete" else {
            throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected the root element <Delete>, found <\(root.name)>.")
        }
        var quiet = false
        if let text = root.text("Quiet") {
            switch text.lowercased() {
            case "true": quiet = true
            case "false": quiet = false
            default:
                throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected <Quiet> to be true or false, found \"\(text.prefix(40))\".")
            }
        }
        let elements = root.children("Object")
        guard !elements.isEmpty else {
            throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected 1 to \(maxObjects) <Object> elements, found none.")
        }
        guard elements.count <= maxObjects else {
            throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected at most \(maxObjects) <Object> elements, found \(elements.count).")
        }
        var objects: [(key: String, versionId: String?)] = []
        objects.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() {
            // The key's text exactly: spaces at its ends are part of a key.
            guard let key = element.child("Key")?.text, !key.isEmpty else {
                throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected a non-empty <Key> in <Object> number \(i + 1), found none.")
            }
            let version = element.text("VersionId").flatMap { $0.isEmpty ? nil : $0 }
            objects.append((key, version))
        }
        return (quiet, objects)
    }

    private static func writeError(into xml: inout S3XMLWriter, key: String, versionId: String?, code: String, message: String) {
        xml.open("Error")
        xml.element("Key", key)
        xml.element("VersionId", ifPresent: versionId)
        xml.element("Code", code)
        xml.element("Message", message)
        xml.close("Error")
    }
}
