import PlugboardAPI
import PlugboardBytes
import PlugboardConcurrency
import PlugboardCrypto
import PlugboardHTTP
import PlugboardHost
import PlugboardSigV4

/// What `x-amz-content-sha256` (or a presigned URL's `X-Amz-Content-Sha256`) says about
/// the body, and so how ``S3BodyDecoder`` reads and checks it.
public enum PayloadMode: Sendable, Equatable {
    /// `UNSIGNED-PAYLOAD`: the body is not covered by the signature.
    case unsigned
    /// A lower-case hex SHA-256: the body must hash to it.
    case sha256(String)
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`: `aws-chunked` framing, each chunk
    /// signed, chained from the request's (seed) signature; with `trailer`, a signed
    /// trailer carries the checksum named by `x-amz-trailer`.
    case signedChunks(trailer: Bool)
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: `aws-chunked` framing without signatures,
    /// then a trailer with the checksum named by `x-amz-trailer`.
    case unsignedChunksWithTrailer
}

/// A request whose signature was verified: who signed it, and what the body decoder needs
/// to check the body (the chunk signatures chain from the request's signature).
public struct S3Authentication: Sendable {
    public let accessKeyID: String
    public let payload: PayloadMode
    /// The region the request's credential scope names (what a server without a fixed
    /// region answers as its own).
    public var region: String {
        let parts = scope.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 4 ? String(parts[1]) : ""
    }
    /// The day's signing key (HMACs of the secret, date, region, `s3`, `aws4_request`),
    /// ready for the chunks' signatures.
    let signingKey: HMACSHA256Key
    /// `20130524/us-east-1/s3/aws4_request`.
    let scope: String
    /// `20130524T000000Z`, the request's signing time.
    let amzDate: String
    /// The request's signature: the first chunk's "previous signature".
    let seedSignature: String

    /// With the signing key's bytes, made ready here (the verifier hands over the key it
    /// keeps ready for the day).
    init(accessKeyID: String, payload: PayloadMode, signingKey: [UInt8], scope: String, amzDate: String, seedSignature: String) {
        self.init(accessKeyID: accessKeyID, payload: payload, signingKey: HMACSHA256Key(signingKey), scope: scope, amzDate: amzDate,
                  seedSignature: seedSignature)
    }

    init(accessKeyID: String, payload: PayloadMode, signingKey: HMACSHA256Key, scope: String, amzDate: String, seedSignature: String) {
        self.accessKeyID = accessKeyID
        self.payload = payload
        self.signingKey = signingKey
        self.scope = scope
        self.amzDate = amzDate
        self.seedSignature = seedSignature
    }
}

/// Verifies AWS Signature Version 4 as S3 checks it: the `Authorization` header form and
/// the presigned-URL (query string) form, with S3's error codes and messages that name
/// what was expected and what was found.
///
/// Refused: anonymous requests (`AccessDenied`), Signature Version 2 (`InvalidRequest`,
/// saying how to switch the SDK to SigV4) unless the endpoint serves it (``SigV2Verifier``,
/// opt in), several `Authorization` headers or two
/// mechanisms at once, unknown keys, a scope for another service, region or day, a
/// request time off by more than `maxSkewSeconds`, an expired presigned URL, unsigned
/// `x-amz-*` headers, and any signature that does not match (compared in constant time).
public struct SigV4Verifier: Sendable {
    static let algorithm = SigV4.algorithm
    static let emptySHA256 = SigV4.emptyPayloadHash

    private let secrets: [String: String]
    let region: String?
    let maxSkewSeconds: Int
    /// Signature Version 2's verifier when the endpoint serves it (opt in); nil answers
    /// V2 with `InvalidRequest`, as AWS does.
    let signatureV2: SigV2Verifier?
    /// The signing keys of scopes that signed a request which verified, so that the next
    /// request of the day costs one HMAC rather than five: the key changes only with the
    /// day (and the region). Bounded by ``signingKeyCacheLimit``; filled only after a
    /// signature matched, so requests that fail cannot churn it.
    private let signingKeys = LockedValueBox<[SigningScope: HMACSHA256Key]>([:])
    static let signingKeyCacheLimit = 64

    /// What a signing key is derived from, besides the secret (which the access key names).
    struct SigningScope: Hashable {
        var accessKeyID: String
        var day: String
        var region: String
    }

    /// region nil: any region in the credential scope is accepted (answered as-is); else it must match.
    /// signatureV2: serve Signature Version 2 as well (``SigV2Verifier``), with the same
    /// keys and clock skew.
    public init(credentials: [S3Credential], region: String?, maxSkewSeconds: Int = 900, signatureV2: Bool = false) {
        var secrets: [String: String] = [:]
        for credential in credentials where secrets[credential.accessKeyID] == nil {
            secrets[credential.accessKeyID] = credential.secretAccessKey
        }
        self.secrets = secrets
        self.region = region
        self.maxSkewSeconds = maxSkewSeconds
        self.signatureV2 = signatureV2 ? SigV2Verifier(secrets: secrets, maxSkewSeconds: maxSkewSeconds) : nil
    }

    /// rawTarget: the request target exactly as received (percent-encoded path, then "?" and the raw query, if any).
    /// headers: the request's fields (lower-cased names, values as sent).
    /// hostBucket: the bucket when `Host` named it (virtual-hosted style), which Signature
    /// Version 2 signs in front of the path.
    public func authenticate(method: String, rawTarget: String, headers: HTTPHeaders, now: Timestamp,
                             hostBucket: String? = nil) throws(S3Error) -> S3Authentication {
        let bytes = Array(rawTarget.utf8)
        let mark = bytes.firstIndex(of: UInt8(ascii: "?"))
        let rawPath = mark.map { Array(bytes[..<$0]) } ?? bytes
        let rawQuery = mark.map { Array(bytes[($0 + 1)...]) } ?? []
        let query = try Self.parseQuery(rawQuery)
        let authorizations = headers.values("authorization")
        let presigned = query.contains { ["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature"].contains($0.name) }

        guard authorizations.count <= 1 else {
            throw S3Error.invalidArgument(
                "Only one Authorization header is allowed: expected one, found \(authorizations.count).", name: "Authorization")
        }
        if let authorization = authorizations.first {
            if presigned { throw Self.twoMechanisms(authorization) }
            let text = ASCIIText.trimmed(authorization)
            if let components = Self.algorithmComponents(text) {
                return try verifyHeaderForm(components, method: method, rawPath: rawPath,
                                            query: query, headers: headers, now: now)
            }
            if text.hasPrefix("AWS ") {
                guard let signatureV2 else { throw Self.signatureVersion2("an Authorization header \"AWS <key>:<signature>\"") }
                if query.contains(where: { $0.name == "Signature" || $0.name == "AWSAccessKeyId" }) {
                    throw Self.twoMechanisms(authorization)
                }
                return try signatureV2.verifyHeader(text.dropFirst(4), method: method, rawPath: rawPath, rawQuery: rawQuery,
                                                    hostBucket: hostBucket, headers: headers, now: now)
            }
            throw S3Error.invalidArgument(
                "Unsupported Authorization Type: expected \"\(Self.algorithm) Credential=..., SignedHeaders=..., Signature=...\", found \"\(text.prefix(40))\".",
                name: "Authorization", value: String(text.prefix(64)))
        }
        if presigned {
            return try verifyQueryForm(method: method, rawPath: rawPath, query: query, headers: headers, now: now)
        }
        if query.contains(where: { $0.name == "AWSAccessKeyId" || $0.name == "Signature" }) {
            guard let signatureV2 else { throw Self.signatureVersion2("a presigned URL with AWSAccessKeyId= and Signature=") }
            return try signatureV2.verifyQuery(method: method, rawPath: rawPath, rawQuery: rawQuery, hostBucket: hostBucket,
                                               headers: headers, now: now)
        }
        throw S3Error.accessDenied(
            "Access Denied: anonymous requests are refused: sign with SigV4 (an \"Authorization: \(Self.algorithm) ...\" header, or a presigned URL's X-Amz-* parameters) with one of the server's access keys.")
    }

    /// What follows `AWS4-HMAC-SHA256` and a space or tab in `text`, or nil when it does not
    /// start so. Over bytes when `text` is ASCII, where that is the Character comparison.
    static func algorithmComponents(_ text: String) -> Substring? {
        guard isASCII(text) else {
            guard text.hasPrefix(Self.algorithm + " ") || text.hasPrefix(Self.algorithm + "\t") else { return nil }
            return text.dropFirst(Self.algorithm.count)
        }
        let count = Self.algorithm.utf8.count
        var copy = text
        let follows = copy.withUTF8 { bytes in
            bytes.count > count && hasPrefix(bytes, algorithmBytes)
                && (bytes[count] == UInt8(ascii: " ") || bytes[count] == UInt8(ascii: "\t"))
        }
        return follows ? text[text.utf8.index(text.startIndex, offsetBy: count)...] : nil
    }

    private static let algorithmBytes = Array(algorithm.utf8)
    private static let amzHeaderPrefix = Array("x-amz-".utf8)

    /// Whether `bytes` start with `prefix`.
    static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ prefix: [UInt8]) -> Bool {
        guard bytes.count >= prefix.count else { return false }
        for i in 0..<prefix.count where bytes[i] != prefix[i] { return false }
        return true
    }

    static func twoMechanisms(_ authorization: String) -> S3Error {
        S3Error.invalidArgument(
            "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified: found both an Authorization header and signature query parameters.",
            name: "Authorization", value: authorization)
    }

    static func signatureVersion2(_ found: String) -> S3Error {
        S3Error("InvalidRequest", status: 400,
                "The authorization mechanism you have provided is not supported: Signature Version 2 is not supported by this endpoint (found \(found)); sign with SigV4: boto3 Config(signature_version='s3v4'), aws configure set default.s3.signature_version s3v4.")
    }

    // MARK: The two forms

    enum Form {
        case header, query

        func malformed(_ message: String, fields: [(String, String)] = []) -> S3Error {
            switch self {
            case .header:
                S3Error("AuthorizationHeaderMalformed", status: 400, "The authorization header is malformed; \(message)", fields: fields)
            case .query:
                S3Error("AuthorizationQueryParametersError", status: 400, message, fields: fields)
            }
        }
    }

    private func verifyHeaderForm(_ components: Substring, method: String, rawPath: [UInt8], query: [QueryItem],
                                  headers: HTTPHeaders, now: Timestamp) throws(S3Error) -> S3Authentication {
        var credential: String?
        var signedHeaders: String?
        var signature: String?
        func withoutEquals(_ item: String) -> S3Error {
            Form.header.malformed(
                "the authorization header requires three components: Credential, SignedHeaders, and Signature; found \"\(item.prefix(64))\" without \"=\".")
        }
        func take(_ key: String, _ value: String) throws(S3Error) {
            func set(_ slot: inout String?) throws(S3Error) {
                guard slot == nil else { throw Form.header.malformed("the component \(key) is given twice.") }
                slot = value
            }
            switch key {
            case "Credential": try set(&credential)
            case "SignedHeaders": try set(&signedHeaders)
            case "Signature": try set(&signature)
            default:
                throw Form.header.malformed(
                    "the authorization header requires three components: Credential, SignedHeaders, and Signature; found an unknown component \"\(key.prefix(32))\".")
            }
        }
        var componentText = components
        let bytes = componentText.withUTF8 { Array($0) }
        if Self.isASCII(bytes) {
            // Cut at the commas and the first "=" of each item, by byte (see isASCII).
            var start = 0
            while true {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: ",")) ?? bytes.count
                let item = Self.trimmed(bytes, start..<end)
                guard let eq = bytes[item].firstIndex(of: UInt8(ascii: "=")) else {
                    throw withoutEquals(String(decoding: bytes[item], as: UTF8.self))
                }
                try take(String(decoding: bytes[Self.trimmed(bytes, item.lowerBound..<eq)], as: UTF8.self),
                         String(decoding: bytes[Self.trimmed(bytes, (eq + 1)..<item.upperBound)], as: UTF8.self))
                guard end < bytes.count else { break }
                start = end + 1
            }
        } else {
            for part in components.split(separator: ",", omittingEmptySubsequences: false) {
                let item = String(ASCIIText.trimmed(part))
                guard let eq = item.firstIndex(of: "=") else { throw withoutEquals(item) }
                try take(String(ASCIIText.trimmed(item[..<eq])), String(ASCIIText.trimmed(item[item.index(after: eq)...])))
            }
        }
        guard let credential, let signedHeaders, let signature else {
            let missing = [("Credential", credential), ("SignedHeaders", signedHeaders), ("Signature", signature)]
                .filter { $0.1 == nil }.map(\.0).joined(separator: ", ")
            throw Form.header.malformed(
                "the authorization header requires three components: Credential, SignedHeaders, and Signature; missing: \(missing).")
        }
        guard let payloadText = headers["x-amz-content-sha256"].map({ ASCIIText.trimmed($0) }) else {
            throw S3Error.invalidRequest(
                "Missing required header for this request: x-amz-content-sha256 (expected UNSIGNED-PAYLOAD, a STREAMING-* value or the body's hex SHA-256; found none).")
        }
        let payload = try Self.payloadMode(payloadText, name: "x-amz-content-sha256")
        let signedNames = try Self.parseSignedHeaders(signedHeaders, form: .header)

        // The signing time: x-amz-date, or Date when that is what was signed.
        let amzDate: String
        let dateSource: String
        let requestTime: Timestamp?
        if let value = headers["x-amz-date"] {
            let trimmed = ASCIIText.trimmed(value)
            guard let time = Self.parseAmzDate(trimmed) else {
                throw S3Error.accessDenied(
                    "AWS authentication requires a valid Date or x-amz-date header: expected x-amz-date as yyyyMMdd'T'HHmmss'Z' (20130524T000000Z), found \"\(value.prefix(40))\".")
            }
            amzDate = trimmed
            dateSource = "x-amz-date"
            requestTime = time
        } else if let value = headers["date"], signedNames.contains("date") {
            // The signature covers the header as sent; only the time is read from it.
            guard let time = Self.parseDateHeader(ASCIIText.trimmed(value)) else {
                throw S3Error.accessDenied(
                    "AWS authentication requires a valid Date or x-amz-date header: expected an RFC 2822 or HTTP date (Fri, 24 May 2013 00:00:00 GMT, or with a numeric zone such as -0000 or +0130), found \"\(value.prefix(40))\".")
            }
            amzDate = Self.amzStamp(time)
            dateSource = "Date"
            requestTime = Self.parseAmzDate(amzDate)
        } else {
            throw S3Error.accessDenied("AWS authentication requires a valid Date or x-amz-date header: found neither (or a Date that is not signed).")
        }

        let unsigned = headers.fields.lazy.map(\.name).filter { Self.isAmzHeader($0) && !signedNames.contains($0) }
        if !unsigned.isEmpty {
            var names: [String] = []
            for name in unsigned where !names.contains(name) { names.append(name) }
            throw S3Error("AccessDenied", status: 403,
                          "There were headers present in the request which were not signed: \(names.joined(separator: ", ")) (every x-amz-* header must be named in SignedHeaders).",
                          fields: [("HeadersNotSigned", names.joined(separator: ", "))])
        }

        return try verify(form: .header, credential: credential, signedHeaders: signedHeaders, signedNames: signedNames,
                          signature: signature, amzDate: amzDate, requestTime: requestTime, dateSource: dateSource, expires: nil,
                          payload: payload, payloadText: payloadText, method: method, rawPath: rawPath,
                          query: query, headers: headers, now: now)
    }

    private func verifyQueryForm(method: String, rawPath: [UInt8], query: [QueryItem], headers: HTTPHeaders,
                                 now: Timestamp) throws(S3Error) -> S3Authentication {
        func parameter(_ name: String) throws(S3Error) -> String? {
            let values = query.filter { $0.name == name }
            guard values.count <= 1 else {
                throw Form.query.malformed("The query parameter \(name) is given \(values.count) times: expected it once.")
            }
            return values.first?.value
        }
        let required = "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters"
        guard let algorithm = try parameter("X-Amz-Algorithm"), let credential = try parameter("X-Amz-Credential"),
              let signature = try parameter("X-Amz-Signature"), let date = try parameter("X-Amz-Date"),
              let signedHeaders = try parameter("X-Amz-SignedHeaders"), let expiresText = try parameter("X-Amz-Expires") else {
            let missing = ["X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"]
                .filter { name in !query.contains { $0.name == name } }
            throw Form.query.malformed("\(required): missing \(missing.joined(separator: ", ")).")
        }
        guard algorithm == Self.algorithm else {
            throw Form.query.malformed("X-Amz-Algorithm only supports \"\(Self.algorithm)\": found \"\(algorithm.prefix(40))\".")
        }
        guard let requestTime = Self.parseAmzDate(date) else {
            throw Form.query.malformed(
                "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\" (20130524T000000Z): found \"\(date.prefix(40))\".")
        }
        // AWS's own words for a negative value, which is a number but not a duration.
        if expiresText.hasPrefix("-"), expiresText.utf8.count > 1, expiresText.utf8.dropFirst().allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            throw Form.query.malformed("X-Amz-Expires must be non-negative: found \(expiresText.prefix(20)).")
        }
        guard !expiresText.isEmpty, expiresText.utf8.count <= 10, expiresText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              let expires = Int(expiresText) else {
            throw Form.query.malformed("X-Amz-Expires should be a number of seconds: found \"\(expiresText.prefix(20))\".")
        }
        guard expires >= 1 else { throw Form.query.malformed("X-Amz-Expires must be non-negative and at least 1 second: found \(expires).") }
        guard expires <= 604_800 else {
            throw Form.query.malformed("X-Amz-Expires must be less than a week (in seconds) that is 604800: found \(expires).")
        }
        let payloadText = try parameter("X-Amz-Content-Sha256") ?? "UNSIGNED-PAYLOAD"
        let payload = try Self.payloadMode(payloadText, name: "X-Amz-Content-Sha256")
        if case .signedChunks = payload {
            throw S3Error.invalidRequest(
                "A presigned URL cannot carry signed chunks: expected X-Amz-Content-Sha256 UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER or a hex SHA-256, found \(payloadText).")
        }
        let signedNames = try Self.parseSignedHeaders(signedHeaders, form: .query)
        return try verify(form: .query, credential: credential, signedHeaders: signedHeaders, signedNames: signedNames,
                          signature: signature, amzDate: date, requestTime: requestTime, dateSource: "X-Amz-Date", expires: expires,
                          payload: payload, payloadText: payloadText, method: method, rawPath: rawPath,
                          query: query.filter { $0.name != "X-Amz-Signature" }, headers: headers, now: now)
    }

    // MARK: What both forms check

    /// requestTime: `amzDate` read as a time (nil if it does not read, which is refused
    /// once the scope has been checked).
    private func verify(form: Form, credential: String, signedHeaders: String, signedNames: [String], signature: String,
                        amzDate: String, requestTime: Timestamp?, dateSource: String, expires: Int?, payload: PayloadMode, payloadText: String,
                        method: String, rawPath: [UInt8], query: [QueryItem], headers: HTTPHeaders,
                        now: Timestamp) throws(S3Error) -> S3Authentication {
        // Credential=AKID/20130524/us-east-1/s3/aws4_request
        let parts = Self.splitASCII(credential, separator: UInt8(ascii: "/"))
            ?? credential.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 5, !parts[0].isEmpty else {
            throw form.malformed(
                "the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\", found \"\(credential.prefix(128))\".")
        }
        let n = parts.count
        let accessKeyID = n == 5 ? parts[0] : parts[..<(n - 4)].joined(separator: "/")
        let (day, scopeRegion, service, terminator) = (parts[n - 4], parts[n - 3], parts[n - 2], parts[n - 1])
        guard terminator == "aws4_request" else {
            throw form.malformed("the credential scope's terminal \"\(terminator.prefix(32))\" is wrong; expecting \"aws4_request\".")
        }
        guard service == "s3" else {
            throw form.malformed("incorrect service \"\(service.prefix(32))\" in the credential scope; expecting \"s3\".")
        }
        if let region, scopeRegion != region {
            throw form.malformed("the region \"\(scopeRegion.prefix(32))\" is wrong; expecting \"\(region)\".", fields: [("Region", region)])
        }
        guard !scopeRegion.isEmpty else {
            throw form.malformed("the credential scope names no region; expecting \"\(region ?? "us-east-1")\".")
        }
        guard let secret = secrets[accessKeyID] else { throw S3Error.invalidAccessKeyId(accessKeyID) }
        guard day == String(amzDate.prefix(8)) else {
            throw form.malformed(
                "Invalid credential date \"\(day.prefix(16))\": it must be the day of the request's \(dateSource), \(amzDate.prefix(8)).")
        }
        guard let requestTime else {
            throw S3Error.accessDenied("AWS authentication requires a valid Date or x-amz-date header: found \"\(amzDate.prefix(40))\".")
        }

        // Only refusals show the server's time.
        var serverTime: String { Self.isoSeconds(now) }
        if let expires {
            if requestTime.seconds > now.seconds + Int64(maxSkewSeconds) {
                throw S3Error.accessDenied(
                    "Request is not valid yet: its X-Amz-Date \(Self.isoSeconds(requestTime)) is more than \(maxSkewSeconds) seconds after the server's time \(serverTime).")
            }
            let expiry = Timestamp(secondsSince1970: requestTime.seconds + Int64(expires))
            if expiry.seconds < now.seconds {
                throw S3Error("AccessDenied", status: 403,
                              "Request has expired: it was valid until \(Self.isoSeconds(expiry)) (X-Amz-Date \(Self.isoSeconds(requestTime)) plus X-Amz-Expires \(expires) seconds); the server's time is \(serverTime).",
                              fields: [("X-Amz-Expires", String(expires)), ("Expires", Self.isoSeconds(expiry)), ("ServerTime", serverTime)])
            }
        } else {
            let skew = requestTime.seconds - now.seconds
            if skew.magnitude > UInt64(max(maxSkewSeconds, 0)) {
                throw S3Error("RequestTimeTooSkewed", status: 403,
                              "The difference between the request time and the current time is too large: the request's \(dateSource) is \(Self.isoSeconds(requestTime)), the server's time is \(serverTime) (\(skew.magnitude) seconds apart; at most \(maxSkewSeconds) are allowed).",
                              fields: [("RequestTime", amzDate), ("ServerTime", serverTime),
                                       ("MaxAllowedSkewMilliseconds", String(maxSkewSeconds * 1000))])
            }
        }

        // The canonical request, built as bytes: the header lines first (a signed header
        // that is absent is refused before the path is read).
        var headerLines: [UInt8] = []
        headerLines.reserveCapacity(64 * signedNames.count)
        // Made once: the head keeps its fields as bytes, and `fields` makes their strings.
        let fields = headers.fields
        for name in signedNames {
            var found = false
            for field in fields where field.name == name {
                if found {
                    headerLines.append(UInt8(ascii: ","))
                } else {
                    headerLines.append(contentsOf: name.utf8)
                    headerLines.append(UInt8(ascii: ":"))
                    found = true
                }
                Self.appendCanonicalValue(field.value, to: &headerLines)
            }
            guard found else {
                throw form.malformed("the header \"\(name.prefix(64))\" is named in SignedHeaders but absent from the request.")
            }
            headerLines.append(UInt8(ascii: "\n"))
        }
        let canonicalRequest = SigV4.canonicalRequest(
            method: method, canonicalURI: try Self.canonicalURIBytes(rawPath),
            canonicalQuery: SigV4.canonicalQuery(query.map { ($0.nameBytes, $0.valueBytes) }),
            canonicalHeaders: headerLines, signedHeaders: signedHeaders, payloadHash: payloadText)
        // `SigV4.scope(day:region:service: "s3")`, which is what the credential holds after
        // the key and its "/" (its parts were cut at "/", the service and the terminator
        // checked, and no other spelling of "s3" or "aws4_request" is equal to them): one
        // copy, rather than a string built for every request.
        let scope = String(credential[credential.utf8.index(credential.startIndex, offsetBy: accessKeyID.utf8.count + 1)...])
        let stringToSign: [UInt8]
        do throws(CryptoError) {
            stringToSign = try SigV4.stringToSign(amzDate: amzDate, scope: scope, canonicalRequest: canonicalRequest)
        } catch {
            throw S3Error.internalError("The server could not compute a SHA-256 digest: \(error.message).")
        }

        let signingScope = SigningScope(accessKeyID: accessKeyID, day: day, region: scopeRegion)
        let cached = signingKeys.withLock { $0[signingScope] }
        let key: HMACSHA256Key
        if let cached {
            key = cached
        } else {
            key = try Self.signingKey(secret: secret, day: day, region: scopeRegion)
        }
        var computed: [UInt8] = []
        computed.reserveCapacity(2 * HMACSHA256.byteCount)
        HexDigits.appendLower(try Self.hmac(stringToSign, key: key), to: &computed)
        guard Self.constantTimeEqual(computed, signature) else {
            let stringToSign = String(decoding: stringToSign, as: UTF8.self)
            let canonicalRequest = String(decoding: canonicalRequest, as: UTF8.self)
            var error = S3Error.signatureDoesNotMatch(
                "The request signature we calculated does not match the signature you provided. Check your key and signing method: the server signed the StringToSign and CanonicalRequest below with the secret of \(accessKeyID.prefix(128)), and found a different Signature (\(signature.prefix(64))).",
                stringToSign: stringToSign, canonicalRequest: canonicalRequest)
            error.fields.insert(("AWSAccessKeyId", String(accessKeyID.prefix(128))), at: 0)
            error.fields.insert(("SignatureProvided", String(signature.prefix(64))), at: 2)
            throw error
        }
        if cached == nil {
            signingKeys.withLock { keys in
                if keys.count >= Self.signingKeyCacheLimit { keys.removeAll(keepingCapacity: true) }
                keys[signingScope] = key
            }
        }
        return S3Authentication(accessKeyID: accessKeyID, payload: payload, signingKey: key, scope: scope,
                                amzDate: amzDate, seedSignature: String(decoding: computed, as: UTF8.self))
    }

    /// HMACs of the secret, the day, the region, `s3` and `aws4_request`.
    static func signingKey(secret: String, day: String, region: String) throws(S3Error) -> HMACSHA256Key {
        do throws(CryptoError) {
            return HMACSHA256Key(try SigV4.signingKey(secret: secret, day: day, region: region, service: "s3"))
        } catch {
            throw S3Error.internalError("The server could not compute a signature: \(error.message).")
        }
    }

    /// The signing key of `scope` for what is signed outside a request's head (a POST
    /// policy, SigV4Verifier+PostPolicy.swift): `InvalidAccessKeyId` for a key the server
    /// does not have. `remember` keeps it once a signature made with it matched, as
    /// ``verify`` does.
    func signingKey(_ scope: SigningScope) throws(S3Error) -> (key: HMACSHA256Key, remember: () -> Void) {
        guard let secret = secrets[scope.accessKeyID] else { throw S3Error.invalidAccessKeyId(scope.accessKeyID) }
        if let cached = signingKeys.withLock({ $0[scope] }) { return (cached, {}) }
        let key = try Self.signingKey(secret: secret, day: scope.day, region: scope.region)
        return (key, {
            signingKeys.withLock { keys in
                if keys.count >= Self.signingKeyCacheLimit { keys.removeAll(keepingCapacity: true) }
                keys[scope] = key
            }
        })
    }

    /// The SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) throws(S3Error) -> [UInt8] {
        do throws(CryptoError) {
            return try SHA256Hasher.hash(bytes)
        } catch {
            throw S3Error.internalError("The server could not compute a SHA-256 digest: \(error.message).")
        }
    }

    /// The hex SHA-256 of `bytes`.
    static func sha256Hex(_ bytes: [UInt8]) throws(S3Error) -> String {
        do throws(CryptoError) {
            return Hex.encode(try SHA256Hasher.hash(bytes))
        } catch {
            throw S3Error.internalError("The server could not compute a SHA-256 digest: \(error.message).")
        }
    }

    /// HMAC-SHA256 of `message` under `key`.
    static func hmac(_ message: [UInt8], key: HMACSHA256Key) throws(S3Error) -> [UInt8] {
        do throws(CryptoError) {
            return try key.authenticationCode(for: message)
        } catch {
            throw S3Error.internalError("The server could not compute a signature: \(error.message).")
        }
    }

    // MARK: Pieces

    struct QueryItem {
        var name: String
        var value: String
        var nameBytes: [UInt8]
        var valueBytes: [UInt8]
    }

    /// The query's items, decoded (`%XX`, and `+` as a space), in order; a name without
    /// `=` has the empty value.
    static func parseQuery(_ raw: [UInt8]) throws(S3Error) -> [QueryItem] {
        var items: [QueryItem] = []
        for piece in raw.split(separator: UInt8(ascii: "&")) {
            let eq = piece.firstIndex(of: UInt8(ascii: "="))
            let rawName = eq.map { piece[..<$0] } ?? piece[...]
            let rawValue = eq.map { piece[piece.index(after: $0)...] } ?? []
            guard let name = PercentEncoding.decode(rawName, plusAsSpace: true), let value = PercentEncoding.decode(rawValue, plusAsSpace: true) else {
                throw S3Error("InvalidURI", status: 400,
                              "Couldn't parse the specified URI: the query item \"\(String(decoding: piece.prefix(64), as: UTF8.self))\" has a \"%\" not followed by two hex digits.")
            }
            items.append(QueryItem(name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self),
                                   nameBytes: name, valueBytes: value))
        }
        return items
    }

    /// The path percent-decoded, then encoded with S3's `UriEncode` (`/` kept); no dot
    /// segment or `//` is folded, as S3 folds none.
    static func canonicalURI(_ rawPath: [UInt8]) throws(S3Error) -> String {
        String(decoding: try canonicalURIBytes(rawPath), as: UTF8.self)
    }

