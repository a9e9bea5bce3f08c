import PlugboardAPI
import PlugboardBytes
import PlugboardCrypto
import PlugboardHTTP
import PlugboardHost

/// Verifies AWS Signature Version 2 as S3 checks it, for the clients that still send it
/// (the manifest's `"s3": {"signatureV2": true}`; off by default, see docs/S3_API.md):
/// the `Authorization: AWS AKID:signature` header, presigned URLs with
/// `AWSAccessKeyId`, `Expires` and `Signature`, and browser forms signed with
/// `AWSAccessKeyId`, `policy` and `signature`.
///
/// The signature is `base64(HMAC-SHA1(secret, StringToSign))` where StringToSign is the
/// method, `Content-MD5`, `Content-Type`, the date (`Date`, empty when `x-amz-date` is
/// sent, or a presigned URL's `Expires`), the `x-amz-*` headers in canonical form, and the
/// resource: `/bucket` for a bucket named by `Host`, the path as sent (not decoded), then
/// the signed sub-resources (``signedSubresources``) sorted by name with their decoded
/// values. Refusals are S3's: `SignatureDoesNotMatch` with the StringToSign (and its
/// bytes) the server signed, `InvalidAccessKeyId`, `RequestTimeTooSkewed` (the same bound
/// as SigV4's), `AccessDenied` for an expired URL or a request without a date.
///
/// - Important: V2 signs no hash of the body and uses SHA-1; a request's body is held
///   only to its `Content-MD5` or `x-amz-checksum-*` when the client sends one.
struct SigV2Verifier: Sendable {
    private let secrets: [String: String]
    let maxSkewSeconds: Int

    init(secrets: [String: String], maxSkewSeconds: Int) {
        self.secrets = secrets
        self.maxSkewSeconds = maxSkewSeconds
    }

    /// The query parameters S3 signs as part of the resource: the sub-resources, and the
    /// `response-*` overrides. The list botocore's `HmacV1Auth` signs (it is what decides
    /// what V2 clients sign), which holds the S3 developer guide's.
    static let signedSubresources: Set<String> = [
        "accelerate", "acl", "analytics", "cors", "defaultObjectAcl", "delete", "inventory", "legal-hold", "lifecycle",
        "location", "logging", "metrics", "notification", "object-lock", "partNumber", "policy", "replication",
        "requestPayment", "response-cache-control", "response-content-disposition", "response-content-encoding",
        "response-content-language", "response-content-type", "response-expires", "restore", "retention", "select",
        "select-type", "storageClass", "tagging", "torrent", "uploadId", "uploads", "versionId", "versioning", "versions",
        "website",
    ]

    // MARK: The three forms

    /// The header form: `credentials` is what follows `AWS ` (`AKID:signature`).
    func verifyHeader(_ credentials: Substring, method: String, rawPath: [UInt8], rawQuery: [UInt8], hostBucket: String?,
                      headers: HTTPHeaders, now: Timestamp) throws(S3Error) -> S3Authentication {
        // A signature is base64, which has no ":"; an access key ID may (docs/MANIFEST.md).
        let text = ASCIIText.trimmed(credentials)
        guard let colon = text.lastIndex(of: ":"), colon != text.startIndex, text.index(after: colon) != text.endIndex else {
            throw S3Error.invalidArgument(
                "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature, found \"AWS \(text.prefix(64))\".",
                name: "Authorization", value: "AWS " + String(text.prefix(64)))
        }
        let accessKeyID = String(text[..<colon])
        let signature = String(text[text.index(after: colon)...])
        guard let secret = secrets[accessKeyID] else { throw S3Error.invalidAccessKeyId(accessKeyID) }

        // x-amz-date, when sent, is the request's time and is signed among the x-amz-*
        // headers; Date's place in the string is then empty (boto, RGW and MinIO agree).
        let date: String
        let requestTime: Timestamp?
        let dateSource: String
        if let amzDate = headers["x-amz-date"] {
            (date, dateSource) = ("", "x-amz-date")
            requestTime = Self.parseDate(ASCIIText.trimmed(amzDate))
        } else if let httpDate = headers["date"] {
            (date, dateSource) = (ASCIIText.trimmed(httpDate), "Date")
            requestTime = Self.parseDate(date)
        } else {
            throw S3Error.accessDenied(
                "AWS authentication requires a valid Date or x-amz-date header: expected one as an HTTP date (Tue, 27 Mar 2007 19:36:42 +0000), found neither.")
        }
        guard let requestTime else {
            throw S3Error.accessDenied(
                "AWS authentication requires a valid Date or x-amz-date header: expected the \(dateSource) header as an HTTP date (Tue, 27 Mar 2007 19:36:42 +0000), found \"\((headers[dateSource.lowercased()] ?? "").prefix(64))\".")
        }
        let skew = requestTime.seconds - now.seconds
        if skew.magnitude > UInt64(max(maxSkewSeconds, 0)) {
            let serverTime = SigV4Verifier.isoSeconds(now)
            throw S3Error("RequestTimeTooSkewed", status: 403,
                          "The difference between the request time and the current time is too large: the request's \(dateSource) is \(SigV4Verifier.isoSeconds(requestTime)), the server's time is \(serverTime) (\(skew.magnitude) seconds apart; at most \(maxSkewSeconds) are allowed).",
                          fields: [("RequestTime", date.isEmpty ? (headers["x-amz-date"] ?? "") : date), ("ServerTime", serverTime),
                                   ("MaxAllowedSkewMilliseconds", String(maxSkewSeconds * 1000))])
        }
        let stringsToSign = try Self.stringsToSign(method: method, headers: headers, date: date, rawPath: rawPath,
                                                   rawQuery: rawQuery, hostBucket: hostBucket)
        try check(signature, of: stringsToSign, accessKeyID: accessKeyID, secret: secret)
        return try authentication(accessKeyID, headers: headers)
    }

