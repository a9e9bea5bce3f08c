import Foundation
import PlugboardAPI
import RESTStorageClient
import Testing

/// URLSession over real loopback sockets, against answers no Plugboard server gives.
@Suite struct TransportTests {
    private func storage(_ baseURL: String, token: String? = nil, timeoutSeconds: Double = 30,
                         maxRetries: Int = 0) -> RESTStorage {
        RESTStorage(configuration: .init(endpoint: Endpoint(base: baseURL), token: token,
                                         timeoutSeconds: timeoutSeconds, maxRetries: maxRetries),
                    plugin: "Remote", logger: .disabled)
    }

    @Test func redirectsAreNotFollowed_soTheTokenGoesNowhereElse() async throws {
        let elsewhere = try RawHTTPServer(.respond("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        defer { elsewhere.stop() }
        let redirecting = try RawHTTPServer(.respond(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: \(elsewhere.baseURL)/v1/objects/k\r\nContent-Length: 0\r\n\r\n"))
        defer { redirecting.stop() }

        let error = await thrownError { _ = try await storage(redirecting.baseURL, token: "redirect-T0KEN").get("k") }
        #expect(error?.code == .storageFailed)
        #expect(error?.message.contains("redirected") == true)
        #expect(redirecting.requests.count == 1)
        #expect(redirecting.requests.first?.contains("Authorization: Bearer redirect-T0KEN") == true)
        #expect(elsewhere.requests.isEmpty)
    }

    @Test func aSilentServerTimesOutAsUnavailable_afterItsRetries() async throws {
        let silent = try RawHTTPServer(.silence)
        defer { silent.stop() }
        let start = ContinuousClock.now
        let error = await thrownError { _ = try await storage(silent.baseURL, timeoutSeconds: 1, maxRetries: 1).head("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.message.contains("did not answer in time") == true)
        #expect(silent.requests.count == 2)
        // Liveness only (a loaded machine can delay URLSession's timers): without the
        // timeout the silent server would hold the call until the test ends.
        #expect(ContinuousClock.now - start < .seconds(60))
    }

    @Test func cancellingTheCallerCancelsTheRequestInFlight() async throws {
        let silent = try RawHTTPServer(.silence)
        defer { silent.stop() }
        let remote = storage(silent.baseURL, timeoutSeconds: 600, maxRetries: 3)
        let start = ContinuousClock.now
        let call = Task { try await remote.get("k") }
        while silent.requests.isEmpty && ContinuousClock.now - start < .seconds(60) { try await Task.sleep(for: .milliseconds(10)) }
        call.cancel()
        let result = await call.result
        #expect(throws: CancellationError.self) { try result.get() }
        // Far below the 600-second timeout: the cancellation ended the request.
        #expect(ContinuousClock.now - start < .seconds(120))
        #expect(silent.requests.count == 1)
    }

    @Test func aConnectionClosedWithoutAnswerIsRetriedThenReported() async throws {
        let rude = try RawHTTPServer(.hangUp)
        defer { rude.stop() }
        let error = await thrownError { try await storage(rude.baseURL, maxRetries: 2).delete("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.detail?.contains("Empty reply from server") == true, "\(String(describing: error))")
        #expect(rude.requests.count == 3)
    }

    @Test func bytesThatAreNotHTTPAreFailed_neverATrap() async throws {
        let garbage = try RawHTTPServer(.respond("SSH-2.0-OpenSSH_9.2\r\n\r\n"))
        defer { garbage.stop() }
        let error = await thrownError { _ = try await storage(garbage.baseURL).get("k") }
        #expect(error?.code == .storageFailed)
        #expect(error?.detail?.contains("HTTP/0.9") == true, "\(String(describing: error))")
        #expect(garbage.requests.count == 1)
    }

    @Test func afterStopNothingIsSent_andCallsAreUnavailableNotATrap() async throws {
        let server = try RawHTTPServer(.respond("HTTP/1.1 204 No Content\r\n\r\n"))
        defer { server.stop() }
        let stopped = storage(server.baseURL, maxRetries: 3)
        try await stopped.delete("k")
        await stopped.stop()
        let error = await thrownError { try await stopped.delete("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.message.contains("was stopped") == true)
        #expect(server.requests.count == 1)
    }

    @Test func aPortWithNothingListeningIsUnavailable() async throws {
        let closed = try RawHTTPServer(.hangUp)
        let baseURL = closed.baseURL
        closed.stop()
        let error = await thrownError { _ = try await storage(baseURL, maxRetries: 1).list(prefix: "", limit: 1, continuationToken: nil) }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.detail?.contains("2 attempts") == true)
    }
}
