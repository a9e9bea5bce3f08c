#if canImport(Glibc)
import Glibc
#endif
import Testing

/// HTTP-level refusals, limits, timeouts, keep-alive and pipelining on a real server.
@Suite struct ProtocolTests {
    @Test func refusals_answerWithTheirStatus_andCloseTheConnection() throws {
        let server = try ServerProcess(arguments: ["--max-body-bytes", "1000"])
        let cases: [(String, [UInt8], Int, String)] = [
            ("too large body", Array("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\n\r\n".utf8) + [UInt8](repeating: 7, count: 5000),
             413, "http.payload_too_large"),
            ("headers", Array("GET /healthz HTTP/1.1\r\nHost: h\r\nX-Big: \(String(repeating: "v", count: 20_000))\r\n\r\n".utf8),
             431, "http.headers_too_large"),
            ("uri", Array("GET /v1/objects/\(String(repeating: "k", count: 9000)) HTTP/1.1\r\nHost: h\r\n\r\n".utf8),
             414, "http.uri_too_long"),
            ("no length", Array("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\n\r\n".utf8), 411, "http.length_required"),
            ("smuggling", Array("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8),
             400, "http.bad_request"),
            ("two lengths", Array("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab".utf8),
             400, "http.bad_request"),
            ("coding", Array("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n".utf8),
             501, "http.not_implemented"),
            ("no host", Array("GET /healthz HTTP/1.1\r\n\r\n".utf8), 400, "http.bad_request"),
            ("garbage", Array("\u{1}\u{2}\u{3} nonsense\r\n\r\n".utf8), 400, "http.bad_request"),
        ]
        for (name, bytes, status, code) in cases {
            let c = try server.client()
            try c.send(bytes)
            let r = try c.response()
            #expect(r.status == status, "\(name)")
            #expect(r.errorCode == code, "\(name)")
            #expect(r.header("connection") == "close", "\(name)")
            #expect(c.isClosedByServer(), "\(name)")
        }
        // The server is still fine.
        #expect(try server.client().request("GET", "/healthz").status == 200)
    }

    @Test func chunkedUpload_isStored() throws {
        let server = try ServerProcess()
        let c = try server.client()
        try c.send("PUT /v1/objects/chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext\r\n!\r\n0\r\n\r\n")
        #expect(try c.response().status == 200)
        #expect(try c.request("GET", "/v1/objects/chunked").text == "hello!")
    }

    @Test func expectContinue_getsAnInterimResponse() throws {
        let server = try ServerProcess()
        let c = try server.client()
        try c.send("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
        var line = [UInt8](repeating: 0, count: 25)
        #expect(recv(c.fd, &line, 25, Int32(MSG_WAITALL)) == 25)
        #expect(String(decoding: line, as: UTF8.self) == "HTTP/1.1 100 Continue\r\n\r\n")
        try c.send("abc")
        #expect(try c.response().status == 200)
    }

    @Test func keepAliveAndPipelining_answerInOrderOnOneConnection() throws {
        let server = try ServerProcess()
        let c = try server.client()
        try c.send("PUT /v1/objects/a HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nAGET /v1/objects/a HTTP/1.1\r\nHost: h\r\n\r\nDELETE /v1/objects/a HTTP/1.1\r\nHost: h\r\n\r\nGET /v1/objects/a HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try c.response().status == 200)
        #expect(try c.response().text == "A")
        #expect(try c.response().status == 204)
        #expect(try c.response().status == 404)
        for _ in 0..<20 { #expect(try c.request("GET", "/healthz").status == 200) }
        let old = try server.client()
        try old.send("GET /healthz HTTP/1.0\r\n\r\n")
        #expect(try old.response().status == 200)
        #expect(old.isClosedByServer())
        let closing = try server.client()
        #expect(try closing.request("GET", "/healthz", headers: [("Connection", "close")]).header("connection") == "close")
        #expect(closing.isClosedByServer())
    }

    @Test func slowClient_gets408_andIsDropped() throws {
        let server = try ServerProcess(arguments: ["--request-timeout", "1"])
        let head = try server.client()
        let started = CommandRunner.monotonicMilliseconds()
        try head.send("GET /healthz HTTP/1.1\r\nHo")
        let r = try head.response()
        #expect(r.status == 408)
        #expect(r.errorCode == "http.request_timeout")
        #expect(head.isClosedByServer())
        // Bounds here are liveness bounds for a loaded machine (a test process can stall for
        // many seconds in CI): far above the 1 s deadline, below the client's own 15 s.
        #expect(CommandRunner.monotonicMilliseconds() - started < 14_000)

        let body = try server.client()
        try body.send("PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nabc")
        #expect(try body.response().status == 408)

        // A connection that never sends a byte is closed quietly after the same deadline.
        let silent = try server.client()
        let opened = CommandRunner.monotonicMilliseconds()
        #expect(silent.isClosedByServer())
        #expect(CommandRunner.monotonicMilliseconds() - opened < 14_000)
    }

    @Test func connectionsOverTheLimit_get503() throws {
        let server = try ServerProcess(arguments: ["--max-connections", "2"])
        let a = try server.client(), b = try server.client()
        #expect(try a.request("GET", "/healthz").status == 200)
        #expect(try b.request("GET", "/healthz").status == 200)
        let c = try server.client()
        let refused = try c.response()
        #expect(refused.status == 503)
        #expect(refused.errorCode == "http.unavailable")
        #expect(c.isClosedByServer())
        // A freed slot is taken again.
        try a.send("GET /healthz HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        _ = try a.response()
        #expect(a.isClosedByServer())
        var status = 0
        for _ in 0..<50 where status != 200 {
            usleep(20_000)
            status = (try? server.client().request("GET", "/healthz").status) ?? 0
        }
        #expect(status == 200)
    }
}

/// Random bytes over real connections: every one gets an answer or a close, and the
/// server keeps serving.
@Suite struct SocketFuzzTests {
    @Test func randomBytes_neverTakeTheServerDown() throws {
        let server = try ServerProcess(arguments: ["--request-timeout", "1"])
        var state: UInt64 = 0x5EED_0007
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let prefixes = ["", "GET / HTTP/1.1\r\n", "PUT /v1/objects/k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
                        "GET /v1/objects/%"]
        for round in 0..<120 {
            let c = try server.client()
            let count = Int(next() % 400)
            var bytes = Array(prefixes[round % prefixes.count].utf8)
            bytes += (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) }
            bytes += Array("\r\n\r\n".utf8)
            try? c.send(bytes)
            shutdown(c.fd, Int32(SHUT_WR))
            _ = c.isClosedByServer()
        }
        #expect(try server.client().request("GET", "/healthz").status == 200)
        #expect(server.stop() == 0)
    }
}
