import PlugboardBytes
import PlugboardCrypto

/// The parts of AWS Signature Version 4 that the signing and the verifying side must
/// compute alike (docs.aws.amazon.com, "Create a signed AWS API request"): the day's
/// signing key, the canonical query, the canonical request and the string to sign.
///
/// S3Storage signs with them and the S3 front end verifies with them, as NIOHTTP1 serves
/// both a client and a server: were each side to write them, a fix to one (the query's
/// order, a separator) could leave the two disagreeing, and every request would fail
/// SignatureDoesNotMatch. What differs between the sides stays with each: where the
/// header lines come from (given, or read from a request's fields), caching of keys,
/// and what a failure becomes.
public enum SigV4 {
    /// The algorithm name, first in the string to sign and in `Authorization`.
    public static let algorithm = "AWS4-HMAC-SHA256"
    /// The hex SHA-256 of no bytes: the payload hash of a request without a body.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// The key for one day's signatures in one region and service: four HMACs from the
    /// secret, the same all day, so each side may keep it for the day.
    public static func signingKey(secret: String, day: String, region: String, service: String) throws(CryptoError) -> [UInt8] {
        var key = try HMACSHA256.authenticationCode(for: Array(day.utf8), key: Array("AWS4\(secret)".utf8))
        for part in [region, service, "aws4_request"] {
            key = try HMACSHA256.authenticationCode(for: Array(part.utf8), key: key)
        }
        return key
    }

    /// The query's items, each name and value `UriEncode`d (RFC 3986 unreserved kept, `/`
    /// encoded), sorted by name and then value in byte order, joined as `n=v&n=v`.
    public static func canonicalQuery(_ items: [(name: [UInt8], value: [UInt8])]) -> String {
        guard !items.isEmpty else { return "" }
        return items
            .map { (PercentEncoding.encode($0.name), PercentEncoding.encode($0.value)) }
            .sorted { $0.0 == $1.0 ? $0.1.utf8.lexicographicallyPrecedes($1.1.utf8) : $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// The canonical request: method, URI, query, header lines (each `name:value\n`, names
    /// lower-case and sorted), signed header names and payload hash, one to a line.
    public static func canonicalRequest(method: String, canonicalURI: [UInt8], canonicalQuery: String,
                                        canonicalHeaders: [UInt8], signedHeaders: String, payloadHash: String) -> [UInt8] {
        var request: [UInt8] = []
        request.reserveCapacity(method.utf8.count + canonicalURI.count + canonicalQuery.utf8.count + canonicalHeaders.count
                                + signedHeaders.utf8.count + payloadHash.utf8.count + 5)
        request.append(contentsOf: method.utf8)
        request.append(UInt8(ascii: "\n"))
        request.append(contentsOf: canonicalURI)
        request.append(UInt8(ascii: "\n"))
        request.append(contentsOf: canonicalQuery.utf8)
        request.append(UInt8(ascii: "\n"))
        request.append(contentsOf: canonicalHeaders)
        request.append(UInt8(ascii: "\n"))
        request.append(contentsOf: signedHeaders.utf8)
        request.append(UInt8(ascii: "\n"))
        request.append(contentsOf: payloadHash.utf8)
        return request
    }

    /// The credential scope: `20130524/us-east-1/s3/aws4_request`.
    public static func scope(day: String, region: String, service: String) -> String {
        "\(day)/\(region)/\(service)/aws4_request"
    }

    /// The string to sign: the algorithm, the request's time stamp, the scope and the hex
    /// SHA-256 of the canonical request, one to a line.
    public static func stringToSign(amzDate: String, scope: String, canonicalRequest: [UInt8]) throws(CryptoError) -> [UInt8] {
        let hash = try SHA256Hasher.hash(canonicalRequest)
        var text: [UInt8] = []
        text.reserveCapacity(algorithm.utf8.count + amzDate.utf8.count + scope.utf8.count + 2 * hash.count + 3)
        text.append(contentsOf: algorithm.utf8)
        text.append(UInt8(ascii: "\n"))
        text.append(contentsOf: amzDate.utf8)
        text.append(UInt8(ascii: "\n"))
        text.append(contentsOf: scope.utf8)
        text.append(UInt8(ascii: "\n"))
        HexDigits.appendLower(hash, to: &text)
        return text
    }
}
