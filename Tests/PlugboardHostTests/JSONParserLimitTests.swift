import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// The parser's bounds on input size and nesting depth.
@Suite struct JSONParserLimitTests {
    @Test func inputOverMaxBytes_isRefused_namingSizeAndLimit() {
        let error = ManifestTestSupport.jsonError("[1, 2, 3, 4]", limits: .init(maxBytes: 10, maxDepth: 64))
        #expect(error?.code == .manifestTooLarge)
        #expect(error?.detail?.contains("12 bytes") == true)
        #expect(error?.detail?.contains("limit is 10 bytes") == true)
    }

    @Test func inputAtMaxBytes_isAccepted() throws {
        _ = try ManifestTestSupport.parseJSON("[1, 2, 3]", limits: .init(maxBytes: 9, maxDepth: 64))
    }

    @Test func nestingOverMaxDepth_isRefused_namingDepthAndLimit_withLocation() {
        let error = ManifestTestSupport.jsonError("[[{\"a\": []}]]", limits: .init(maxBytes: 100, maxDepth: 3))
        #expect(error?.code == .manifestTooDeep)
        #expect(ManifestTestSupport.location(of: error, source: "t.json") == "1:9")
        #expect(error?.detail?.contains("depth 4") == true)
        #expect(error?.detail?.contains("limit is 3") == true)
    }

    @Test func hugeNesting_isRefusedWithoutExhaustingTheStack() {
        let deep = String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000)
        let error = ManifestTestSupport.jsonError(deep)
        #expect(error?.code == .manifestTooDeep)
        #expect(error?.detail?.contains("limit is 64") == true)
        let unclosed = ManifestTestSupport.jsonError(String(repeating: "{\"a\":", count: 100_000))
        #expect(unclosed?.code == .manifestTooDeep)
    }

    @Test func defaultLimits_areOneMebibyteAndSixtyFourLevels() {
        let limits = JSONParser.Limits()
        #expect(limits.maxBytes == 1 << 20)
        #expect(limits.maxDepth == 64)
    }

    @Test func longSingleLine_isParsedInLinearTime() throws {
        // 200k values on one line: columns are counted once, not from the line's start each time.
        let text = "[" + Array(repeating: "1", count: 200_000).joined(separator: ",") + "]"
        let value = try ManifestTestSupport.parseJSON(text)
        #expect(value[199_999]?.location.column == 400_000)
    }
}
