import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP

/// PostObject: a browser upload, `multipart/form-data` POSTed to the bucket, as boto3's
/// `generate_presigned_post` and web apps that upload straight to storage make it.
///
/// The form signs itself: `policy` (base64 JSON, ``PostPolicy``) is signed with SigV4
/// (`x-amz-algorithm`, `x-amz-credential`, `x-amz-date`, `x-amz-signature`), or, where the
/// endpoint serves Signature Version 2, with `AWSAccessKeyId` and `signature`. Everything
/// is checked before any of the file is stored: the fields before the file are read
/// (bounded, as S3 bounds them), the signature verified, then the policy's expiration,
/// its conditions and S3's rule that every field is named by one. The file then streams
/// to the storage; its size is held to the policy's content-length-range as it passes,
/// and a file outside it fails the put, so nothing is stored. Fields after the file are
/// ignored, as S3 ignores them.
enum PostObjectOperation {
    /// What follows the file is read away up to this, so that the connection can go on.
    static let maxTrailingBytes = 1 << 20

    static func postObject(_ context: S3Context, _ request: S3Request, verifier: SigV4Verifier,
                           now: Timestamp) async throws -> HTTPResponse {
        guard let bucket = request.bucket, !bucket.isEmpty else {
            throw S3Error.invalidRequest("A browser upload is POSTed to a bucket: expected a bucket name in the path or host, found none.")
        }
        let contentType = request.header("content-type") ?? ""
        guard let boundary = MultipartFormReader.boundary(contentType: contentType) else {
            throw S3Error("PreconditionFailed", status: 412,
                          "At least one of the pre-conditions you specified did not hold: Bucket POST must be of the enclosure-type multipart/form-data (with a boundary); found Content-Type \"\(contentType.prefix(80))\".",
                          fields: [("Condition", "Bucket POST must be of the enclosure-type multipart/form-data")])
        }
        let reader = try MultipartFormReader(request.body, boundary: boundary)
        let form = try await reader.fields()
        let fields = try Fields(form.fields)

        let signedV2 = try requireSignatureFields(fields, servesV2: verifier.signatureV2 != nil)
        let keyTemplate = try fields.required("key")
        let policyText = try fields.required("policy")
        let authenticate: () throws(S3Error) -> Void
        if signedV2, let signatureV2 = verifier.signatureV2 {
            let accessKeyID = try fields.required("awsaccesskeyid"), signature = try fields.required("signature")
            authenticate = { () throws(S3Error) in _ = try signatureV2.verifyPost(accessKeyID: accessKeyID, policy: policyText, signature: signature) }
        } else {
            let signature = SigV4Verifier.PostSignature(
                algorithm: try fields.required("x-amz-algorithm"), credential: try fields.required("x-amz-credential"),
                date: try fields.required("x-amz-date"), policy: policyText, signature: try fields.required("x-amz-signature"))
            authenticate = { () throws(S3Error) in _ = try verifier.authenticatePost(signature, now: now) }
        }
        guard let file = form.file else {
            throw S3Error.invalidArgument("POST requires exactly one file upload per request: expected a part named \"file\" after the other fields, found none.",
                                          name: "file", value: "0")
        }
        try authenticate()
        let policy = try PostPolicy(base64: policyText)
        try policy.check(fields: form.fields.map { ($0.name, $0.value) }, bucket: bucket, now: now)

        // The object: `${filename}` in the key is the file's name, as the browser sent it.
        let key = keyTemplate.replacing("${filename}", with: file.filename ?? "")
        let storageKey = try S3Objects.storageKey(bucket: bucket, key: key)
        let metadata = try S3Objects.metadata(fromHeaders: form.fields.map { (name: $0.name.lowercased(), value: $0.value) })
        let objectType = fields["content-type"].flatMap { $0.isEmpty ? nil : $0 }
        let verified = VerifiedChecksums()
        let body = try checkedFile(reader.fileContent(), fields: fields, sizes: policy.contentLengthRange, verified: verified)
        let info = try await S3Objects.writing(into: bucket, context) { landed in
            landed.landed(try await context.storage.put(storageKey, body: body, contentType: objectType, metadata: metadata, condition: .none))
        }
        await reader.discardRest(upTo: maxTrailingBytes)
        return answer(request, fields: fields, bucket: bucket, key: key, etag: S3Objects.etag(info), checksums: verified.answerHeaders)
    }

    // MARK: Pieces

    /// The form's fields by lower-case name (S3 reads names without case); a field given
    /// twice is refused, since the policy could hold for one and the other be used.
    struct Fields {
        private var values: [String: String] = [:]

        init(_ fields: [MultipartFormReader.Field]) throws(S3Error) {
            for field in fields {
                let name = field.name.lowercased()
                guard values[name] == nil else {
                    throw S3Error.invalidArgument("The form field \(field.name.prefix(64)) is given twice: expected each field once.",
                                                  name: String(field.name.prefix(64)))
                }
                values[name] = field.value
            }
        }

        subscript(_ name: String) -> String? { values[name] }

        /// The field's value; S3's `InvalidArgument` naming it when the form lacks it.
        func required(_ name: String) throws(S3Error) -> String {
            guard let value = values[name] else {
                throw S3Error.invalidArgument("Bucket POST must contain a field named '\(name)'.  If it is specified, please check the order of the fields: expected it before the file, found it missing.",
                                              name: name, value: "")
            }
            return value
        }
    }

