import PlugboardHTTP
import Testing

@Suite struct RequestReaderTests {
    @Test func simpleGet_isParsedWithLowercasedHeaders() throws {
        let h = try #require(try head("GET /v1/objects/a?x=1 HTTP/1.1\r\nHost: h\r\nX-Plugboard-Meta-A:  v \t\r\n\r\n"))
        #expect(h.method == "GET")
        #expect(h.target == "/v1/objects/a?x=1")
        #expect(h.path == "/v1/objects/a")
        #expect(h.query == "x=1")
        #expect(h.version == .http11)
        #expect(h.headers["x-plugboard-meta-a"] == "v")
        #expect(h.keepAlive)
        #expect(h.framing == .none)
    }

    @Test func everySplitOfTheInput_givesTheSameRequests() {
        let text = "PUT /k HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloPUT /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\nGET /last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        let expected: [Outcome] = [.request(method: "PUT", target: "/k", body: Array("hello".utf8)),
                                   .request(method: "PUT", target: "/c", body: Array("abcde".utf8)),
                                   .request(method: "GET", target: "/last", body: [])]
        for size in [1, 2, 3, 7, 13, 64, 1 << 20] {
            #expect(readAll(text, pieces: [size]) == expected, "pieces of \(size)")
        }
        #expect(readAll(text, pieces: [1, 5, 2, 11, 3]) == expected)
    }

    @Test func pipelinedRequests_areReadInOrderAndEndCleanly() {
        let one = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
        let out = readAll(String(repeating: one, count: 50))
        #expect(out.count == 51)
        #expect(out.last == .end)
    }

    @Test func http10_closesUnlessKeepAlive_andNeedsNoHost() throws {
        let plain = try #require(try head("GET / HTTP/1.0\r\n\r\n"))
        #expect(!plain.keepAlive)
        let kept = try #require(try head("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"))
        #expect(kept.keepAlive)
        let closed = try #require(try head("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"))
        #expect(!closed.keepAlive)
    }

    @Test func leadingEmptyLines_areIgnored() {
        #expect(readAll("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n") == [.request(method: "GET", target: "/", body: []), .end])
    }

    @Test func expectContinue_isReportedForBodies() throws {
        let h = try #require(try head("PUT /k HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n"))
        #expect(h.expectsContinue)
        let empty = try #require(try head("PUT /k HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n"))
        #expect(!empty.expectsContinue)
    }

    @Test func emptyInput_isACleanEnd() {
        #expect(readAll("") == [.end])
    }

    @Test func truncatedInput_isRefused() {
        #expect(readAll("GET / HTTP/1.1\r\nHo") == [.refused(400, "http.bad_request")])
        #expect(readAll("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc") == [.refused(400, "http.bad_request")])
        #expect(readAll("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab") == [.refused(400, "http.bad_request")])
    }
}
