import PlugboardAPI

/// An error as the S3 API answers it: S3's code (`NoSuchKey`, `SignatureDoesNotMatch`),
/// its HTTP status, a message for people, and the extra elements S3 puts beside them in
/// the XML (`<StringToSign>`, `<ArgumentName>`, `<BucketName>`), in order.
///
/// Every refusal names what was expected and what was found in `message`, as the rest of
/// Plugboard's errors do; the code is S3's, so that SDKs map it to their own exceptions.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    public var code: String
    public var status: Int
    public var message: String
    /// Elements after `<Message>`, such as ("BucketName", "photos").
    public var fields: [(String, String)]
    /// Response headers the error needs (`Retry-After`, `Allow`).
    public var headers: [(String, String)]

    public init(_ code: String, status: Int, _ message: String, fields: [(String, String)] = [],
                headers: [(String, String)] = []) {
        self.code = code
        self.status = status
        self.message = message
        self.fields = fields
        self.headers = headers
    }

    public var description: String { "\(code) (\(status)): \(message)" }

    // MARK: S3's codes, as its error reference lists them

    public static func accessDenied(_ message: String) -> S3Error { S3Error("AccessDenied", status: 403, message) }
    public static func invalidAccessKeyId(_ id: String) -> S3Error {
        S3Error("InvalidAccessKeyId", status: 403,
                "The AWS access key ID you provided does not exist in our records: expected one of the server's keys, found \"\(id.prefix(128))\".",
                fields: [("AWSAccessKeyId", String(id.prefix(128)))])
    }
    public static func signatureDoesNotMatch(_ message: String, stringToSign: String, canonicalRequest: String) -> S3Error {
        S3Error("SignatureDoesNotMatch", status: 403, message,
                fields: [("StringToSign", stringToSign), ("CanonicalRequest", canonicalRequest)])
    }
    public static func requestTimeTooSkewed(_ message: String) -> S3Error { S3Error("RequestTimeTooSkewed", status: 403, message) }
    public static func expiredToken(_ message: String) -> S3Error { S3Error("AccessDenied", status: 403, message) }
    public static func authorizationHeaderMalformed(_ message: String) -> S3Error {
        S3Error("AuthorizationHeaderMalformed", status: 400, message)
    }
    public static func authorizationQueryParametersError(_ message: String) -> S3Error {
        S3Error("AuthorizationQueryParametersError", status: 400, message)
    }
    public static func invalidArgument(_ message: String, name: String? = nil, value: String? = nil) -> S3Error {
        var fields: [(String, String)] = []
        if let name { fields.append(("ArgumentName", name)) }
        if let value { fields.append(("ArgumentValue", String(value.prefix(256)))) }
        return S3Error("InvalidArgument", status: 400, message, fields: fields)
    }
    public static func invalidRequest(_ message: String) -> S3Error { S3Error("InvalidRequest", status: 400, message) }
    public static func malformedXML(_ message: String) -> S3Error { S3Error("MalformedXML", status: 400, message) }
    public static func badDigest(_ message: String) -> S3Error { S3Error("BadDigest", status: 400, message) }
    public static func invalidDigest(_ message: String) -> S3Error { S3Error("InvalidDigest", status: 400, message) }
    public static func xAmzContentSHA256Mismatch(expected: String, found: String) -> S3Error {
        S3Error("XAmzContentSHA256Mismatch", status: 400,
                "The provided 'x-amz-content-sha256' header does not match what was computed: the header says \(expected.prefix(64)), the body's SHA-256 is \(found).",
                fields: [("ClientComputedContentSHA256", String(expected.prefix(64))), ("S3ComputedContentSHA256", found)])
    }
    public static func incompleteBody(_ message: String) -> S3Error { S3Error("IncompleteBody", status: 400, message) }
    public static func entityTooLarge(_ message: String) -> S3Error { S3Error("EntityTooLarge", status: 400, message) }
    public static func entityTooSmall(_ message: String) -> S3Error { S3Error("EntityTooSmall", status: 400, message) }
    public static func invalidBucketName(_ name: String, _ why: String) -> S3Error {
        S3Error("InvalidBucketName", status: 400, "The specified bucket is not valid: \(why)", fields: [("BucketName", String(name.prefix(255)))])
    }
    public static func noSuchBucket(_ name: String) -> S3Error {
        S3Error("NoSuchBucket", status: 404, "The specified bucket does not exist.", fields: [("BucketName", name)])
    }
    public static func noSuchKey(_ key: String) -> S3Error {
        S3Error("NoSuchKey", status: 404, "The specified key does not exist.", fields: [("Key", key)])
    }
    public static func noSuchUpload(_ id: String) -> S3Error {
        S3Error("NoSuchUpload", status: 404,
                "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed (or it lives in the storage that was bound before a swap).",
                fields: [("UploadId", id)])
    }
    public static func bucketNotEmpty(_ name: String) -> S3Error {
        S3Error("BucketNotEmpty", status: 409, "The bucket you tried to delete is not empty.", fields: [("BucketName", name)])
    }
    public static func bucketAlreadyOwnedByYou(_ name: String) -> S3Error {
        S3Error("BucketAlreadyOwnedByYou", status: 409,
                "Your previous request to create the named bucket succeeded and you already own it.", fields: [("BucketName", name)])
    }
    public static func invalidRange(size: Int) -> S3Error {
        S3Error("InvalidRange", status: 416, "The requested range is not satisfiable.",
                fields: [("ActualObjectSize", String(size))], headers: [("Content-Range", "bytes */\(size)")])
    }
    public static func preconditionFailed(_ condition: String) -> S3Error {
        S3Error("PreconditionFailed", status: 412, "At least one of the pre-conditions you specified did not hold.",
                fields: [("Condition", condition)])
    }
    public static func invalidPart(_ message: String) -> S3Error { S3Error("InvalidPart", status: 400, message) }
    public static func invalidPartOrder(_ message: String) -> S3Error { S3Error("InvalidPartOrder", status: 400, message) }
    public static func keyTooLong(_ message: String) -> S3Error { S3Error("KeyTooLongError", status: 400, message) }
    public static func methodNotAllowed(_ message: String, allowed: String) -> S3Error {
        S3Error("MethodNotAllowed", status: 405, message, headers: [("Allow", allowed)])
    }
    public static func notImplemented(_ operation: String) -> S3Error {
        S3Error("NotImplemented", status: 501,
                "A header or query you provided implies functionality that is not implemented: \(operation) is not supported by Plugboard's S3 endpoint (docs/S3_API.md lists what is).")
    }
    public static func serviceUnavailable(_ message: String) -> S3Error {
        S3Error("ServiceUnavailable", status: 503, message, headers: [("Retry-After", "1")])
    }
    public static func slowDown(_ message: String) -> S3Error { S3Error("SlowDown", status: 503, message, headers: [("Retry-After", "1")]) }
    public static func internalError(_ message: String) -> S3Error { S3Error("InternalError", status: 500, message) }
    public static func missingContentLength() -> S3Error {
        S3Error("MissingContentLength", status: 411, "You must provide the Content-Length HTTP header.")
    }
}
