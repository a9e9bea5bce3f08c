import PlugboardHTTPClient
import Testing

/// The one retry policy RESTStorage and S3Storage share: its cap, and `Retry-After`.
@Suite struct RetryPolicyTests {
    @Test func theDefaultCapIsFiveSeconds_andBoundsTheBackoff() {
        let policy = RetryPolicy(maxRetries: 3)
        #expect(policy.baseDelay == .milliseconds(100) && policy.maxDelay == .seconds(5))
        #expect((0..<8).map { policy.delay(beforeRetry: $0, unit: 1) } == [
            .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
            .milliseconds(3200), .seconds(5), .seconds(5)])
        for retry in 0..<40 {
            let delay = policy.delay(beforeRetry: retry)
            #expect(delay >= .zero && delay <= .seconds(5))
        }
    }

    @Test func retryAfterIsHonoured_upToTheCap() {
        let policy = RetryPolicy(maxRetries: 3)
        #expect(policy.delay(beforeRetry: 0, unit: 0, retryAfterSeconds: 3) == .seconds(3))
        #expect(policy.delay(beforeRetry: 0, unit: 1, retryAfterSeconds: 1) == .seconds(1))
        #expect(policy.delay(beforeRetry: 0, unit: 0, retryAfterSeconds: 3600) == .seconds(5))
        // A shorter Retry-After than the backoff drawn does not shorten the wait.
        #expect(policy.delay(beforeRetry: 6, unit: 1, retryAfterSeconds: 1) == .seconds(5))
        #expect(policy.delay(beforeRetry: 2, unit: 0, retryAfterSeconds: 0) == .zero)
        #expect(policy.delay(beforeRetry: 2, unit: 0, retryAfterSeconds: -4) == .zero)
    }

    @Test func retryAfterIsReadAsSeconds_notAsADate() {
        #expect(HTTPResponse(status: 503, headers: ["Retry-After": " 2 "]).retryAfterSeconds == 2)
        #expect(HTTPResponse(status: 503, headers: ["retry-after": "1"]).retryAfterSeconds == 1)
        #expect(HTTPResponse(status: 503, headers: ["Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"]).retryAfterSeconds == nil)
        #expect(HTTPResponse(status: 503).retryAfterSeconds == nil)
    }

    @Test func postIsNotIdempotent_theOthersAre() {
        for method in [HTTPRequest.Method.get, .head, .put, .delete] { #expect(RetryPolicy.isIdempotent(method)) }
        #expect(!RetryPolicy.isIdempotent(.post))
    }
}
