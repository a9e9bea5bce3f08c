@testable import PlugboardHost
import Testing

/// The https transport of remote sources when libcurl cannot be loaded (the requests, TLS
/// and retries run against nginx in S3StorageTests' HTTPSSourceTests).
struct CurlTransportTests {
    @Test func missingLibrary_isUnavailable_namingItAndTheLoadersReason() {
        guard case .failure(let failure) = CurlTransport.Library.load("libplugboard-no-such-curl.so.4") else {
            Issue.record("a library that does not exist loaded")
            return
        }
        #expect(failure.kind == .unavailable)
        #expect(failure.text.contains("libplugboard-no-such-curl.so.4") && failure.text.contains("dynamic loader reported"), "\(failure.text)")
    }
}