    /// Refuses a form that carries no signature at all (there is no anonymous access
    /// here) and one signed with Signature Version 2 (`AWSAccessKeyId`, `signature`)
    /// unless the endpoint serves V2; answers whether the form is signed the V2 way.
    static func requireSignatureFields(_ fields: Fields, servesV2: Bool) throws(S3Error) -> Bool {
        if fields["awsaccesskeyid"] != nil || (fields["signature"] != nil && fields["x-amz-signature"] == nil) {
            guard servesV2 else { throw SigV4Verifier.signatureVersion2("a form with AWSAccessKeyId and signature fields") }
            return true
        }
        if fields["policy"] == nil, fields["x-amz-signature"] == nil, fields["x-amz-credential"] == nil {
            throw S3Error.accessDenied(
                "Access Denied: anonymous requests are refused: a browser upload must be signed (policy, x-amz-algorithm, x-amz-credential, x-amz-date and x-amz-signature fields, as boto3's generate_presigned_post writes them); found none of them.")
        }
        return false
    }

    /// The file's content held to the policy's sizes and to the form's `Content-MD5` or
    /// `x-amz-checksum-*` (checked as a PUT's headers are): either failure throws before
    /// the body ends, so the storage keeps nothing.
    static func checkedFile(_ content: ObjectBody, fields: Fields, sizes: (min: Int, max: Int)?,
                            verified: VerifiedChecksums) throws(S3Error) -> ObjectBody {
        var sized = content
        if let sizes {
            let counter = SizeCheckedBody(content, min: sizes.min, max: sizes.max)
            sized = ObjectBody(length: nil) { try await counter.next() }
        }
        var digests: [(name: String, value: String)] = []
        for name in ["content-md5"] + ChecksumAlgorithm.allCases.map(\.headerName) {
            if let value = fields[name] { digests.append((name, value)) }
        }
        guard !digests.isEmpty else { return sized }
        let unsigned = S3Authentication(accessKeyID: "", payload: .unsigned, signingKey: [], scope: "", amzDate: "", seedSignature: "")
        return try S3BodyDecoder.decode(sized, headers: HTTPHeaders(digests), authentication: unsigned, verified: verified)
    }

    /// The answer the form asks for: `success_action_redirect` (303 to it, with the
    /// bucket, key and ETag in its query), else `success_action_status` 200, 201 (a
    /// `PostResponse` document) or 204 (the default, also for any other value).
    static func answer(_ request: S3Request, fields: Fields, bucket: String, key: String, etag: String,
                       checksums: [(String, String)]) -> HTTPResponse {
        let location = objectURL(request, bucket: bucket, key: key)
        if let target = fields["success_action_redirect"] ?? fields["redirect"], isRedirectable(target) {
            let query = [("bucket", bucket), ("key", key), ("etag", etag)]
                .map { "\($0.0)=\(PercentEncoding.encode($0.1))" }.joined(separator: "&")
            let separator = target.contains("?") ? "&" : "?"
            return HTTPResponse(status: 303, headers: [("Location", target + separator + query), ("ETag", etag)] + checksums)
        }
        let headers = [("ETag", etag), ("Location", location)] + checksums
        switch fields["success_action_status"].map({ ASCIIText.trimmed($0) }) {
        case "200":
            return HTTPResponse(status: 200, headers: headers)
        case "201":
            var xml = S3XMLWriter(root: "PostResponse", namespaced: false)
            xml.element("Location", location)
            xml.element("Bucket", bucket)
            xml.element("Key", key)
            xml.element("ETag", etag)
            return S3OperationSupport.xml(xml.finish(), status: 201, headers: headers)
        default:
            return HTTPResponse(status: 204, headers: headers)
        }
    }

    /// An absolute http(s) URL a `Location` header can carry; S3 ignores any other value.
    static func isRedirectable(_ target: String) -> Bool {
        let lower = target.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return false }
        return target.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F }
    }

    /// The object's URL, as the client addressed the bucket (the `Host` it sent, path
    /// style or virtual-hosted); `https` when a proxy in front says so.
    static func objectURL(_ request: S3Request, bucket: String, key: String) -> String {
        let scheme = request.header("x-forwarded-proto")?.lowercased() == "https" ? "https" : "http"
        let host = request.header("host") ?? "localhost"
        let path = key.split(separator: "/", omittingEmptySubsequences: false)
            .map { PercentEncoding.encode(String($0)) }.joined(separator: "/")
        let virtualHosted = request.head.path == "/"
        return "\(scheme)://\(host)/" + (virtualHosted ? "" : bucket + "/") + path
    }
}

/// A file held to a content-length-range as its bytes pass: a chunk that would take it
/// over the maximum throws (`EntityTooLarge`) instead of being yielded, and an end short
/// of the minimum throws (`EntityTooSmall`) instead of ending.
///
/// `@unchecked Sendable`: read by one task at a time (the ObjectBody contract).
final class SizeCheckedBody: @unchecked Sendable {
    private var upstream: ObjectBody.Iterator
    private let min: Int
    private let max: Int
    private var total = 0

    init(_ body: ObjectBody, min: Int, max: Int) {
        upstream = body.makeAsyncIterator()
        self.min = min
        self.max = max
    }

    func next() async throws -> [UInt8]? {
        guard let chunk = try await upstream.next() else {
            guard total >= min else {
                throw S3Error("EntityTooSmall", status: 400,
                              "Your proposed upload is smaller than the minimum allowed size: the policy's content-length-range asks at least \(min) bytes, the file has \(total).",
                              fields: [("ProposedSize", String(total)), ("MinSizeAllowed", String(min))])
            }
            return nil
        }
        total += chunk.count
        guard total <= max else {
            throw S3Error("EntityTooLarge", status: 400,
                          "Your proposed upload exceeds the maximum allowed size: the policy's content-length-range allows at most \(max) bytes, the file has at least \(total).",
                          fields: [("ProposedSize", String(total)), ("MaxSizeAllowed", String(max))])
        }
        return chunk
    }
}
