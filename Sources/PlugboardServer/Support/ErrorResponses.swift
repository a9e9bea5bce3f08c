import PlugboardAPI
import PlugboardHTTP
import PlugboardHost

/// Errors as the HTTP API answers them: the CLI's `--json` error shape, with the status
/// the contract gives each code.
enum ErrorResponses {
    /// The code goes in `X-Plugboard-Error-Code` too: a HEAD answer has no body, and the
    /// header is how a client tells a missing object from an unknown route there.
    static func response(_ error: PlugboardError, status: Int? = nil, headers: [(String, String)] = []) -> HTTPResponse {
        let (mapped, extra) = statusAndHeaders(for: error.code)
        let body = Array((JSONOutput.error(error).render(pretty: false) + "\n").utf8)
        return HTTPResponse(status: status ?? mapped,
                            headers: [("Content-Type", "application/json"), ("X-Plugboard-Error-Code", error.code.rawValue)]
                                + extra + headers,
                            body: body)
    }

    static func response(_ error: HTTPError) -> HTTPResponse {
        response(error.error, status: error.status, headers: error.headers)
    }

    /// Whatever a storage call threw, as a response.
    static func response(thrown error: any Error) -> HTTPResponse {
        if let e = error as? PlugboardError { return response(e) }
        if error is CancellationError {
            return response(PlugboardError(.httpUnavailable, "the request was cancelled while the server stops"))
        }
        return response(PlugboardError(.storageFailed, "storage operation failed: \(error)", underlying: error))
    }

    static func statusAndHeaders(for code: PlugboardError.Code) -> (Int, [(String, String)]) {
        switch code {
        case .storageNotFound: return (404, [])
        case .storageInvalidKey, .storageInvalidMetadata, .storageInvalidArgument: return (400, [])
        case .storageAccessDenied: return (403, [])
        case .storageUnavailable: return (503, [("Retry-After", "1")])
        case .storageFailed: return (502, [])
        case .notRegistered, .factoryFailed, .httpUnavailable: return (503, [])
        case .httpBadRequest: return (400, [])
        case .httpUnauthorized: return (401, [("WWW-Authenticate", "Bearer")])
        case .httpNotFound: return (404, [])
        case .httpMethodNotAllowed: return (405, [])
        case .httpRequestTimeout: return (408, [])
        case .httpLengthRequired: return (411, [])
        case .httpPayloadTooLarge: return (413, [])
        case .httpURITooLong: return (414, [])
        case .httpHeadersTooLarge: return (431, [])
        case .httpNotImplemented: return (501, [])
        default: return (500, [])
        }
    }
}
