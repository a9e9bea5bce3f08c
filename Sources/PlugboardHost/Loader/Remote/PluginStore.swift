#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import PlugboardAPI
import PlugboardBytes
import PlugboardConcurrency
import PlugboardCrypto
import PlugboardHTTPClient
import PlugboardSigV4

/// The store plugin files are fetched from and published to: `http://` through
/// PlugboardHTTPClient, `https://` through ``CurlTransport`` (libcurl, loaded on the first
/// https request), and S3 through a SigV4-signed, path-style request against the
/// endpoint the AWS settings name (``AWSEnvironment``, read from the captured process
/// environment), with the AWS credential chain (``AWSCredentials/fromEnvironment(_:)``).
///
/// Its methods block the calling thread (staging runs on a blocking thread, `publish` on
/// the CLI's): the sockets are PlainHTTPClient's, on its own queues, and only the hand-overs
/// touch the cooperative pool; libcurl runs on the calling thread itself.
public struct PluginStore: Sendable {
    /// How long a request may wait for data before it fails (and is retried).
    public static let timeoutSeconds = 30.0
    /// Retries of a request that got no answer or a 502, 503 or 504.
    public static let retry = RetryPolicy(maxRetries: 3)

    let environment: AWSEnvironment
    let retry: RetryPolicy
    /// `SSL_CERT_FILE` of the captured environment: the CAs an https store's certificate
    /// must chain to, instead of libcurl's default bundle.
    let caFile: String?

    public init(environment: [String: String], retry: RetryPolicy = PluginStore.retry) {
        self.environment = AWSEnvironment(environment)
        caFile = environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        self.retry = retry
    }

    /// What a request is for, in messages: `plugin "X"` or `plugboard publish`.
    public struct Purpose: Sendable {
        let text: String
        public static func plugin(_ name: String) -> Purpose { Purpose(text: "plugin \"\(name)\"") }
        public static let publish = Purpose(text: "plugboard publish")
    }

    // MARK: - Requests

    /// An unsigned GET of an `http://` source, or a signed S3 request of `method` for
    /// `bucket`/`key` with `headers` (each signed, as every `x-amz-*` must be).
    func request(_ method: HTTPRequest.Method, _ source: RemoteSource, headers: [(String, String)] = [],
                 body: [UInt8] = [], payloadHash: String = SigV4.emptyPayloadHash,
                 purpose: Purpose) throws(PlugboardError) -> HTTPRequest {
        switch source.location {
        case .http(let url):
            return HTTPRequest(method: method, url: url, headers: headers.map { ($0.0, $0.1) }, body: body)
        case .https(let url):
            return HTTPRequest(method: method, url: url, headers: headers.map { ($0.0, $0.1) }, body: body)
        case .s3(let bucket, let key):
            let endpoint = try s3Endpoint(source, purpose: purpose)
            let credentials = try s3Credentials(source, purpose: purpose)
            let region = environment.region ?? "us-east-1"
            let path = "/\(PercentEncoding.encode(bucket))/\(PercentEncoding.encode(key, keepingSlashes: true))"
            let date = AmzDate(iso8601: Timestamp.now().iso8601)
            var signedHeaders = [("host", endpoint.authority), ("x-amz-content-sha256", payloadHash), ("x-amz-date", date.stamp)]
            if let token = credentials.sessionToken { signedHeaders.append(("x-amz-security-token", token)) }
            signedHeaders += headers
            let signer = SigV4Signer(accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey,
                                     region: region, service: "s3")
            let signed: SigV4Signer.Signed
            do {
                signed = try signer.sign(method: method.rawValue, path: path, query: [], headers: signedHeaders,
                                         payloadHash: payloadHash, date: date)
            } catch {
                throw PlugboardError(.sourceFailed, "could not sign the request for \(purpose.text): \(error.message)",
                                     detail: error.detail, hint: error.hint)
            }
            // The transport writes Host from the URL's authority, which is what was signed.
            let sent = signedHeaders.dropFirst().map { (name: $0.0, value: $0.1) } + [(name: "Authorization", value: signed.authorization)]
            return HTTPRequest(method: method, url: "\(endpoint.description)\(path)", headers: Array(sent), body: body)
        }
    }

    private func s3Endpoint(_ source: RemoteSource, purpose: Purpose) throws(PlugboardError) -> S3Endpoint {
        guard let written = environment.s3EndpointURL else { return .aws(region: environment.region ?? "us-east-1") }
        do {
            return try S3Endpoint.parse(written)
        } catch {
            // The URL may carry a password: describe it, never echo it.
            throw PlugboardError(.sourceUnsupported, "invalid S3 endpoint for \(purpose.text)'s source \(PlugboardError.quoted(source.shown, maxCharacters: 512))",
                detail: "Expected AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL) to be http://host[:port] or https://host[:port] without path, user name or query.",
                hint: "Correct AWS_ENDPOINT_URL_S3, or unset it for AWS's own endpoint.")
        }
    }