    /// The presigned-URL form: `AWSAccessKeyId`, `Expires` (seconds since 1970) and
    /// `Signature` in the query; the string signed has `Expires` in the date's place.
    func verifyQuery(method: String, rawPath: [UInt8], rawQuery: [UInt8], hostBucket: String?, headers: HTTPHeaders,
                     now: Timestamp) throws(S3Error) -> S3Authentication {
        let items = try SigV4Verifier.parseQuery(rawQuery)
        func parameter(_ name: String) throws(S3Error) -> String? {
            let values = items.filter { $0.name == name }
            guard values.count <= 1 else {
                throw S3Error.invalidArgument("The query parameter \(name) is given \(values.count) times: expected it once.", name: name)
            }
            return values.first?.value
        }
        guard let accessKeyID = try parameter("AWSAccessKeyId"), let expiresText = try parameter("Expires"),
              let signature = try parameter("Signature") else {
            let missing = ["AWSAccessKeyId", "Expires", "Signature"].filter { name in !items.contains { $0.name == name } }
            throw S3Error.accessDenied(
                "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters: missing \(missing.joined(separator: ", ")).")
        }
        guard !expiresText.isEmpty, expiresText.utf8.count <= 12, expiresText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let expires = Int64(expiresText) else {
            throw S3Error.accessDenied("Invalid date (should be seconds since epoch): found Expires \"\(expiresText.prefix(32))\".")
        }
        guard let secret = secrets[accessKeyID] else { throw S3Error.invalidAccessKeyId(accessKeyID) }
        if expires < now.seconds {
            let serverTime = SigV4Verifier.isoSeconds(now)
            let expiry = SigV4Verifier.isoSeconds(Timestamp(secondsSince1970: expires))
            throw S3Error("AccessDenied", status: 403,
                          "Request has expired: it was valid until \(expiry) (Expires \(expires)); the server's time is \(serverTime).",
                          fields: [("Expires", expiry), ("ServerTime", serverTime)])
        }
        let stringsToSign = try Self.stringsToSign(method: method, headers: headers, date: expiresText, rawPath: rawPath,
                                                   rawQuery: rawQuery, hostBucket: hostBucket)
        try check(signature, of: stringsToSign, accessKeyID: accessKeyID, secret: secret)
        return try authentication(accessKeyID, headers: headers)
    }

    /// A browser form signed the V2 way: `signature` is the HMAC-SHA1 of the `policy`
    /// field's base64 text; the policy's expiration and conditions, checked after this,
    /// say how long and for what the form serves.
    func verifyPost(accessKeyID: String, policy: String, signature: String) throws(S3Error) -> String {
        guard let secret = secrets[accessKeyID] else { throw S3Error.invalidAccessKeyId(accessKeyID) }
        let computed = Base64.encode(try Self.hmacSHA1(Array(policy.utf8), secret: secret))
        guard SigV4Verifier.constantTimeEqual(Array(computed.utf8), signature) else {
            throw Self.mismatch(accessKeyID: accessKeyID, signature: signature, stringToSign: String(policy.prefix(SigV4Verifier.maxPolicyEcho)),
                                what: "the policy field (the StringToSign below)")
        }
        return accessKeyID
    }

