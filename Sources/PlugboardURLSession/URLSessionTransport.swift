import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PlugboardHTTPClient

/// ``HTTPTransport`` over Foundation's URLSession (FoundationNetworking on Linux), which
/// brings TLS: the `https://` transport of RESTStorage and S3Storage.
///
/// The session is ephemeral (no cookies, no cache) and refuses redirects: a token or a
/// signed request goes only to the configured endpoint, and a redirect (S3's wrong
/// region, say) is an answer to report, so a 3xx is returned as the response.
///
/// Its failures carry URLSession's `URLError` as their ``TransportFailure/cause``.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    // @unchecked Sendable: `invalidated` is only read and written under `lock`.
    private let session: URLSession
    private let timeoutSeconds: Double
    private let lock = NSLock()
    private var invalidated = false

    /// - Parameters:
    ///   - timeoutSeconds: How long a request may wait for the server with no progress
    ///     (`timeoutIntervalForRequest`); a large transfer that keeps moving is not cut.
    ///   - maxConnectionsPerHost: URLSession's limit of connections to one host; nil
    ///     keeps its default.
    public init(timeoutSeconds: Double, maxConnectionsPerHost: Int? = nil) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeoutSeconds
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        if let maxConnectionsPerHost { configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost }
        self.timeoutSeconds = timeoutSeconds
        session = URLSession(configuration: configuration, delegate: RedirectRefusal(), delegateQueue: nil)
    }

    /// Lets running requests end and releases the session (and its delegate). Later
    /// requests fail with ``TransportFailure/Kind/stopped`` instead of reaching an
    /// invalidated session, which URLSession does not allow.
    public func invalidate() {
        lock.withLock {
            guard !invalidated else { return }
            invalidated = true
            session.finishTasksAndInvalidate()
        }
    }

    /// `request` as URLSession takes it, with the timeout of a request.
    ///
    /// - Throws: ``TransportFailure`` (``TransportFailure/Kind/other``) for a URL
    ///   Foundation does not take.
    public static func urlRequest(_ request: HTTPRequest, timeoutSeconds: Double) throws(TransportFailure) -> URLRequest {
        guard let url = URL(string: request.url) else {
            throw TransportFailure(.other, "the request URL \"\(request.url.prefix(120))\" is not a valid URL")
        }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        // Some FoundationNetworking versions take the request's timeout, others the
        // session's: both are set.
        urlRequest.timeoutInterval = timeoutSeconds
        for field in request.headers { urlRequest.setValue(field.value, forHTTPHeaderField: field.name) }
        if request.sendsBody { urlRequest.httpBody = Data(request.body) }
        return urlRequest
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        let urlRequest = try Self.urlRequest(request, timeoutSeconds: timeoutSeconds)
        try Task.checkCancellation()
        let running = RunningTask()
        let outcome: Result<HTTPResponse, TransportFailure> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Made and started under the lock, so that `invalidate` comes before or after.
                let started = lock.withLock { () -> Bool in
                    guard !invalidated else { return false }
                    let task = session.dataTask(with: urlRequest) { data, response, error in
                        continuation.resume(returning: Self.outcome(data: data, response: response, error: error))
                    }
                    running.start(task)
                    return true
                }
                if !started {
                    continuation.resume(returning: .failure(TransportFailure(.stopped, "the plugin's URL session was released when the storage was stopped")))
                }
            }
        } onCancel: {
            running.cancel()
        }
        // A task cancelled by us ends with URLError.cancelled; the caller sees CancellationError.
        try Task.checkCancellation()
        return try outcome.get()
    }

    private static func outcome(data: Data?, response: URLResponse?, error: (any Error)?) -> Result<HTTPResponse, TransportFailure> {
        if let error { return .failure(failure(error)) }
        guard let http = response as? HTTPURLResponse else {
            return .failure(TransportFailure(.other, "the server's answer is not an HTTP response", cause: URLError(.badServerResponse)))
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return .success(HTTPResponse(status: http.statusCode, headers: headers, body: data.map { Array($0) } ?? []))
    }

    /// Classifies a URLSession error. Its text names the URL at most, never a header, so
    /// no token or signature can leak through it.
    static func failure(_ error: any Error) -> TransportFailure {
        guard let urlError = error as? URLError else {
            return TransportFailure(.other, String(describing: error), cause: URLError(.unknown))
        }
        let text = "\(urlError.localizedDescription) (URLError \(urlError.code.rawValue))"
        switch urlError.code {
        case .timedOut:
            return TransportFailure(.timedOut, text, cause: urlError)
        // badServerResponse is libcurl's "Empty reply from server": the connection closed
        // before any answer, as when a server drops an idle keep-alive connection just as
        // a request goes out. Like a refused connection, it is worth another attempt.
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .networkConnectionLost,
             .notConnectedToInternet, .resourceUnavailable, .badServerResponse:
            return TransportFailure(.cannotConnect, text, cause: urlError)
        default:
            return TransportFailure(.other, text, cause: urlError)
        }
    }
}

/// The data task of one request, so that cancelling the Swift task cancels it, whichever
/// comes first.
private final class RunningTask: @unchecked Sendable {
    // @unchecked Sendable: `task` and `cancelled` are only touched under `lock`.
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    func start(_ task: URLSessionDataTask) {
        let alreadyCancelled = lock.withLock {
            self.task = task
            return cancelled
        }
        task.resume()
        if alreadyCancelled { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}

/// Declines every redirect: the 3xx response itself is returned to the caller.
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // @unchecked Sendable: no state.
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
