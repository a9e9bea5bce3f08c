import PlugboardAPI
import PlugboardSigV4

/// Turns an S3 error answer into the ObjectStorage error codes (docs/plugins/S3Storage.md
/// lists the table). Every text passes through ``S3Redactor`` before it leaves.
struct S3ErrorMapping: Sendable {
    var configuration: S3Configuration
    var redactor: S3Redactor

    /// Whether the answer is worth sending again: 5xx, SlowDown and its kin.
    static func isRetryable(status: Int, code: String?) -> Bool {
        if status >= 500 { return true }
        guard let code else { return false }
        return ["SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling",
                "ThrottlingException", "RequestLimitExceeded", "RequestThrottled"].contains(code)
    }

    /// The error for an answer with HTTP status `status` and the parsed body (nil when the
    /// body was empty, as for HEAD, or not an S3 error document).
    ///
    /// `bucketRegion` is S3's `x-amz-bucket-region` header, which names the bucket's
    /// region on a redirect even when the body is lost.
    func error(_ operation: S3Operation, status: Int, body: S3ErrorBody?, bodyProblem: String? = nil,
               bucketRegion: String? = nil) -> PlugboardError {
        let code = body?.code ?? Self.codeForBodylessStatus(status, operation.kind)
        let bucket = PlugboardError.quoted(configuration.bucket)
        let said = redactor.scrub(Self.said(status: status, body: body, bodyProblem: bodyProblem))
        func make(_ pbCode: PlugboardError.Code, _ message: String, hint: String?) -> PlugboardError {
            PlugboardError(pbCode, redactor.scrub(message), detail: said, hint: hint.map(redactor.scrub))
        }
        switch code {
        case "NoSuchKey" where operation.kind == .get || operation.kind == .head:
            return .objectNotFound(key: operation.key ?? "")
        case "NoSuchBucket":
            return make(.storageFailed, "\(operation.description) failed: bucket \(bucket) does not exist",
                        hint: "Create the bucket, or correct \"bucket\", \"region\" and \"endpoint\" in the plugin's config (now \(configuration.endpoint), region \(configuration.region)).")
        case "AccessDenied", "AllAccessDisabled", "AccountProblem", "InvalidAccessKeyId", "InvalidToken", "ExpiredToken", "TokenRefreshRequired":
            return make(.storageAccessDenied, "\(operation.description) failed: access denied (\(code))",
                        hint: Self.accessHint(code, configuration))
        case "SignatureDoesNotMatch":
            return make(.storageAccessDenied, "\(operation.description) failed: S3 refused the request signature",
                        hint: "Check that secretAccessKey belongs to accessKeyId \(PlugboardError.quoted(String(configuration.credentials.accessKeyId.prefix(4)) + "..."))(credentials from \(configuration.credentials.source)), that this machine's clock is right (now \(Timestamp.now().httpDate)), that \"region\" (\(configuration.region)) is the bucket's, and that no proxy rewrites requests to \(configuration.endpoint).")
        case "RequestTimeTooSkewed":
            return make(.storageAccessDenied, "\(operation.description) failed: this machine's clock differs too much from S3's",
                        hint: "Synchronize the clock (for example with NTP): it says \(Timestamp.now().httpDate), S3 allows 15 minutes of difference\(body?.fields["ServerTime"].map { " and its time was \($0)" } ?? ""). The keys may be right.")
        case "AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException":
            return make(.storageFailed, "\(operation.description) failed: the bucket is not in region \(PlugboardError.quoted(configuration.region)) or not at \(configuration.endpoint)",
                        hint: "Set \"region\" to the bucket's region\((body?.fields["Region"] ?? bucketRegion).map { " (S3 says \($0))" } ?? ""), or correct \"endpoint\".")
        case "SlowDown", "ServiceUnavailable", "Throttling", "ThrottlingException", "RequestLimitExceeded", "RequestThrottled":
            return make(.storageUnavailable, "\(operation.description) failed: S3 asks to slow down (\(code))",
                        hint: "Retry later with backoff; the plugin already retried \(configuration.maxRetries) times (\"maxRetries\").")
        case "InvalidArgument" where operation.kind == .list, "InvalidContinuationToken":
            return make(.storageInvalidArgument, "\(operation.description) failed: S3 refused the listing's arguments",
                        hint: "Start the listing again without a continuation token.")
        case "MetadataTooLarge":
            return make(.storageInvalidMetadata, "\(operation.description) failed: S3 refused the metadata as too large",
                        hint: "Store less metadata; large values belong in the object itself.")
        case "EntityTooLarge":
            return make(.storageInvalidArgument, "\(operation.description) failed: the object is larger than S3 takes in one PUT",
                        hint: "Store objects of at most 5 GiB.")
        case "KeyTooLongError":
            return .init(.storageInvalidKey, "object key \(PlugboardError.quoted(operation.key ?? "")) is too long for S3",
                         detail: said, hint: "Use a key of at most \(ObjectKey.maxByteCount) bytes.")
        case "BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch":
            return make(.storageFailed, "\(operation.description) failed: the data arrived damaged (\(code))",
                        hint: "Retry the put; if it keeps failing, something between this host and S3 alters request bodies.")
        default:
            if status >= 500 {
                return make(.storageUnavailable, "\(operation.description) failed: S3 is unavailable (HTTP \(status))",
                            hint: "Retry later with backoff; the plugin already retried \(configuration.maxRetries) times (\"maxRetries\").")
            }
            return make(.storageFailed, "\(operation.description) failed: S3 answered \(code)",
                        hint: "See the S3 error code in the detail; docs/plugins/S3Storage.md lists what each means.")
        }
    }

