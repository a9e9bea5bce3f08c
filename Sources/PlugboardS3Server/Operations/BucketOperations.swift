import PlugboardAPI
import PlugboardHTTP

/// ListBuckets, CreateBucket, HeadBucket, DeleteBucket and GetBucketLocation, over the
/// bucket markers of ``S3Namespace``.
enum BucketOperations {
    /// The owner S3 answers in listings: one for the whole endpoint.
    static let ownerID = "plugboard"
    static let ownerDisplayName = "plugboard"

    /// `GET /`: every bucket marker, through all of the storage's pages; or, with
    /// `max-buckets`, `continuation-token` or `prefix` (ListBuckets' paged form), one page
    /// of them, continued with the front end's own token as listings are.
    static func listBuckets(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let prefix = request.query("prefix") ?? ""
        var maxBuckets = 10_000
        if let text = request.query("max-buckets") {
            guard let n = Int(text), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), (1...10_000).contains(n) else {
                throw S3Error.invalidArgument("Expected max-buckets to be an integer from 1 to 10000, found \"\(text.prefix(40))\".",
                                              name: "max-buckets", value: text)
            }
            maxBuckets = n
        }
        // An empty token is none, as ListObjectsV2 reads it.
        let token = request.query("continuation-token").flatMap { $0.isEmpty ? nil : $0 }
        let paged = request.query("max-buckets") != nil || token != nil
        // The markers as a listing of the "bucket" _plugboard-s3/buckets: its keys are the names.
        let markers = String(S3Namespace.bucketMarkerPrefix.dropLast())
        let listing = S3Listing(bucket: markers, prefix: prefix, delimiter: nil, maxKeys: paged ? maxBuckets : Int.max)
        var position = S3Listing.Position.start
        if let token { position = try listing.position(fromToken: token) }
        let page = try await listing.walk(context.records, from: position)

