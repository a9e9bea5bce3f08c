import PlugboardAPI
import RESTStorageClient
import Testing

@Suite struct ConfigurationTests {
    private func configuration(_ values: [String: ConfigValue]) throws(PlugboardError) -> RESTStorage.Configuration {
        try RESTStorage.Configuration(PluginConfig(values, plugin: "Remote"))
    }

    private func refusal(_ values: [String: ConfigValue]) -> PlugboardError? {
        do {
            _ = try configuration(values)
            return nil
        } catch {
            return error
        }
    }

    @Test func defaultsAndAllKeys() throws {
        let plain = try configuration(["baseURL": .string("http://127.0.0.1:8080")])
        #expect(plain == RESTStorage.Configuration(endpoint: Endpoint(base: "http://127.0.0.1:8080")))
        #expect(plain.timeoutSeconds == 30 && plain.maxRetries == 3 && plain.token == nil)

        let full = try configuration(["baseURL": .string("HTTPS://[::1]:8443/store/"), "token": .string("s3cr3t-T0ken"),
                                      "timeoutSeconds": .number(2.5), "maxRetries": .integer(0)])
        #expect(full.endpoint.base == "https://[::1]:8443/store")
        #expect(full.token == "s3cr3t-T0ken" && full.timeoutSeconds == 2.5 && full.maxRetries == 0)
    }

    @Test func unknownKeysAreRefusedNamingTheClosest() {
        let error = refusal(["baseURL": .string("http://h"), "maxRetry": .integer(2)])
        #expect(error?.code == .configInvalid)
        #expect(error?.message.contains("config.maxRetry") == true)
        #expect(error?.detail?.contains("maxRetries") == true)
    }

    @Test(arguments: [
        (["token": .string("t")], "missing configuration key \"config.baseURL\""),
        (["baseURL": .integer(8080)], "Expected a string"),
        (["baseURL": .string("")], "found an empty string"),
        (["baseURL": .string("127.0.0.1:8080")], "without a scheme"),
        (["baseURL": .string("ftp://h")], "the scheme \"ftp\""),
        (["baseURL": .string("http://")], "host or port is not valid"),
        (["baseURL": .string("http://h:0")], "host or port is not valid"),
        (["baseURL": .string("http://h:65536")], "host or port is not valid"),
        (["baseURL": .string("http://h:80x")], "host or port is not valid"),
        (["baseURL": .string("http://h/a?b=c")], "without query or fragment"),
        (["baseURL": .string("http://h /a")], "a space, control or non-ASCII character at offset 8"),
        (["baseURL": .string("http://h"), "timeoutSeconds": .integer(0)], "above 0 and at most 3600, found 0."),
        (["baseURL": .string("http://h"), "timeoutSeconds": .integer(4000)], "found 4000."),
        (["baseURL": .string("http://h"), "timeoutSeconds": .number(-0.5)], "found -0.5."),
        (["baseURL": .string("http://h"), "timeoutSeconds": .string("5")], "Expected a number"),
        (["baseURL": .string("http://h"), "maxRetries": .integer(11)], "an integer from 0 to 10, found 11"),
        (["baseURL": .string("http://h"), "maxRetries": .integer(-1)], "found -1"),
        (["baseURL": .string("http://h"), "maxRetries": .number(1.5)], "Expected an integer"),
        (["baseURL": .string("http://h"), "token": .string("")], "found an empty string"),
        (["baseURL": .string("http://h"), "token": .integer(42)], "Expected a string"),
    ] as [([String: ConfigValue], String)])
    func badValuesNameWhatWasExpectedAndFound(values: [String: ConfigValue], found: String) {
        let error = refusal(values)
        #expect(error?.code == .configInvalid)
        let text = error.map { "\($0)" } ?? "no error"
        #expect(text.contains(found), "\(text)")
    }

    @Test func aPasswordInTheURLAndABadTokenAreNeverQuoted() {
        let url = refusal(["baseURL": .string("http://admin:hunter2pass@h:80")])
        #expect(url?.code == .configInvalid)
        #expect(url.map { "\($0)" }?.contains("hunter2pass") == false)
        #expect(url?.hint?.contains("\"token\"") == true)

        let token = refusal(["baseURL": .string("http://h"), "token": .string("abc def-secret")])
        #expect(token?.code == .configInvalid)
        #expect(token?.detail?.contains("offset 3") == true)
        #expect(token.map { "\($0)" }?.contains("def-secret") == false)
    }
}