    // MARK: What is signed

    /// StringToSign: method, `Content-MD5`, `Content-Type`, `date` (the request's `Date`,
    /// empty with `x-amz-date`, or a presigned URL's `Expires`), the canonical `x-amz-*`
    /// headers and the canonical resource; one for each spelling of the resource clients
    /// sign (``canonicalizedResources(rawPath:rawQuery:hostBucket:)``), the usual first.
    static func stringsToSign(method: String, headers: HTTPHeaders, date: String, rawPath: [UInt8], rawQuery: [UInt8],
                              hostBucket: String?) throws(S3Error) -> [String] {
        var head = method + "\n"
        head += (headers["content-md5"].map { String(ASCIIText.trimmed($0)) } ?? "") + "\n"
        head += (headers["content-type"].map { String(ASCIIText.trimmed($0)) } ?? "") + "\n"
        head += date + "\n"
        head += canonicalizedAmzHeaders(headers)
        return try canonicalizedResources(rawPath: rawPath, rawQuery: rawQuery, hostBucket: hostBucket).map { head + $0 }
    }

    /// Every `x-amz-*` header, lower-cased, sorted by name, values of one name joined by
    /// "," (each trimmed; inner spaces kept, as boto and RGW keep them), one `name:value\n`
    /// each. (HTTP/1.1 no longer allows folded lines, which the parser refuses.)
    static func canonicalizedAmzHeaders(_ headers: HTTPHeaders) -> String {
        var byName: [String: [String]] = [:]
        for field in headers.fields {
            let name = field.name.lowercased()
            guard SigV4Verifier.isAmzHeader(name) else { continue }
            byName[name, default: []].append(ASCIIText.trimmed(field.value))
        }
        var out = ""
        for name in byName.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            out += name + ":" + (byName[name] ?? []).joined(separator: ",") + "\n"
        }
        return out
    }

    /// `/bucket` when `Host` named the bucket, the path exactly as sent (escapes and their
    /// case kept), `/` for an empty one, then `?` and the signed sub-resources sorted by
    /// name, each with `=` and its decoded value when the query gave it a non-empty one.
    ///
    /// A path-style request for a bucket alone (`/bucket`) has two spellings, both
    /// answered: `/bucket/`, as a virtual-hosted one has it and boto, botocore and s3cmd
    /// sign it, then `/bucket` as sent, which rclone signs. Either names the
    /// same resource, so accepting both grants nothing more; the second costs an HMAC only
    /// when the first does not match.
    static func canonicalizedResources(rawPath: [UInt8], rawQuery: [UInt8], hostBucket: String?) throws(S3Error) -> [String] {
        let path = (hostBucket.map { "/" + $0 } ?? "") + (rawPath.isEmpty ? "/" : String(decoding: rawPath, as: UTF8.self))
        let subresources = try signedSubresourcesText(rawQuery)
        if hostBucket == nil, rawPath.count > 1, !rawPath.dropFirst().contains(UInt8(ascii: "/")) {
            return [path + "/" + subresources, path + subresources]
        }
        return [path + subresources]
    }

    /// The usual spelling of ``canonicalizedResources(rawPath:rawQuery:hostBucket:)``.
    static func canonicalizedResource(rawPath: [UInt8], rawQuery: [UInt8], hostBucket: String?) throws(S3Error) -> String {
        try canonicalizedResources(rawPath: rawPath, rawQuery: rawQuery, hostBucket: hostBucket)[0]
    }

    /// `?` and the signed sub-resources, or nothing.
    private static func signedSubresourcesText(_ rawQuery: [UInt8]) throws(S3Error) -> String {
        var signed: [(name: String, value: String?, order: Int)] = []
        for (order, piece) in rawQuery.split(separator: UInt8(ascii: "&")).enumerated() {
            let eq = piece.firstIndex(of: UInt8(ascii: "="))
            let rawName = eq.map { piece[..<$0] } ?? piece[...]
            // Names are compared as sent: every signed sub-resource is plain ASCII.
            let name = String(decoding: rawName, as: UTF8.self)
            guard signedSubresources.contains(name) else { continue }
            var value: String?
            // An empty value (`uploads=`, as rclone sends it) is signed as the name alone,
            // as AWS's own SDKs sign it.
            if let eq, piece.index(after: eq) < piece.endIndex {
                guard let decoded = PercentEncoding.decode(piece[piece.index(after: eq)...]) else {
                    throw S3Error("InvalidURI", status: 400,
                                  "Couldn't parse the specified URI: the query item \"\(String(decoding: piece.prefix(64), as: UTF8.self))\" has a \"%\" not followed by two hex digits.")
                }
                value = String(decoding: decoded, as: UTF8.self)
            }
            signed.append((name, value, order))
        }
        guard !signed.isEmpty else { return "" }
        signed.sort { $0.name != $1.name ? $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) : $0.order < $1.order }
        return "?" + signed.map { item in item.value.map { "\(item.name)=\($0)" } ?? item.name }.joined(separator: "&")
    }

    // MARK: Pieces

    /// A V2 date: an HTTP date or RFC 5322's (``SigV4Verifier/parseDateHeader(_:)``), or
    /// the ISO 8601 basic form some clients put in `x-amz-date`.
    static func parseDate(_ text: String) -> Timestamp? {
        SigV4Verifier.parseDateHeader(text) ?? SigV4Verifier.parseAmzDate(text)
    }

    /// Refuses `signature` unless it is the base64 HMAC-SHA1 of one of `stringsToSign`
    /// under `secret`, compared in constant time; the refusal shows the first.
    private func check(_ signature: String, of stringsToSign: [String], accessKeyID: String, secret: String) throws(S3Error) {
        for stringToSign in stringsToSign {
            let computed = Base64.encode(try Self.hmacSHA1(Array(stringToSign.utf8), secret: secret))
            if SigV4Verifier.constantTimeEqual(Array(computed.utf8), signature) { return }
        }
        throw Self.mismatch(accessKeyID: accessKeyID, signature: signature, stringToSign: stringsToSign.first ?? "",
                            what: "the StringToSign below")
    }

    /// S3's V2 `SignatureDoesNotMatch`: the access key, the StringToSign and its bytes in
    /// hex (so that a client can see a stray byte), the signature provided.
    static func mismatch(accessKeyID: String, signature: String, stringToSign: String, what: String) -> S3Error {
        let bytes = stringToSign.utf8.map { Hex.encode([$0]) }.joined(separator: " ")
        return S3Error("SignatureDoesNotMatch", status: 403,
                       "The request signature we calculated does not match the signature you provided. Check your key and signing method: the server signed \(what) with HMAC-SHA1 (Signature Version 2) and the secret of \(accessKeyID.prefix(128)), and found a different signature (\(signature.prefix(64))).",
                       fields: [("AWSAccessKeyId", String(accessKeyID.prefix(128))), ("StringToSign", stringToSign),
                                ("SignatureProvided", String(signature.prefix(64))), ("StringToSignBytes", bytes)])
    }

    /// What the body decoder needs: V2 signs no body, so the body is checked only against
    /// the digests the request names (`x-amz-content-sha256` when it is a hash, which V2
    /// signs as an `x-amz-*` header; `Content-MD5`; `x-amz-checksum-*`).
    private func authentication(_ accessKeyID: String, headers: HTTPHeaders) throws(S3Error) -> S3Authentication {
        var payload = PayloadMode.unsigned
        if let text = headers["x-amz-content-sha256"].map({ ASCIIText.trimmed($0) }) {
            payload = try SigV4Verifier.payloadMode(text, name: "x-amz-content-sha256")
            if case .signedChunks = payload {
                throw S3Error.invalidRequest(
                    "Signed chunks (x-amz-content-sha256 \(text)) chain from a SigV4 signature: expected UNSIGNED-PAYLOAD or the body's hex SHA-256 with Signature Version 2, found \(text).")
            }
        }
        return S3Authentication(accessKeyID: accessKeyID, payload: payload, signingKey: [], scope: "", amzDate: "", seedSignature: "")
    }

    static func hmacSHA1(_ message: [UInt8], secret: String) throws(S3Error) -> [UInt8] {
        do throws(CryptoError) {
            return try HMACSHA1.authenticationCode(for: message, key: Array(secret.utf8))
        } catch {
            throw S3Error.internalError("The server could not compute a signature: \(error.message).")
        }
    }
}
