import PlugboardBytes
import PlugboardCrypto

/// AWS Signature Version 4 for the `Authorization` header (docs.aws.amazon.com, "Signature
/// Calculations for the Authorization Header"), with SHA-256 and HMAC from libcrypto.
///
/// The caller gives the canonical path (already encoded, `UriEncode` once: S3 paths are
/// not normalized or encoded twice; ``S3URIEncoding/canonicalPath(_:)``), the query as raw name/value pairs (encoded here, as
/// they are in the URL), and every header to sign (`host` and `x-amz-date` included).
public struct SigV4Signer: Sendable {
    public static let algorithm = SigV4.algorithm
    /// The hex SHA-256 of no bytes: the payload hash of a request without a body.
    public static let emptyPayloadHash = SigV4.emptyPayloadHash
    /// The payload hash of a request whose body is not signed (a streamed upload).
    public static let unsignedPayload = "UNSIGNED-PAYLOAD"

    public var accessKeyId: String
    public var secretAccessKey: String
    public var region: String
    public var service: String

    public init(accessKeyId: String, secretAccessKey: String, region: String, service: String) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.region = region
        self.service = service
    }

    /// One signing's inputs and results; the intermediate texts are kept for tests and
    /// for SignatureDoesNotMatch diagnostics (they hold no secret).
    public struct Signed: Sendable {
        public var canonicalRequest: String
        public var stringToSign: String
        public var signedHeaders: String
        public var signature: String
        public var authorization: String
    }

    /// The key for one day's signatures: four HMACs from the secret, the same all day.
    public func signingKey(day: String) throws(CryptoError) -> [UInt8] {
        try SigV4.signingKey(secret: secretAccessKey, day: day, region: region, service: service)
    }

    /// Signs one request; `signingKey`, when given, must be ``signingKey(day:)`` of
    /// `date`'s day (the client keeps it for the day).
    public func sign(method: String, path: String, query: [(String, String)], headers: [(String, String)],
              payloadHash: String, date: AmzDate, signingKey: [UInt8]? = nil) throws(CryptoError) -> Signed {
        var byName: [String: [String]] = [:]
        for (name, value) in headers {
            byName[name.lowercased(), default: []].append(Self.canonicalValue(value))
        }
        let names = byName.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let canonicalHeaders = names.map { "\($0):\(byName[$0, default: []].joined(separator: ","))\n" }.joined()
        let signedHeaders = names.joined(separator: ";")
        let canonicalRequest = SigV4.canonicalRequest(
            method: method, canonicalURI: Array(path.utf8),
            canonicalQuery: SigV4.canonicalQuery(query.map { (Array($0.0.utf8), Array($0.1.utf8)) }),
            canonicalHeaders: Array(canonicalHeaders.utf8), signedHeaders: signedHeaders, payloadHash: payloadHash)
        let scope = SigV4.scope(day: date.day, region: region, service: service)
        let stringToSign = String(decoding: try SigV4.stringToSign(amzDate: date.stamp, scope: scope, canonicalRequest: canonicalRequest),
                                  as: UTF8.self)
        let key: [UInt8]
        if let signingKey {
            key = signingKey
        } else {
            key = try self.signingKey(day: date.day)
        }
        let signature = Hex.encode(try HMACSHA256.authenticationCode(for: Array(stringToSign.utf8), key: key))
        let authorization = "\(Self.algorithm) Credential=\(accessKeyId)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        return Signed(canonicalRequest: String(decoding: canonicalRequest, as: UTF8.self), stringToSign: stringToSign, signedHeaders: signedHeaders,
                      signature: signature, authorization: authorization)
    }

    /// Leading and trailing spaces removed, inner runs of spaces folded into one.
    public static func canonicalValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }
}

/// The signing time: `20130524T000000Z` and its day `20130524`, in UTC.
public struct AmzDate: Sendable, Equatable {
    public var stamp: String
    public var day: String { String(stamp.prefix(8)) }

    public init(stamp: String) { self.stamp = stamp }

    /// The whole second of an ISO 8601 time in UTC (`2013-05-24T00:00:00.000Z`, as
    /// PlugboardAPI's `Timestamp.iso8601` writes it) without separators and fraction.
    public init(iso8601: String) {
        stamp = String(iso8601.prefix(19).filter { $0 != "-" && $0 != ":" }) + "Z"
    }
}
