import PlugboardHTTP
import Testing

/// Each refusal the contract names, and the request-smuggling shapes, by status and code.
@Suite struct HostileInputTests {
    static func refused(_ text: String, limits: HTTPLimits = HTTPLimits()) -> Outcome? {
        readAll(text, limits: limits).last
    }

    @Test(arguments: [
        // Framing two ways, or ambiguously: smuggling.
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: +3\r\n\r\nabc", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length : 3\r\n\r\nabc", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 501),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 501),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 501),
        ("PUT / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        // Chunked bodies.
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3 x\r\nabc\r\n0\r\n\r\n", 400),
        ("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n folded\r\n\r\n", 400),
        // Head syntax.
        ("GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n  folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400),
        ("GET / HTTP/1.1\nHost: h\n\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nBad Name: v\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\nX: a\u{0}b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 400),
        ("GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET /\u{e9} HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        // Lengths.
        ("PUT / HTTP/1.1\r\nHost: h\r\n\r\n", 411),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999999\r\n\r\n", 413),
        ("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 9223372036854775808\r\n\r\n", 413),
    ])
    func refused(_ text: String, status: Int) {
        guard case .refused(let got, _)? = Self.refused(text) else {
            Issue.record("accepted: \(text.debugDescription)")
            return
        }
        #expect(got == status, "\(text.debugDescription)")
    }

    @Test func requestLineLimit_is414() {
        let limits = HTTPLimits(maxRequestLineBytes: 100)
        #expect(Self.refused("GET /\(String(repeating: "a", count: 200)) HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits)
                == .refused(414, "http.uri_too_long"))
        // Never terminated: refused as soon as the limit is passed, not at the end.
        #expect(Self.refused("GET /" + String(repeating: "a", count: 5000), limits: limits) == .refused(414, "http.uri_too_long"))
        #expect(Self.refused("GET /\(String(repeating: "a", count: 80)) HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits)
                == .end)
    }

    @Test func headerBytesLimit_is431() {
        let limits = HTTPLimits(maxHeaderBytes: 200)
        let big = "GET / HTTP/1.1\r\nHost: h\r\nX: \(String(repeating: "v", count: 300))\r\n\r\n"
        #expect(Self.refused(big, limits: limits) == .refused(431, "http.headers_too_large"))
        #expect(Self.refused("GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "v", count: 10_000), limits: limits)
                == .refused(431, "http.headers_too_large"))
    }

    @Test func headerCountLimit_is431() {
        let limits = HTTPLimits(maxHeaderCount: 10)
        let fields = (0..<11).map { "X-\($0): v\r\n" }.joined()
        #expect(Self.refused("GET / HTTP/1.1\r\nHost: h\r\n\(fields)\r\n", limits: limits) == .refused(431, "http.headers_too_large"))
        let fine = (0..<9).map { "X-\($0): v\r\n" }.joined()
        #expect(Self.refused("GET / HTTP/1.1\r\nHost: h\r\n\(fine)\r\n", limits: limits) == .end)
    }

    @Test func bodyLimit_is413_forLengthAndChunks() {
        let limits = HTTPLimits(maxBodyBytes: 10)
        #expect(Self.refused("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", limits: limits)
                == .refused(413, "http.payload_too_large"))
        #expect(Self.refused("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n",
                             limits: limits) == .refused(413, "http.payload_too_large"))
        #expect(readAll("PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", limits: limits).first
                == .request(method: "PUT", target: "/", body: Array("0123456789".utf8)))
    }

    @Test func trailerLimits_apply() {
        let limits = HTTPLimits(maxHeaderBytes: 100, maxHeaderCount: 3)
        let many = (0..<5).map { "T-\($0): v\r\n" }.joined()
        #expect(Self.refused("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\(many)\r\n", limits: limits)
                == .refused(431, "http.headers_too_large"))
    }

    @Test func chunkedUpperCaseHexAndExtensions_areAccepted() {
        let out = readAll("PUT / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\nA;name=\"v\"\r\n0123456789\r\n0\r\n\r\n")
        #expect(out.first == .request(method: "PUT", target: "/", body: Array("0123456789".utf8)))
    }
}