        var xml = S3XMLWriter(root: "ListAllMyBucketsResult")
        xml.open("Owner")
        xml.element("ID", ownerID)
        xml.element("DisplayName", ownerDisplayName)
        xml.close("Owner")
        xml.open("Buckets")
        for entry in page.entries {
            guard case .object(let name, let info) = entry, !name.isEmpty, !name.utf8.contains(UInt8(ascii: "/")) else { continue }
            xml.open("Bucket")
            xml.element("Name", name)
            xml.element("CreationDate", S3Objects.listingTime(info.lastModified))
            xml.element("BucketRegion", context.region)
            xml.close("Bucket")
        }
        xml.close("Buckets")
        if let next = page.next { xml.element("ContinuationToken", listing.token(next)) }
        if request.query("prefix") != nil { xml.element("Prefix", prefix) }
        return S3OperationSupport.xml(xml.finish())
    }

    /// `PUT /bucket`: the marker, stored only when absent, so that of two creators racing
    /// exactly one succeeds and the other hears `BucketAlreadyOwnedByYou`.
    static func createBucket(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let bucket = try requireName(request)
        try S3Namespace.validateBucketName(bucket)
        let body = try await S3OperationSupport.document(request, what: "CreateBucketConfiguration")
        if !body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            let root = try S3XMLReader.parse(body)
            guard root.name == "CreateBucketConfiguration" else {
                throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: expected the root element <CreateBucketConfiguration>, found <\(root.name)>.")
            }
            let constraint = root.text("LocationConstraint") ?? ""
            if !constraint.isEmpty, constraint != context.region {
                throw S3Error("InvalidLocationConstraint", status: 400,
                              "The specified location-constraint is not valid: expected \(context.region) (this endpoint's region) or none, found \(constraint.prefix(64)).",
                              fields: [("LocationConstraint", String(constraint.prefix(64)))])
            }
        }
        let marker = S3Namespace.markerKey(bucket: bucket)
        let created = HTTPResponse(status: 200, headers: [("Location", "/" + bucket)])
        // Every key pair here is the one owner; AWS answers a re-creation by the owner 200
        // in us-east-1 (for its legacy clients) and 409 everywhere else.
        let alreadyOwned = { () throws -> HTTPResponse in
            if context.region == "us-east-1" { return created }
            throw S3Error.bucketAlreadyOwnedByYou(bucket)
        }
        do {
            try await context.records.put(marker, data: [], contentType: nil, metadata: [:], condition: .absent)
        } catch let error as PlugboardError where error.code == .storagePreconditionFailed {
            return try alreadyOwned()
        } catch let error as PlugboardError where error.code == .storageUnsupported {
            // A backend built before conditional writes: a check and a put, which two
            // creators at once could both pass (both then own the one bucket).
            context.logger.warning("The storage cannot create bucket \(bucket)'s marker atomically (\(error.message)); checking and putting instead.")
            if try await context.records.exists(marker) { return try alreadyOwned() }
            _ = try await context.records.put(marker, data: [], contentType: nil, metadata: [:])
        }
        return created
    }

    /// `HEAD /bucket`: 200 with the region, or `NoSuchBucket` (the router answers HEAD's
    /// errors without a body).
    static func headBucket(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let bucket = try requireName(request)
        try await S3Objects.requireBucket(context, bucket)
        return HTTPResponse(status: 200, headers: [("x-amz-bucket-region", context.region)])
    }

    /// `DELETE /bucket`: refused with `BucketNotEmpty` while it holds an object (or a write
    /// into it is in flight, ``S3BucketGate``), with `OperationAborted` while another
    /// endpoint deletes it (``S3BucketFence``); its incomplete multipart uploads are
    /// aborted, as S3 does; 204.
    static func deleteBucket(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let bucket = try requireName(request)
        try await context.buckets.deletion(of: bucket) {
            guard try await S3Objects.markerExists(context, bucket) else { throw S3Error.noSuchBucket(bucket) }
            // Marked before the look, so that a write through another endpoint either
            // lands before it (and is seen) or finds the mark once it lands (and undoes itself).
            let hold = try await S3BucketFence.markDeleting(context, bucket)
            do {
                let objects = try await context.storage.list(prefix: S3Namespace.bucketPrefix(bucket), limit: 1, continuationToken: nil)
                if !objects.objects.isEmpty || objects.isTruncated {
                    var error = S3Error.bucketNotEmpty(bucket)
                    let found = objects.objects.first.map { "\"" + String($0.key.dropFirst(bucket.count + 1).prefix(256)) + "\"" } ?? "one on a later page"
                    error.message += " Expected no objects, found \(found)."
                    throw error
                }
                // Uploads first and the marker after them: a deletion cut short leaves a bucket
                // that is still there to delete again, never uploads without a bucket.
                let aborted = try await removeAll(context, under: MultipartLayout.uploadsPrefix(bucket: bucket), counting: MultipartLayout.recordName)
                if aborted > 0 { context.logger.info("DeleteBucket \(bucket): aborted \(aborted) incomplete multipart upload\(aborted == 1 ? "" : "s")") }
                try await context.records.delete(S3Namespace.markerKey(bucket: bucket))
            } catch {
                // Not deleted: the bucket takes writes again at once, and a retry is not
                // told that a deletion is in progress.
                if let hold { await S3BucketFence.reactivate(context, bucket, hold) }
                throw error
            }
            if hold != nil { await S3BucketFence.release(context, bucket) }
            // Part manifests left by objects deleted through the native API: a bucket made
            // again under this name must not find them.
            for prefix in MultipartLayout.manifestPrefixes(bucket: bucket) {
                _ = try await removeAll(context, under: prefix, counting: nil)
            }
        }
        return HTTPResponse(status: 204)
    }

    /// Deletes every storage object under `prefix`, page by page; returns how many of
    /// them had the last path component `name`.
    private static func removeAll(_ context: S3Context, under prefix: String, counting name: String?) async throws -> Int {
        var counted = 0
        var token: String?
        repeat {
            let page = try await context.records.list(prefix: prefix, limit: 1000, continuationToken: token)
            for object in page.objects {
                try await context.records.delete(object.key)
                if let name, object.key.hasSuffix("/" + name) { counted += 1 }
            }
            token = page.nextContinuationToken
        } while token != nil
        return counted
    }

    /// `GET /bucket?location`: the region, an empty element for us-east-1 as S3 writes it.
    static func getBucketLocation(_ context: S3Context, _ request: S3Request) async throws -> HTTPResponse {
        let bucket = try requireName(request)
        try await S3Objects.requireBucket(context, bucket)
        // S3XMLWriter has no text for its root; this document is nothing but that.
        var bytes = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint xmlns=\"\(S3XMLWriter.namespace)\">".utf8)
        if context.region != "us-east-1" { S3XMLWriter.escape(context.region, into: &bytes) }
        bytes.append(contentsOf: "</LocationConstraint>".utf8)
        return S3OperationSupport.xml(bytes)
    }

    private static func requireName(_ request: S3Request) throws(S3Error) -> String {
        guard let bucket = request.bucket, !bucket.isEmpty else {
            throw S3Error.invalidRequest("This operation is on a bucket: expected a bucket name in the path or host, found none.")
        }
        return bucket
    }
}
