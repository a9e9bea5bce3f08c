import PlugboardHTTPClient
import PlugboardSigV4

// The values S3HTTPClient takes and answers.

/// One S3 request before signing: the object key (nil for the bucket itself), the query
/// as raw pairs, extra headers to sign, and the body with its SHA-256.
struct S3Request: Sendable {
    var method: String
    var key: String?
    var query: [(String, String)] = []
    var headers: [(String, String)] = []
    var body: [UInt8] = []
    var payloadHash: String = SigV4Signer.emptyPayloadHash
}

/// An answer: status, headers with lower-case names, body: in `body`, or for a 2xx answer
/// asked for as a stream over the plain-HTTP transport, still on the connection in `stream`.
struct S3Response: Sendable {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    var stream: PlainHTTPTransport.ResponseBody? = nil

    init(_ response: HTTPResponse, stream: PlainHTTPTransport.ResponseBody? = nil) {
        status = response.status
        headers = response.headers
        body = response.body
        self.stream = stream
    }

    func header(_ name: String) -> String? { headers[name] }
}

/// One request after signing: the Host header as signed, the encoded path and query, the
/// other headers (with Authorization), the body.
struct SignedS3Request: Sendable {
    var method: String
    var host: String
    var path: String
    var query: String
    var headers: [(String, String)]
    var body: [UInt8]

    /// The path and `?query`, as the request line carries them.
    var target: String { query.isEmpty ? path : path + "?" + query }
}