    private func s3Credentials(_ source: RemoteSource, purpose: Purpose) throws(PlugboardError) -> AWSCredentials {
        let found: AWSCredentials?
        do {
            found = try AWSCredentials.fromEnvironment(environment)
        } catch {
            let detail: String
            switch error {
            case .incomplete(let present, let missing, .environment):
                detail = "The environment has \(present) but not \(missing)."
            case .incomplete(let present, let missing, .profile(let profile, let file)):
                detail = "Profile \(PlugboardError.quoted(profile)) of \(PlugboardError.quoted(file)) has \(present) but not \(missing)."
            case .unreadableFile(let file):
                detail = "AWS_SHARED_CREDENTIALS_FILE names \(PlugboardError.quoted(file)), which cannot be read."
            case .missingProfile(let profile, let file, _):
                detail = "AWS_PROFILE names profile \(PlugboardError.quoted(profile)), which \(PlugboardError.quoted(file)) does not have."
            }
            throw PlugboardError(.sourceUnsupported, "incomplete AWS credentials for \(purpose.text)'s source \(PlugboardError.quoted(source.shown, maxCharacters: 512))",
                detail: detail, hint: "Set both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or fix the shared credentials file.")
        }
        guard let found else {
            throw PlugboardError(.sourceUnsupported, "no AWS credentials for \(purpose.text)'s source \(PlugboardError.quoted(source.shown, maxCharacters: 512))",
                detail: "Looked at AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, then at profile \(PlugboardError.quoted(environment.profile)) of \(environment.sharedCredentialsFile.map { PlugboardError.quoted($0) } ?? "~/.aws/credentials (HOME is not set)").",
                hint: "Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or AWS_PROFILE, in the host's environment.")
        }
        return found
    }

    // MARK: - Sending

    /// Sends `request` (retrying by ``retry``) and returns its answer. Over http, a 2xx
    /// GET's body is left on the connection when `streaming`; over https (``CurlTransport``)
    /// the answer comes with its whole body, and the second value is nil.
    func send(_ request: HTTPRequest, source: RemoteSource, streaming: Bool,
              purpose: Purpose) throws(PlugboardError) -> (HTTPResponse, PlainHTTPTransport.ResponseBody?) {
        let secure = request.url.lowercased().hasPrefix("https://")
        let transport = secure ? nil : PlainHTTPTransport(timeoutSeconds: Self.timeoutSeconds, maxIdlePerHost: 1)
        let curl = CurlTransport(timeoutSeconds: Int(Self.timeoutSeconds), caFile: caFile, maxBodyBytes: PluginFile.maxSize)
        var attempt = 0
        while true {
            let outcome: Result<(HTTPResponse, PlainHTTPTransport.ResponseBody?), TransportFailure>
            if let transport {
                do {
                    outcome = .success(try Self.wait { () async throws -> (HTTPResponse, PlainHTTPTransport.ResponseBody?) in
                        streaming ? try await transport.open(request) : (try await transport.send(request), nil)
                    })
                } catch let failure as TransportFailure {
                    outcome = .failure(failure)
                } catch {
                    outcome = .failure(TransportFailure(.other, "\(error)"))
                }
            } else {
                switch curl.send(request) {
                case .success(let response):
                    outcome = .success((response, nil))
                case .failure(let failure) where failure.kind == .unavailable:
                    throw httpsUnavailable(source, failure, purpose: purpose)
                case .failure(let failure) where failure.kind == .tls:
                    throw untrusted(request, source: source, failure, purpose: purpose)
                case .failure(let failure):
                    outcome = .failure(failure.transportFailure)
                }
            }
            let retryable = RetryPolicy.isRetryable(outcome.map(\.0))
            if retryable && attempt < retry.maxRetries {
                let delay = retry.delay(beforeRetry: attempt, retryAfterSeconds: (try? outcome.get())?.0.retryAfterSeconds)
                attempt += 1
                Self.sleep(delay)
                continue
            }
            switch outcome {
            case .failure(let failure):
                throw unreachable(request, source: source, failure.description, attempts: attempt + 1, purpose: purpose)
            case .success(let answer):
                return answer
            }
        }
    }

