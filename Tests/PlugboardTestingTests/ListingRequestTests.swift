import PlugboardAPI
import Testing

@Suite("ListingRequest validation and tokens")
struct ListingRequestTests {
    @Test(arguments: [1, 2, 500, 1000])
    func limitWithinBounds_isAccepted(limit: Int) throws {
        let request = try ListingRequest(prefix: "p/", limit: limit, continuationToken: nil)
        #expect(request.limit == limit)
        #expect(request.startAfter == nil)
    }

    @Test(arguments: [0, -1, 1001, Int.max, Int.min])
    func limitOutOfBounds_isInvalidArgument(limit: Int) {
        let error = plugboardError { _ = try ListingRequest(prefix: "", limit: limit, continuationToken: nil) }
        #expect(error?.code == .storageInvalidArgument)
        #expect(error?.message == "invalid page size \(limit)")
    }

    @Test func prefixOver1024BytesOrWithNUL_isInvalidArgument() {
        #expect(errorCode { _ = try ListingRequest(prefix: String(repeating: "p", count: 1025), limit: 1, continuationToken: nil) } == .storageInvalidArgument)
        #expect(errorCode { _ = try ListingRequest(prefix: "a\u{0}", limit: 1, continuationToken: nil) } == .storageInvalidArgument)
        #expect(errorCode { _ = try ListingRequest(prefix: String(repeating: "p", count: 1024), limit: 1, continuationToken: nil) } == nil)
        #expect(errorCode { _ = try ListingRequest(prefix: "", limit: 1, continuationToken: nil) } == nil)
    }

    @Test(arguments: ["a", "dir/file", "caf\u{E9}", "cafe\u{301}", "\u{1D11E}", "..", "/", "ab", "abc", "abcd",
                      String(repeating: "k", count: 1024)])
    func tokenAfterAKey_decodesToExactlyThatKey(key: String) throws {
        let token = ListingRequest.continuationToken(after: key)
        #expect(token.utf8.allSatisfy { $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        let request = try ListingRequest(prefix: "", limit: 10, continuationToken: token)
        #expect(request.startAfter.map { Array($0.utf8) } == Array(key.utf8))
    }

    @Test(arguments: ["", "%%% not a token %%%", "\u{0}", "with space", "====", "!", "YQ==", "YR", "a",
                      ListingRequest.continuationToken(after: "x") + "=", "AA"])
    func tokenNotIssued_isInvalidArgument(token: String) {
        // "YR" decodes with non-zero unused bits, "a" is one character (never a whole byte),
        // "AA" decodes to NUL, which no key holds, and "YQ==" is padded.
        let error = plugboardError { _ = try ListingRequest(prefix: "", limit: 10, continuationToken: token) }
        #expect(error?.code == .storageInvalidArgument)
        #expect(error?.message.hasPrefix("invalid continuation token") == true)
    }

    @Test func tokenDecodingToInvalidUTF8_isInvalidArgument() {
        // "_w" is the byte 0xFF.
        #expect(errorCode { _ = try ListingRequest(prefix: "", limit: 10, continuationToken: "_w") } == .storageInvalidArgument)
    }

    @Test func includes_matchesPrefixByteWiseAndStartsAfterTheToken() throws {
        let request = try ListingRequest(prefix: "cafe", limit: 10,
                                         continuationToken: ListingRequest.continuationToken(after: "cafe"))
        #expect(!request.includes("cafe"))
        #expect(request.includes("cafe\u{301}"))
        #expect(request.includes("cafeteria"))
        #expect(!request.includes("caf\u{E9}"))
        #expect(!request.includes("other"))
    }

    @Test func equality_comparesBytes() throws {
        let composed = try ListingRequest(prefix: "caf\u{E9}", limit: 1, continuationToken: nil)
        let decomposed = try ListingRequest(prefix: "cafe\u{301}", limit: 1, continuationToken: nil)
        #expect(composed != decomposed)
        #expect(composed == (try ListingRequest(prefix: "caf\u{E9}", limit: 1, continuationToken: nil)))
    }
}
