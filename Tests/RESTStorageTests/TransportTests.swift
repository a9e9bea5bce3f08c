import Foundation
import PlugboardAPI
import PlugboardConcurrency
import PlugboardHTTPClient
import PlugboardURLSession
import RESTStorageClient
import Testing

/// Both transports over real loopback sockets, against answers no Plugboard server gives:
/// the plain-HTTP client that `http://` base URLs get, and URLSession, which `https://`
/// ones get (tried here over `http://`, since the fake server has no TLS).
@Suite struct TransportTests {
    enum Kind: String, CaseIterable, Sendable {
        case plain, urlSession

        /// What the transport's own text says for a connection closed before any answer,
        /// and for bytes that are not HTTP.
        var hangUpText: String { self == .plain ? "closed the connection before answering" : "Empty reply from server" }
        var notHTTPText: String { self == .plain ? "expected an HTTP/1.x status line, found \"SSH-2.0-OpenSSH_9.2\"" : "HTTP/0.9" }
    }

    private func storage(_ baseURL: String, _ kind: Kind = .plain, token: String? = nil, timeoutSeconds: Double = 30,
                         maxRetries: Int = 0) -> RESTStorage {
        let configuration = RESTStorage.Configuration(endpoint: Endpoint(base: baseURL), token: token,
                                                      timeoutSeconds: timeoutSeconds, maxRetries: maxRetries)
        switch kind {
        case .plain:
            // What the plugin's own initializer picks for an http:// base URL.
            return RESTStorage(configuration: configuration, plugin: "Remote", logger: .disabled)
        case .urlSession:
            let transport = URLSessionTransport(timeoutSeconds: timeoutSeconds)
            return RESTStorage(configuration: configuration, transport: transport, plugin: "Remote", logger: .disabled,
                               release: { transport.invalidate() })
        }
    }