    /// The store's answer of `status` as an error that says what it means.
    func refusal(_ response: HTTPResponse, _ request: HTTPRequest, source: RemoteSource, purpose: Purpose) -> PlugboardError {
        let code = Self.s3ErrorCode(response.body).map { " (\($0))" } ?? ""
        let what = "\(request.method.rawValue) \(PlugboardError.quoted(source.shown, maxCharacters: 512)) for \(purpose.text)"
        switch response.status {
        case 401, 403:
            return PlugboardError(.sourceDenied, "the store refused \(what): \(response.status)\(code)",
                detail: "The store does not accept the request's credentials, or they may not \(request.method == .get || request.method == .head ? "read" : "write") this object.",
                hint: source.isS3 ? "Check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) in the host's environment, and that the key may \(request.method == .put ? "s3:PutObject" : "s3:GetObject") on this bucket."
                                  : "Check that the URL is one this host may read without credentials.")
        case 404:
            return PlugboardError(.sourceNotFound, "no plugin file at \(PlugboardError.quoted(source.shown, maxCharacters: 512)) for \(purpose.text): the store answered 404\(code)",
                detail: "The store has no such \(source.isS3 ? "bucket or key" : "file").",
                hint: "Check the source's \(source.isS3 ? "bucket and key" : "URL"): plugboard publish prints the source to use.")
        default:
            let own = response.status >= 500
            return PlugboardError(.sourceFailed, "the store answered \(what) with \(response.status)\(code)",
                detail: own ? "The store failed on its side (retried \(retry.maxRetries) times where worth it)." : "Expected 200, found \(response.status).",
                hint: own ? "Check the store's health and logs; a host whose cache holds the plugin's digest starts without the store."
                          : "Check the source's URL and the store's configuration.")
        }
    }

    private func unreachable(_ request: HTTPRequest, source: RemoteSource, _ what: String, attempts: Int,
                             purpose: Purpose) -> PlugboardError {
        PlugboardError(.sourceUnreachable, "could not reach the store for \(purpose.text)'s source \(PlugboardError.quoted(source.shown, maxCharacters: 512))",
            detail: "\(request.method.rawValue) \(Self.origin(request.url)) got no answer after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(what).",
            hint: "Check that the store is up and reachable from this host\(source.isS3 ? " (AWS_ENDPOINT_URL_S3 names its endpoint)" : ""); a host whose plugin cache already holds the digest starts without it.")
    }

    /// libcurl, which https needs, could not be loaded.
    private func httpsUnavailable(_ source: RemoteSource, _ failure: CurlTransport.Failure, purpose: Purpose) -> PlugboardError {
        PlugboardError(.sourceUnsupported, "\(purpose.text)'s source \(PlugboardError.quoted(source.shown, maxCharacters: 512)) needs https, and \(CurlTransport.libraryName) could not be used",
            detail: "plugboard loads libcurl on the first https fetch, by name through the dynamic loader's search path (ld.so.conf, LD_LIBRARY_PATH): \(failure.text).",
            hint: "Install libcurl 4 with OpenSSL (Debian: apt-get install libcurl4), or serve the file over http:// (the sha256 pin still refuses any other bytes).")
    }

    /// The TLS handshake failed: another attempt would fail alike.
    private func untrusted(_ request: HTTPRequest, source: RemoteSource, _ failure: CurlTransport.Failure, purpose: Purpose) -> PlugboardError {
        PlugboardError(.sourceUnreachable, "could not reach the store for \(purpose.text)'s source \(PlugboardError.quoted(source.shown, maxCharacters: 512)) over TLS",
            detail: "\(request.method.rawValue) \(Self.origin(request.url)): the TLS handshake failed: \(failure.text); trusted CAs: \(caFile.map { "SSL_CERT_FILE \(PlugboardError.quoted($0))" } ?? "libcurl's default bundle").",
            hint: "If the store's certificate is signed by a private CA, set SSL_CERT_FILE in the host's environment to a PEM file of that CA; otherwise check the certificate's names and dates.")
    }

    /// `http://host:port`, without the path (the request's path is the source, named already).
    private static func origin(_ url: String) -> String {
        let parts = url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return url }
        return parts[0...2].joined(separator: "/")
    }

    /// S3's `<Code>` from an error document, if it has one.
    static func s3ErrorCode(_ body: [UInt8]) -> String? {
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        let pieces = text.split(separator: "<Code>", maxSplits: 1, omittingEmptySubsequences: false)
        guard pieces.count == 2, let code = pieces[1].split(separator: "<", maxSplits: 1).first,
              !code.isEmpty, code.count <= 64, code.allSatisfy({ $0.isLetter || $0.isNumber }) else { return nil }
        return String(code)
    }

    // MARK: - Blocking on the transport

    /// Runs `work` and blocks this thread until it is done; never call it on the
    /// cooperative pool (staging and publish run on threads of their own).
    static func wait<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let result = LockedValueBox<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await work()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Waits `duration` on this (blocking) thread.
    static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var time = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var left = timespec()
        while nanosleep(&time, &left) != 0 && errno == EINTR { time = left }
    }
}

extension RemoteSource {
    var isS3: Bool { if case .s3 = location { true } else { false } }
}