    /// A name for a status that came without a body (HEAD answers have none).
    static func codeForBodylessStatus(_ status: Int, _ kind: S3Operation.Kind) -> String {
        switch status {
        case 404: kind == .headBucket ? "NoSuchBucket" : "NoSuchKey"
        case 403: "AccessDenied"
        case 301, 307: "PermanentRedirect"
        case 400: "BadRequest"
        case 503: "ServiceUnavailable"
        default: "HTTP\(status)"
        }
    }

    private static func said(status: Int, body: S3ErrorBody?, bodyProblem: String?) -> String {
        guard let body else {
            return "S3 answered HTTP \(status)" + (bodyProblem.map { " with a body that is not an S3 error document: \($0)." } ?? " without an error document.")
        }
        var text = "S3 answered HTTP \(status), code \(body.code)"
        if !body.message.isEmpty { text += ": \(PlugboardError.quoted(body.message, maxCharacters: 300))" }
        for name in ["BucketName", "Region", "Endpoint", "ServerTime", "RequestTime"] {
            if let value = body.fields[name] { text += ", \(name) \(PlugboardError.quoted(value))" }
        }
        if let id = body.requestID { text += " (request id \(id))" }
        return text + "."
    }

    private static func accessHint(_ code: String, _ configuration: S3Configuration) -> String {
        let source = configuration.credentials.source
        switch code {
        case "InvalidAccessKeyId":
            return "S3 does not know the access key id (credentials from \(source)); correct it, or check that \"endpoint\" points at the server the key belongs to."
        case "ExpiredToken", "TokenRefreshRequired", "InvalidToken":
            return "The session token (credentials from \(source)) has expired or is invalid; get new temporary credentials and restart."
        default:
            return "Grant the credentials (from \(source)) s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket on bucket \(PlugboardError.quoted(configuration.bucket)), or use other credentials."
        }
    }
}

/// Replaces every secret (the secret access key, the session token) in a text with
/// `<redacted>`, so that no error text or log line can carry one, whatever a server
/// echoes back.
struct S3Redactor: Sendable {
    var secrets: [String]

    init(_ credentials: AWSCredentials) {
        secrets = credentials.secrets.filter { $0.count >= 4 }
    }

    func scrub(_ text: String) -> String {
        var out = text
        for secret in secrets where out.contains(secret) {
            out = out.replacing(secret, with: "<redacted>")
        }
        return out
    }
}