    @Test(arguments: Kind.allCases)
    func redirectsAreNotFollowed_soTheTokenGoesNowhereElse(_ kind: Kind) async throws {
        let elsewhere = try RawHTTPServer(.respond("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        defer { elsewhere.stop() }
        let redirecting = try RawHTTPServer(.respond(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: \(elsewhere.baseURL)/v1/objects/k\r\nContent-Length: 0\r\n\r\n"))
        defer { redirecting.stop() }

        let error = await thrownError { _ = try await storage(redirecting.baseURL, kind, token: "redirect-T0KEN").get("k") }
        #expect(error?.code == .storageFailed)
        #expect(error?.message.contains("redirected") == true)
        #expect(redirecting.requests.count == 1)
        #expect(redirecting.requests.first?.contains("Authorization: Bearer redirect-T0KEN") == true)
        #expect(elsewhere.requests.isEmpty)
    }

    @Test(arguments: Kind.allCases)
    func aSilentServerTimesOutAsUnavailable_afterItsRetries(_ kind: Kind) async throws {
        let silent = try RawHTTPServer(.silence)
        defer { silent.stop() }
        let start = ContinuousClock.now
        let error = await thrownError { _ = try await storage(silent.baseURL, kind, timeoutSeconds: 1, maxRetries: 1).head("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.message.contains("did not answer in time") == true)
        #expect(await silent.requests(atLeast: 2).count == 2)
        // Liveness only (a loaded machine can delay URLSession's timers): without the
        // timeout the silent server would hold the call until the test ends.
        #expect(ContinuousClock.now - start < .seconds(240))
    }

    @Test(arguments: Kind.allCases)
    func cancellingTheCallerCancelsTheRequestInFlight(_ kind: Kind) async throws {
        let silent = try RawHTTPServer(.silence)
        defer { silent.stop() }
        let remote = storage(silent.baseURL, kind, timeoutSeconds: 600, maxRetries: 3)
        let start = ContinuousClock.now
        let call = Task { try await remote.get("k") }
        while silent.requests.isEmpty && ContinuousClock.now - start < .seconds(240) { try await Task.sleep(for: .milliseconds(10)) }
        call.cancel()
        let result = await call.result
        #expect(throws: CancellationError.self) { try result.get() }
        // Below the 600-second timeout: the cancellation ended the request (the arrival may
        // take minutes to be seen beside the whole suite on two cores).
        #expect(ContinuousClock.now - start < .seconds(480))
        #expect(silent.requests.count == 1)
    }

    @Test(arguments: Kind.allCases)
    func aConnectionClosedWithoutAnswerIsRetriedThenReported(_ kind: Kind) async throws {
        let rude = try RawHTTPServer(.hangUp)
        defer { rude.stop() }
        let error = await thrownError { try await storage(rude.baseURL, kind, maxRetries: 2).delete("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.detail?.contains(kind.hangUpText) == true, "\(String(describing: error))")
        #expect(rude.requests.count == 3)
    }

    @Test(arguments: Kind.allCases)
    func bytesThatAreNotHTTPAreFailed_neverATrap(_ kind: Kind) async throws {
        let garbage = try RawHTTPServer(.respond("SSH-2.0-OpenSSH_9.2\r\n\r\n"))
        defer { garbage.stop() }
        let error = await thrownError { _ = try await storage(garbage.baseURL, kind).get("k") }
        #expect(error?.code == .storageFailed)
        #expect(error?.detail?.contains(kind.notHTTPText) == true, "\(String(describing: error))")
        #expect(garbage.requests.count == 1)
    }

    @Test(arguments: Kind.allCases)
    func afterStopNothingIsSent_andCallsAreUnavailableNotATrap(_ kind: Kind) async throws {
        let server = try RawHTTPServer(.respond("HTTP/1.1 204 No Content\r\n\r\n"))
        defer { server.stop() }
        let stopped = storage(server.baseURL, kind, maxRetries: 3)
        try await stopped.delete("k")
        await stopped.stop()
        let error = await thrownError { try await stopped.delete("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.message.contains("was stopped") == true)
        #expect(server.requests.count == 1)
    }

    @Test(arguments: Kind.allCases)
    func aPortWithNothingListeningIsUnavailable(_ kind: Kind) async throws {
        let closed = try RawHTTPServer(.hangUp)
        let baseURL = closed.baseURL
        closed.stop()
        let error = await thrownError { _ = try await storage(baseURL, kind, maxRetries: 1).list(prefix: "", limit: 1, continuationToken: nil) }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.detail?.contains("2 attempts") == true)
    }

    @Test func aStreamedPutIsRetriedWhileItsBodyIsUnread() async throws {
        let closed = try RawHTTPServer(.hangUp)
        let baseURL = closed.baseURL
        closed.stop()
        let pulled = LockedValueBox(0)
        let body = ObjectBody(length: 3) {
            pulled.withLock { $0 += 1 }
            return [1, 2, 3]
        }
        let error = await thrownError {
            _ = try await storage(baseURL, maxRetries: 2).put("k", body: body, contentType: nil, metadata: [:], condition: .none)
        }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.detail?.contains("3 attempts") == true, "\(String(describing: error))")
        #expect(pulled.withLock { $0 } == 0)
    }

    /// The server says `100 Continue`, takes the head and hangs up: the body has been read
    /// by then, so the put is not tried again.
    @Test func aStreamedPutIsNotRetriedOnceItsBodyWasRead() async throws {
        let rude = try RawHTTPServer(.respond("HTTP/1.1 100 Continue\r\n\r\n"))
        defer { rude.stop() }
        let body = ObjectBody([1, 2, 3])
        let error = await thrownError {
            _ = try await storage(rude.baseURL, maxRetries: 2).put("k", body: body, contentType: nil, metadata: [:], condition: .none)
        }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.detail?.contains("1 attempt") == true, "\(String(describing: error))")
        #expect(rude.requests.count == 1)
    }

    /// A server that hangs up on the head, before `100 Continue`, has read nothing of the
    /// body, so the put goes again (with `Expect: 100-continue` the body waits for the
    /// server's word).
    @Test func aStreamedPutRefusedBeforeTheContinue_isRetried_withItsBodyUnread() async throws {
        let rude = try RawHTTPServer(.hangUp)
        defer { rude.stop() }
        let pulled = LockedValueBox(0)
        let body = ObjectBody(length: 3) {
            pulled.withLock { $0 += 1 }
            return [1, 2, 3]
        }
        let error = await thrownError {
            _ = try await storage(rude.baseURL, maxRetries: 2).put("k", body: body, contentType: nil, metadata: [:], condition: .none)
        }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.detail?.contains("3 attempts") == true, "\(String(describing: error))")
        #expect(await rude.requests(atLeast: 3).count == 3)
        #expect(pulled.withLock { $0 } == 0)
    }
}