    /// ``canonicalURI(_:)``'s bytes: each segment's bytes `UriEncode`d, the `/` between
    /// them kept.
    static func canonicalURIBytes(_ rawPath: [UInt8]) throws(S3Error) -> [UInt8] {
        guard let decoded = PercentEncoding.decode(rawPath) else {
            throw S3Error("InvalidURI", status: 400,
                          "Couldn't parse the specified URI: the path has a \"%\" not followed by two hex digits.")
        }
        if decoded.isEmpty { return [UInt8(ascii: "/")] }
        var out: [UInt8] = []
        out.reserveCapacity(decoded.count + decoded.count / 4 + 8)
        for byte in decoded {
            if byte == UInt8(ascii: "/") || PercentEncoding.isUnreserved(byte) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(HexDigits.upper(byte >> 4))
                out.append(HexDigits.upper(byte & 0x0F))
            }
        }
        return out
    }


    static func parseSignedHeaders(_ text: String, form: Form) throws(S3Error) -> [String] {
        let names: [String]
        if let pieces = splitASCII(text, separator: UInt8(ascii: ";")) {
            // An ASCII name without capitals is its own lower case.
            names = pieces.map { $0.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) ? $0.lowercased() : $0 }
        } else {
            names = text.split(separator: ";", omittingEmptySubsequences: false).map { String($0).lowercased() }
        }
        guard !text.isEmpty, !names.contains(where: \.isEmpty) else {
            throw form.malformed("SignedHeaders must be header names separated by \";\" (host;x-amz-date): found \"\(text.prefix(128))\".")
        }
        guard names.contains("host") else {
            throw form.malformed("the host header must be signed: SignedHeaders is \"\(text.prefix(128))\".")
        }
        return names
    }

    static func payloadMode(_ text: String, name: String) throws(S3Error) -> PayloadMode {
        switch text {
        case "UNSIGNED-PAYLOAD": return .unsigned
        case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD": return .signedChunks(trailer: false)
        case "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER": return .signedChunks(trailer: true)
        case "STREAMING-UNSIGNED-PAYLOAD-TRAILER": return .unsignedChunksWithTrailer
        default:
            // Over the contiguous bytes: a `UTF8View` walk goes index by index.
            var copy = text
            let (hex, upper) = copy.withUTF8 { bytes -> (Bool, Bool) in
                guard bytes.count == 64 else { return (false, false) }
                var upper = false
                for byte in bytes {
                    guard HexDigits.value(byte) != nil else { return (false, false) }
                    if byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F") { upper = true }
                }
                return (true, upper)
            }
            guard hex else {
                throw S3Error.invalidArgument(
                    "\(name) must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-UNSIGNED-PAYLOAD-TRAILER or the body's hex SHA-256: found \"\(text.prefix(80))\".",
                    name: name, value: text)
            }
            return .sha256(upper ? text.lowercased() : text)
        }
    }

    /// `20130524T000000Z` as a time; nil for any other shape.
    static func parseAmzDate(_ text: String) -> Timestamp? {
        var text = text
        let iso = text.withUTF8 { b -> String? in
            guard b.count == 16, b[8] == UInt8(ascii: "T"), b[15] == UInt8(ascii: "Z"),
                  b[0..<8].allSatisfy({ $0 >= 48 && $0 <= 57 }), b[9..<15].allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
            // 20130524T000000Z as 2013-05-24T00:00:00Z: each source byte's place, or the separator.
            return String(unsafeUninitializedCapacity: 20) { out in
                var n = 0
                for (i, byte) in b.enumerated() {
                    switch i {
                    case 4, 6: out[n] = UInt8(ascii: "-"); n += 1
                    case 11, 13: out[n] = UInt8(ascii: ":"); n += 1
                    default: break
                    }
                    out[n] = byte
                    n += 1
                }
                return n
            }
        }
        return iso.flatMap { Timestamp(iso8601: $0) }
    }

    /// `20130524T000000Z` for `time`.
    static func amzStamp(_ time: Timestamp) -> String {
        String(time.iso8601.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
    }

    /// `2013-05-24T00:00:00Z`, as S3's error documents write times.
    static func isoSeconds(_ time: Timestamp) -> String { String(time.iso8601.prefix(19)) + "Z" }

    /// Leading and trailing spaces removed, inner runs of spaces folded into one.
    static func canonicalValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// Appends ``canonicalValue(_:)`` of `value`: by byte when `value` is ASCII (where a
    /// space or tab is a Character of its own, see ``isASCII(_:)``).
    static func appendCanonicalValue(_ value: String, to out: inout [UInt8]) {
        var value = value
        let mark = out.count
        let ascii = value.withUTF8 { bytes in
            var pendingSpace = false
            var started = false
            for byte in bytes {
                if byte >= 0x80 { return false }
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                    pendingSpace = started
                } else {
                    if pendingSpace { out.append(UInt8(ascii: " ")) }
                    pendingSpace = false
                    started = true
                    out.append(byte)
                }
            }
            return true
        }
        if !ascii {
            out.removeSubrange(mark...)
            out.append(contentsOf: canonicalValue(value).utf8)
        }
    }

    /// Whether every byte is ASCII. Then cutting, searching and comparing by byte give what
    /// the same operations give by Character: grapheme clusters join, and canonical
    /// equivalence matches, only non-ASCII scalars to ASCII ones (and CR LF holds none of
    /// the separators looked for here).
    static func isASCII(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { $0 < 0x80 }
    }

    static func isASCII(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { $0.allSatisfy { $0 < 0x80 } }
    }

    /// `text` cut at every `separator` (an ASCII byte), empty pieces kept, as
    /// `split(separator:omittingEmptySubsequences: false)` cuts it by Character; nil when
    /// `text` is not ASCII (see ``isASCII(_:)``), for the caller to cut it by Character.
    static func splitASCII(_ text: String, separator: UInt8) -> [String]? {
        var text = text
        return text.withUTF8 { bytes -> [String]? in
            var out: [String] = []
            out.reserveCapacity(8)
            var start = 0
            for i in 0..<bytes.count {
                let byte = bytes[i]
                if byte >= 0x80 { return nil }
                if byte == separator {
                    out.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self))
                    start = i + 1
                }
            }
            out.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[start...]), as: UTF8.self))
            return out
        }
    }

    /// `range` of `bytes` without its leading and trailing spaces and tabs.
    static func trimmed(_ bytes: [UInt8], _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound, upper = range.upperBound
        while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == UInt8(ascii: "\t") { lower += 1 }
        while upper > lower, bytes[upper - 1] == UInt8(ascii: " ") || bytes[upper - 1] == UInt8(ascii: "\t") { upper -= 1 }
        return lower..<upper
    }

    /// `name.hasPrefix("x-amz-")`, by byte unless the byte after the prefix is not ASCII.
    static func isAmzHeader(_ name: String) -> Bool {
        var copy = name
        let count = amzHeaderPrefix.count
        let byByte = copy.withUTF8 { bytes -> Bool? in
            guard hasPrefix(bytes, amzHeaderPrefix) else { return false }
            return bytes.count == count || bytes[count] < 0x80 ? true : nil
        }
        return byByte ?? name.hasPrefix("x-amz-")
    }

    /// Equal texts, compared in constant time (``ConstantTime``, the one comparison).
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        ConstantTime.equal(a.utf8, b.utf8)
    }

    /// `a` equal to the bytes of `b`, compared in constant time (``ConstantTime``).
    static func constantTimeEqual(_ a: [UInt8], _ b: String) -> Bool {
        ConstantTime.equal(a, b.utf8)
    }
}
