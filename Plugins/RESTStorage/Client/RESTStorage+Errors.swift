import PlugboardAPI
import PlugboardCrypto
import PlugboardHTTPClient

/// An error response from the storage server, kept as `underlying` of the error RESTStorage
/// throws.
public struct RemoteError: Error, Sendable, Equatable, CustomStringConvertible {
    public var status: Int
    /// The server's error code (`storage.not_found`, `http.unauthorized`), when the body
    /// had one.
    public var code: String?
    public var message: String?

    public var description: String {
        "HTTP \(status)" + (code.map { " \($0)" } ?? "") + (message.map { ": \($0)" } ?? "")
    }
}

/// Turns what one call got (after its retries) into the `PlugboardError` the
/// `ObjectStorage` contract asks for.
struct FailureMapping: Sendable {
    /// `put`, `get`, `head`, `delete`, `list`.
    var operation: String
    /// The key, or the prefix of a listing.
    var key: String?
    var base: String
    var plugin: String
    var tokenConfigured: Bool
    var attempts: Int

    private var isHead: Bool { operation == "head" }

    private var what: String {
        guard let key else { return operation }
        return operation == "list" ? "list of prefix \(RESTStorageText.quote(key))" : "\(operation) of key \(RESTStorageText.quote(key))"
    }

    private var tries: String { attempts == 1 ? "1 attempt" : "\(attempts) attempts" }

    /// No HTTP answer at all.
    func error(for failure: TransportFailure) -> PlugboardError {
        switch failure.kind {
        case .cannotConnect:
            return PlugboardError(
                .storageUnavailable, "cannot reach the storage server at \(base)",
                detail: "The \(what) got no answer after \(tries): \(failure.description).",
                hint: "Check that `plugboard serve` runs at \(base) and that this host can reach it; the call may succeed later.",
                underlying: failure)
        case .timedOut:
            return PlugboardError(
                .storageUnavailable, "the storage server at \(base) did not answer in time",
                detail: "The \(what) timed out after \(tries): \(failure.description).",
                hint: "The server may be overloaded; retry later, or raise \"timeoutSeconds\" in plugin \"\(plugin)\"'s config.",
                underlying: failure)
        case .stopped:
            return PlugboardError(
                .storageUnavailable, "this RESTStorage instance was stopped",
                detail: "The \(what) was not sent: \(failure.description).",
                hint: "Resolve ObjectStorage from the container again; the plugin was unloaded or replaced, and the container stops an instance only after its leases end, so hold a lease or a ServiceHandle while using it.",
                underlying: failure)
        case .other:
            return PlugboardError(
                .storageFailed, "request to the storage server at \(base) failed",
                detail: "The \(what) failed: \(failure.description).",
                hint: "Check \"baseURL\" in plugin \"\(plugin)\"'s config (scheme, host, port, TLS).",
                underlying: failure)
        }
    }

    /// An answer that is not the success the call expects.
    func error(for response: HTTPResponse, expected: String) -> PlugboardError {
        let body = ResponseDecoding.errorBody(response.body)
        let remote = RemoteError(status: response.status, code: body?.code ?? response.header("x-plugboard-error-code"),
                                 message: body?.message)
        let found = "HTTP \(response.status)" + (body.map { " with error \($0.code): \($0.message)" }
            ?? " with \(RESTStorageText.describeBody(response.body))")

        if let body, body.code.hasPrefix("storage.") {
            if body.code == PlugboardError.Code.storageNotFound.rawValue, let key, operation != "list" {
                let notFound = PlugboardError.objectNotFound(key: key)
                return PlugboardError(.storageNotFound, notFound.message, detail: notFound.detail, hint: notFound.hint,
                                      underlying: remote)
            }
            // The remote backend's own verdict, in its words (the same validators and texts).
            return PlugboardError(PlugboardError.Code(body.code), body.message, detail: body.detail, hint: body.hint,
                                  underlying: remote)
        }
        if isHead && response.body.isEmpty, let key {
            // A HEAD error has no body: its code comes in X-Plugboard-Error-Code, which tells
            // a missing object (storage.not_found) from an unknown route (http.not_found).
            switch response.header("x-plugboard-error-code") {
            case PlugboardError.Code.storageNotFound.rawValue?:
                let notFound = PlugboardError.objectNotFound(key: key)
                return PlugboardError(.storageNotFound, notFound.message, detail: notFound.detail, hint: notFound.hint,
                                      underlying: remote)
            case let code? where code.hasPrefix("storage."):
                return PlugboardError(PlugboardError.Code(code), "the storage server at \(base) refused the head of \(RESTStorageText.quote(key))",
                                      detail: "It answered HTTP \(response.status) with error code \(code) (a HEAD answer has no body to say more).",
                                      hint: "Run the same request as a GET to see the server's full error.", underlying: remote)
            default:
                break
            }
        }
        switch response.status {
        case 401, 403:
            let hint = tokenConfigured
                ? "Set \"token\" in plugin \"\(plugin)\"'s config to the server's PLUGBOARD_API_TOKEN; the configured token was refused."
                : "The server requires a bearer token: set \"token\" in plugin \"\(plugin)\"'s config to the server's PLUGBOARD_API_TOKEN."
            return PlugboardError(
                .storageAccessDenied, "the storage server at \(base) refused the \(operation)",
                detail: "Expected the \(operation) to be allowed, found \(found).", hint: hint, underlying: remote)
        case 408, 502, 503, 504:
            return PlugboardError(
                .storageUnavailable, "the storage server at \(base) is unavailable",
                detail: "The \(what) got \(found) after \(tries).",
                hint: "Retry later; on the server, `plugboard plugins` and GET /readyz show whether its storage is up.",
                underlying: remote)
        case 412:
            return PlugboardError(
                .storagePreconditionFailed, "the storage server at \(base) refused the \(operation): its condition does not hold",
                detail: "Expected the condition (If-None-Match or If-Match) to hold, found \(found).",
                hint: "Read the object again (head) and decide from its current state; nothing was stored.", underlying: remote)
        case 416:
            return PlugboardError(
                .storageRangeNotSatisfiable, "the storage server at \(base) refused the range of the \(operation)",
                detail: "Expected a range that selects bytes of the object, found \(found)\(response.header("content-range").map { " (Content-Range \(RESTStorageText.quote($0)))" } ?? "").",
                hint: "Ask for a range that starts before the object's size (head gives it), or no range.", underlying: remote)
        case 413:
            return PlugboardError(
                .storageInvalidArgument, "the storage server at \(base) refused the object as too large",
                detail: "The \(what) got \(found).",
                hint: "Store smaller objects, or raise the server's body size limit.", underlying: remote)
        case 404:
            return PlugboardError(
                .storageFailed, "no Plugboard object API at \(base)",
                detail: "Expected \(expected), found \(found).",
                hint: "Check \"baseURL\" in plugin \"\(plugin)\"'s config: it names the server's root (with any path prefix), without /v1/objects.",
                underlying: remote)
        case 300...399:
            return PlugboardError(
                .storageFailed, "the storage server at \(base) redirected the \(operation)",
                detail: "Expected \(expected), found \(found) to \(response.header("location").map { RESTStorageText.quote($0) } ?? "no Location").",
                hint: "Set \"baseURL\" in plugin \"\(plugin)\"'s config to the address the server answers at; redirects are not followed, so the token goes nowhere else.",
                underlying: remote)
        default:
            return PlugboardError(
                .storageFailed, "the storage server at \(base) failed the \(operation)",
                detail: "Expected \(expected), found \(found).",
                hint: "See the server's log for the request.", underlying: remote)
        }
    }

