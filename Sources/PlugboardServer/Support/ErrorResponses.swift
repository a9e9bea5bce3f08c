import PlugboardAPI
import PlugboardHTTP
import PlugboardHost
import PlugboardJSON

/// Errors as the HTTP API answers them: the CLI's `--json` error shape, with the status
/// the contract gives each code, or the one a plugin mapped its own code to.
///
/// A client sees the code and the texts without the server's file system paths: storage
/// and host errors name folders (FileStorage's root and object files) that tell a client
/// how the server is laid out. Those paths become `<server path>` in the answer, and the
/// whole error goes to the router's log (``logger``), where the operator needs it.
///
/// The router holds one and each request's context carries it (``ObjectRequest``), so an
/// error answer is made once, wherever on the request's path it arises.
struct ErrorResponses: Sendable {
    /// Where an error whose answer was scrubbed of paths is logged whole.
    var logger: Logger
    /// The secrets of the manifest, which no answer or log line may show (a plugin's
    /// error may quote a secret it was given), and the plugins' own error mappings. Asked
    /// only when an error is answered: reading the secrets takes the host's lock, which
    /// an answer without an error should not pay for.
    var provider: (any StorageProvider)?

    /// For the server's own refusals of a request (`http.*` codes, a precondition), which
    /// quote only the request and have no plugin behind them.
    static let plain = ErrorResponses(logger: .disabled, provider: nil)

    static func response(_ error: PlugboardError, status: Int? = nil, headers: [(String, String)] = []) -> HTTPResponse {
        plain.response(error, status: status, headers: headers)
    }

    static func response(_ error: HTTPError) -> HTTPResponse {
        plain.response(error)
    }

    /// The code goes in `X-Plugboard-Error-Code` too: a HEAD answer has no body, and the
    /// header is how a client tells a missing object from an unknown route there.
    func response(_ error: PlugboardError, status: Int? = nil, headers: [(String, String)] = []) -> HTTPResponse {
        // Secrets first, before any quoting or cutting could leave a piece of one.
        let error = provider?.secrets.scrub(error) ?? error
        let (mapped, extra) = statusAndHeaders(for: error.code)
        let shown = Self.clientView(of: error)
        if shown.message != error.message || shown.detail != error.detail || shown.hint != error.hint {
            logger.warning("\(error.code): \(error.message)", metadata: [
                "status": .string(String(status ?? mapped)), "detail": .string(error.detail ?? "-"), "hint": .string(error.hint ?? "-")])
        }
        let body = Array((JSONOutput.error(shown).render(pretty: false) + "\n").utf8)
        return HTTPResponse(status: status ?? mapped,
                            headers: [("Content-Type", "application/json"), ("X-Plugboard-Error-Code", error.code.rawValue)]
                                + extra + headers,
                            body: body)
    }

    func response(_ error: HTTPError) -> HTTPResponse {
        response(error.error, status: error.status, headers: error.headers)
    }

    /// Whatever a storage call threw, as a response.
    func response(thrown error: any Error) -> HTTPResponse {
        if let e = error as? PlugboardError { return response(e) }
        if error is CancellationError {
            return response(PlugboardError(.httpUnavailable, "the request was cancelled while the server stops"))
        }
        return response(PlugboardError(.storageFailed, "storage operation failed: \(error)", underlying: error))
    }

    /// The error as a client may read it. The server's own `http.*` errors are about the
    /// request and name no server path (their texts quote the request's own path), so
    /// they go as they are; every other error has its paths scrubbed.
    static func clientView(of error: PlugboardError) -> PlugboardError {
        guard error.code.area != "http" else { return error }
        let message = ServerPaths.scrubbed(error.message)
        let detail = error.detail.map(ServerPaths.scrubbed), hint = error.hint.map(ServerPaths.scrubbed)
        if message == error.message && detail == error.detail && hint == error.hint { return error }
        return PlugboardError(error.code, message, detail: detail, hint: hint)
    }

    func statusAndHeaders(for code: PlugboardError.Code) -> (Int, [(String, String)]) {
        switch code {
        case .storageNotFound: return (404, [])
        case .storageInvalidKey, .storageInvalidMetadata, .storageInvalidArgument: return (400, [])
        case .storageAccessDenied: return (403, [])
        case .storageUnavailable: return (503, [("Retry-After", "1")])
        case .storageFailed: return (502, [])
        case .storagePreconditionFailed: return (412, [])
        case .storageRangeNotSatisfiable: return (416, [])
        case .storageUnsupported: return (501, [])
        case .noStorage, .notRegistered, .factoryFailed, .httpUnavailable: return (503, [])
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
        default:
            // A plugin's own code: the answer it mapped the code to, else 500.
            guard let mapping = provider?.pluginErrorMapping(for: code) else { return (500, []) }
            return (mapping.status, mapping.answerHeaders)
        }
    }
}
