import PlugboardAPI
import PlugboardHTTPClient
import RESTStorageClient
import Testing

@Suite struct RetryTests {
    @Test func backoffDoublesFromTheBaseUpToTheCapWithFullJitter() {
        let policy = RetryPolicy(maxRetries: 5, baseDelay: .milliseconds(100), maxDelay: .seconds(2))
        #expect((0..<7).map { policy.delay(beforeRetry: $0, unit: 1) } == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
            .seconds(2), .seconds(2)])
        #expect(policy.delay(beforeRetry: 3, unit: 0) == .zero)
        #expect(policy.delay(beforeRetry: 3, unit: 0.25) == .milliseconds(200))
        #expect(policy.delay(beforeRetry: 1_000, unit: 1) == .seconds(2))
        // Retry-After raises the wait, up to the cap.
        #expect(policy.delay(beforeRetry: 0, unit: 0, retryAfterSeconds: 1) == .seconds(1))
        #expect(policy.delay(beforeRetry: 0, unit: 0, retryAfterSeconds: 120) == .seconds(2))
    }

    @Test func retryableOutcomes() {
        for status in [502, 503, 504] { #expect(RetryPolicy.isRetryable(.success(HTTPResponse(status: status)))) }
        for status in [200, 204, 400, 401, 403, 404, 408, 413, 500, 501] {
            #expect(!RetryPolicy.isRetryable(.success(HTTPResponse(status: status))), "\(status)")
        }
        #expect(RetryPolicy.isRetryable(.failure(TransportFailure(.cannotConnect, "refused"))))
        #expect(RetryPolicy.isRetryable(.failure(TransportFailure(.timedOut, "timeout"))))
        #expect(!RetryPolicy.isRetryable(.failure(TransportFailure(.other, "TLS"))))
    }

    @Test func aGetIsRetriedUntilItSucceeds_waitingTheBackoffBetween() async throws {
        let remote = ScriptedStorage([Responses.refused, Responses.error(503, "storage.unavailable", headers: ["Retry-After": "1"]),
                                      .success(HTTPResponse(status: 504)), Responses.object()], maxRetries: 3)
        let object = try await remote.storage.get("k")
        #expect(object.data == Array("hello".utf8))
        #expect(await remote.requests.count == 4)
        #expect(remote.sleeper.recorded == [.milliseconds(100), .seconds(1), .milliseconds(400)])
        #expect(remote.log.text.contains("retrying storage request"))
    }

    @Test func aPutIsRetriedToo_sinceItReplacesTheWholeObject() async throws {
        let remote = ScriptedStorage([Responses.refused, Responses.json(200, Responses.info())], maxRetries: 1)
        _ = try await remote.storage.put("k", data: Array("hello".utf8), contentType: "text/plain", metadata: ["owner": "me"])
        let requests = await remote.requests
        #expect(requests.count == 2 && requests[0] == requests[1])
    }

    @Test func retriesStopAtMaxRetries_andZeroSendsOnce() async {
        let three = ScriptedStorage([Responses.error(503, "storage.unavailable")], maxRetries: 3)
        let error = await thrownError { try await three.storage.delete("k") }
        #expect(error?.code == .storageUnavailable)
        #expect(await three.requests.count == 4)
        #expect(three.sleeper.recorded.count == 3)

        let none = ScriptedStorage([Responses.refused], maxRetries: 0)
        #expect(await thrownError { try await none.storage.delete("k") }?.code == .storageUnavailable)
        #expect(await none.requests.count == 1)
        #expect(none.sleeper.recorded.isEmpty)
    }

    @Test func cancellationEndsTheRetriesWithCancellationError() async throws {
        let transport = ScriptedTransport([Responses.refused])
        let storage = RESTStorage(configuration: .init(endpoint: Endpoint(base: "http://127.0.0.1:9"), maxRetries: 10),
                                  transport: transport, plugin: "Remote", logger: .disabled,
                                  sleeper: TaskSleeper(), random: { 1 },
                                  retryPolicy: RetryPolicy(maxRetries: 10, baseDelay: .seconds(30), maxDelay: .seconds(30)))
        let task = Task { try await storage.head("k") }
        while await transport.requests.isEmpty { await Task.yield() }
        task.cancel()
        let result = await task.result
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(await transport.requests.count == 1)
    }

    @Test func theTokenIsNeverLoggedNorInAnyError() async {
        let token = "very-secret-T0KEN-value"
        let remote = ScriptedStorage([Responses.refused, Responses.error(401, "http.unauthorized"),
                                      .success(HTTPResponse(status: 500))], token: token, maxRetries: 1)
        try? await remote.storage.start()
        let errors = [await thrownError { _ = try await remote.storage.get("k") },
                      await thrownError { _ = try await remote.storage.get("k") }]
        for error in errors {
            #expect(error != nil)
            #expect(error.map { "\($0)" }?.contains(token) == false)
        }
        #expect(!remote.log.text.isEmpty)
        #expect(!remote.log.text.contains(token))
        #expect(remote.log.text.contains("token=set"))
    }
}