    /// A success answer whose body broke off after `received` of its `expected` bytes.
    /// Not retried: the consumer already has the bytes before the break.
    func error(forBody failure: TransportFailure, expected: Int, received: Int) -> PlugboardError {
        // A broken or silent connection may be fine on the next read; bytes that are not
        // HTTP's framing are the server's fault.
        let code: PlugboardError.Code = failure.kind == .other ? .storageFailed : .storageUnavailable
        return PlugboardError(
            code, "the storage server at \(base) stopped sending the object",
            detail: "The \(what) expected \(expected) bytes, found \(received) before the body broke off: \(failure.description).",
            hint: failure.kind == .timedOut
                ? "Read the object again; if the server is slow, raise \"timeoutSeconds\" in plugin \"\(plugin)\"'s config."
                : "Read the object again; if it keeps breaking off, see the server's log and the network between the hosts.",
            underlying: failure)
    }

    /// A streamed object's body, checked as it arrives against its length and, for a
    /// whole object, its ETag.
    func checkedBody(_ stream: PlainHTTPTransport.ResponseBody, length: Int, etag: String?) throws(PlugboardError) -> CheckedResponseBody {
        do {
            return try CheckedResponseBody(stream, length: length, etag: etag)
        } catch {
            throw self.error(for: UnexpectedResponse(expected: "an MD5 digest from libcrypto", found: error.message), status: 200)
        }
    }

    /// `body` as the ObjectBody a consumer reads, its failures as storage errors.
    func objectBody(_ body: CheckedResponseBody, length: Int) -> ObjectBody {
        ObjectBody(length: length) { try await reading { try await body.next() } }
    }

    /// Runs `read`, with a ``CheckedResponseBody/Failure`` as the storage error naming the
    /// bytes expected and received; `CancellationError` passes unchanged.
    func reading(_ read: () async throws -> [UInt8]?) async throws -> [UInt8]? {
        do {
            return try await read()
        } catch let failure as CheckedResponseBody.Failure {
            switch failure.kind {
            case .transport(let transport):
                throw error(forBody: transport, expected: failure.expected, received: failure.received)
            case .endedShort, .ranLong:
                // The body is framed by its Content-Length, so the transport reports these
                // first; kept for a server whose framing says otherwise.
                let what = "a body of \(failure.received) bytes"
                throw error(forBody: TransportFailure(.other, what), expected: failure.expected, received: failure.received)
            case .digestMismatch(let etag, let md5):
                throw error(for: UnexpectedResponse(expected: "a body whose MD5 is the ETag \(etag)",
                                                    found: "\(failure.expected) bytes with MD5 \(md5)"), status: 200)
            case .digestUnavailable(let crypto):
                throw error(for: UnexpectedResponse(expected: "an MD5 digest from libcrypto", found: crypto.message), status: 200)
            }
        }
    }

    /// A success status whose content is not what the contract says.
    func error(for unexpected: UnexpectedResponse, status: Int) -> PlugboardError {
        PlugboardError(
            .storageFailed, "unexpected answer from the storage server at \(base)",
            detail: "The \(what) got HTTP \(status); expected \(unexpected.expected), found \(unexpected.found).",
            hint: "Check that \"baseURL\" in plugin \"\(plugin)\"'s config points at a Plugboard server of the same API version (/v1).",
            underlying: unexpected)
    }
}
