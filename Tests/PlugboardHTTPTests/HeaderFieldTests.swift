@testable import PlugboardHTTP
import PlugboardHTTPCodec
import Testing

/// A head's fields are ranges in one copy of its header section, each value made a
/// string only when asked for: what a lookup gives must be what the parser read.
@Suite struct HeaderFieldTests {
    @Test func namesAreLookedUpWithoutRegardToCase_andListedInLowerCase() throws {
        let h = try #require(try head("GET / HTTP/1.1\r\nHOST: h\r\nX-Thing: 1\r\nAccept: */*\r\nx-THING: 2\r\n\r\n"))
        #expect(h.headers["host"] == "h" && h.headers["Host"] == "h" && h.headers["HOST"] == "h")
        #expect(h.headers["X-THING"] == "1")
        #expect(h.headers.count == 4)
        #expect(h.headers.fields.map(\.name) == ["host", "x-thing", "accept", "x-thing"])
        #expect(h.headers.fields.map(\.value) == ["h", "1", "*/*", "2"])
        // Same length, other name: the presence mask lets it through, the bytes tell.
        #expect(h.headers["x-thinG"] == "1" && h.headers["x-thinh"] == nil && h.headers.count(of: "accepT") == 1)
        #expect(h.headers["expect"] == nil && h.headers.values("expect").isEmpty)
    }

    @Test func repeatedNamesKeepEveryValueInOrder() throws {
        let h = try #require(try head("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nX-B: b\r\nx-a: 2\r\nX-A: 3\r\n\r\n"))
        #expect(h.headers.values("x-a") == ["1", "2", "3"])
        #expect(h.headers.count(of: "X-A") == 3)
        #expect(h.headers["x-a"] == "1")
        #expect(h.headers.values("x-b") == ["b"])
    }

    @Test func valuesLoseTheWhitespaceAroundThem_andMayBeEmpty() throws {
        let h = try #require(try head("GET / HTTP/1.1\r\nHost: h\r\nX-Pad: \t a  b \t\r\nX-Empty:\r\nX-Blank:   \t \r\nX-Tight:v\r\n\r\n"))
        #expect(h.headers["x-pad"] == "a  b")
        #expect(h.headers["x-empty"] == "" && h.headers.count(of: "x-empty") == 1)
        #expect(h.headers["x-blank"] == "")
        #expect(h.headers["x-tight"] == "v")
    }

    @Test func foldedLinesAndWhitespaceBeforeTheColonAreRefused() {
        for text in ["GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n folded\r\n\r\n",
                     "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tfolded\r\n\r\n",
                     "GET / HTTP/1.1\r\nHost: h\r\nX : a\r\n\r\n"] {
            #expect(readAll(text) == [.refused(400, "http.bad_request")], "\(text.debugDescription)")
        }
    }

    @Test func valuesAreMadeFromTheirBytes() throws {
        let bytes = Array("GET / HTTP/1.1\r\nHost: h\r\nX-Text: r\u{E9}sum\u{E9}\r\nX-Raw: a".utf8) + [0xFF] + Array("b\r\n\r\n".utf8)
        var reader = RequestReader(source: ChunkedSource(bytes), limits: HTTPLimits())
        let h = try #require(try reader.nextHead())
        #expect(h.headers["x-text"] == "r\u{E9}sum\u{E9}")
        // obs-text that is not UTF-8 becomes U+FFFD, as a string of the bytes always did.
        #expect(h.headers["x-raw"] == "a\u{FFFD}b")
    }

    @Test func theHeadKeepsItsOwnCopy_whateverTheBufferHoldsNext() throws {
        var decoder = RequestDecoder()
        var buffer = Array("GET /a HTTP/1.1\r\nHost: one\r\nX-V: first\r\n\r\n".utf8)
        var start = 0
        guard case .head(let first) = try decoder.next(buffer, start: &start, end: buffer.count) else {
            Issue.record("no head")
            return
        }
        for i in buffer.indices { buffer[i] = UInt8(ascii: "z") }
        #expect(first.headers["host"] == "one" && first.headers["x-v"] == "first")
    }

    @Test func aHeadWithoutFieldsHasNone() throws {
        let h = try #require(try head("GET / HTTP/1.0\r\n\r\n"))
        #expect(h.headers.count == 0 && h.headers.fields.isEmpty && h.headers["host"] == nil)
    }

    @Test func fieldsGivenAsPairsAreLookedUpAsParsedOnesAre() {
        let headers = HTTPHeaders([("Content-Type", "text/plain"), ("X-Empty", ""), ("x-a", "1"), ("X-A", "2")])
        #expect(headers.fields.map(\.name) == ["content-type", "x-empty", "x-a", "x-a"])
        #expect(headers["CONTENT-TYPE"] == "text/plain" && headers["x-empty"] == "")
        #expect(headers.values("x-a") == ["1", "2"])
        #expect(HTTPHeaders().count == 0 && HTTPHeaders()["x"] == nil)
        let blank = HTTPHeaders([("", ""), ("", "")])
        #expect(blank.count == 2 && blank[""] == "" && blank.values("") == ["", ""] && blank.fields.map(\.name) == ["", ""])
    }

    @Test func theFieldAfterTheLastAllowedIsRefused_afterTheOnesBeforeItAreChecked() {
        let limits = HTTPLimits(maxHeaderCount: 3)
        #expect(readAll("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n", limits: limits).first
                == .request(method: "GET", target: "/", body: []))
        #expect(readAll("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits)
                == [.refused(431, "http.headers_too_large")])
        // A malformed field before the one too many is what is refused.
        #expect(readAll("GET / HTTP/1.1\r\nHost: h\r\nA 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits)
                == [.refused(400, "http.bad_request")])
    }

    @Test func aResponseHeadLargerThanItsFirstRoomIsWrittenWhole() {
        let long = String(repeating: "v", count: 5000)
        let response = HTTPResponse(status: 200, headers: [("X-Long", long), ("X-Short", "s")], body: Array("hi".utf8))
        let text = String(decoding: response.serialize(head: false, keepAlive: true, date: "D"), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nX-Long: \(long)\r\nX-Short: s\r\nContent-Length: 2\r\nDate: D\r\n\r\nhi")
    }

    @Test func aResponseHeadIsWrittenAfterWhatTheBufferHolds_withASmallBodyBehindIt() {
        let small = HTTPResponse(status: 200, body: Array("hi".utf8))
        var out = Array("x".utf8)
        #expect(!small.write(into: &out, head: false, keepAlive: true, version: .http11, date: "D"))
        #expect(String(decoding: out, as: UTF8.self) == "xHTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: D\r\n\r\nhi")
        let large = HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: HTTPResponse.copiedBodyLimit + 1))
        var head: [UInt8] = []
        #expect(large.write(into: &head, head: false, keepAlive: true, version: .http11, date: "D"))
        #expect(String(decoding: head, as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Length: \(HTTPResponse.copiedBodyLimit + 1)\r\nDate: D\r\n\r\n")
        var headOnly: [UInt8] = []
        #expect(!large.write(into: &headOnly, head: true, keepAlive: false, version: .http11, date: "D"))
        #expect(String(decoding: headOnly, as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Length: \(HTTPResponse.copiedBodyLimit + 1)\r\nConnection: close\r\nDate: D\r\n\r\n")
    }
}
