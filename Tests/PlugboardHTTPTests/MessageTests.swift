import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP
import Testing

@Suite struct MessageTests {
    @Test func percentDecoding_followsTheContract() throws {
        #expect(try PercentDecoding.decode("a%2Fb%2e%2E+c%C3%A9") == Array("a/b..+c\u{e9}".utf8))
        #expect(try PercentDecoding.decode("a/b") == Array("a/b".utf8))
        #expect(try PercentDecoding.decode("%00") == [0])
        for bad in ["%", "%4", "%zz", "a%g0", "%%41"] {
            #expect(throws: HTTPError.self) { try PercentDecoding.decode(Substring(bad)) }
        }
    }

    @Test func queryItems_decodeNamesAndValues_andKeepEmptyValues() throws {
        let items = try PercentDecoding.queryItems("prefix=a%2Fb+c&cursor=&limit=5&flag")
        #expect(items.map(\.name) == ["prefix", "cursor", "limit", "flag"])
        #expect(items.map(\.value) == ["a/b+c", "", "5", ""])
        #expect(try PercentDecoding.queryItems(nil).isEmpty)
        #expect(throws: HTTPError.self) { try PercentDecoding.queryItems("prefix=%FF") }
    }

    @Test func headerLookups_matchLowerCasedNamesByteForByte() {
        let headers = HTTPHeaders([("Host", "h"), ("X-A", "1"), ("x-a", "2"), ("X-AB", "3"), ("", "empty"), ("caf\u{E9}", "e")])
        #expect(headers["host"] == "h")
        #expect(headers["x-a"] == "1")
        #expect(headers.values("x-a") == ["1", "2"])
        #expect(headers.count(of: "x-a") == 2)
        #expect(headers.count(of: "x-ab") == 1)
        #expect(headers.values("missing").isEmpty && headers["missing"] == nil && headers.count(of: "missing") == 0)
        #expect(headers[""] == "empty" && headers.count(of: "") == 1)
        // Bytes, not Unicode equivalence: a decomposed e-acute is another name.
        #expect(headers["caf\u{E9}"] == "e" && headers["cafe\u{301}"] == nil)
    }

    @Test func headerLookups_tellNamesOfTheSameLengthApart() {
        // The presence mask keeps lengths: "user-agent" and "connection" share one, and
        // the walk over the fields tells them apart.
        let headers = HTTPHeaders([("User-Agent", "curl")])
        #expect(headers["connection"] == nil && headers.count(of: "connection") == 0 && headers.values("connection").isEmpty)
        #expect(headers["user-agent"] == "curl" && headers.count(of: "user-agent") == 1)
        // Lengths from 64 on share the bits of the short ones.
        let many = HTTPHeaders((1...70).map { (String(repeating: "a", count: $0), "\($0)") })
        for n in 1...70 { #expect(many[String(repeating: "a", count: n)] == "\(n)") }
        #expect(many.count(of: String(repeating: "b", count: 64)) == 0 && many["b"] == nil)
    }

    @Test func percentEncoding_keepsOnlyUnreservedBytes_andDotsUnlessAsked() {
        #expect(PercentEncoding.encode("object.bin", encodingDots: true) == "object%2Ebin")
        #expect(PercentEncoding.encode("object.bin") == "object.bin")
        #expect(PercentEncoding.encode("a b/\u{FC}~_-") == "a%20b%2F%C3%BC~_-")
        #expect(PercentEncoding.encode("") == "")
        // A result longer than a small string.
        #expect(PercentEncoding.encode(String(repeating: "/", count: 100)) == String(repeating: "%2F", count: 100))
        #expect(PercentEncoding.encode([0x00, 0xFF, 0x41]) == "%00%FFA")
    }

    @Test func asciiText_isMadeOnlyFromASCIIBytes() {
        #expect(Array("key/1.bin".utf8).withUnsafeBufferPointer(ASCIIText.string) == "key/1.bin")
        #expect(Array("\u{FC}".utf8).withUnsafeBufferPointer(ASCIIText.string) == nil)
        #expect([UInt8]([0x41, 0x80]).withUnsafeBufferPointer(ASCIIText.string) == nil)
        #expect([UInt8]().withUnsafeBufferPointer(ASCIIText.string) == "")
    }

    @Test func targetPath_endsAtTheFirstQuestionMark() {
        #expect(RequestHead.path(of: "/v1/objects/a?b=1?c") == "/v1/objects/a")
        #expect(RequestHead.path(of: "/v1/objects") == "/v1/objects")
        #expect(RequestHead.path(of: "?x") == "")
        #expect(RequestHead.path(of: "/caf%C3%A9?q") == "/caf%C3%A9")
    }

    @Test func serializer_writesLengthConnectionAndDate_andOmitsHeadBodies() {
        let r = HTTPResponse(status: 200, headers: [("Content-Type", "text/plain"), ("X-Bad", "a\r\nInjected: 1")],
                             body: Array("hello".utf8))
        let text = String(decoding: r.serialize(head: false, keepAlive: true, date: "D"), as: UTF8.self)
        #expect(text == "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Bad: a  Injected: 1\r\nContent-Length: 5\r\nDate: D\r\n\r\nhello")
        let head = HTTPResponse(status: 200, headLength: 42)
        #expect(String(decoding: head.serialize(head: true, keepAlive: false, date: "D"), as: UTF8.self)
                == "HTTP/1.1 200 OK\r\nContent-Length: 42\r\nConnection: close\r\nDate: D\r\n\r\n")
        let noContent = HTTPResponse(status: 204)
        #expect(String(decoding: noContent.serialize(head: false, keepAlive: true, version: .http10, date: "D"), as: UTF8.self)
                == "HTTP/1.0 204 No Content\r\nConnection: keep-alive\r\nDate: D\r\n\r\n")
    }

    /// A status a plugin may map its code to goes out with its reason phrase, not a
    /// made-up one (issue 33: `HTTP/1.1 415 Status 415`).
    @Test func everyStatusAPluginMayMap_goesOutWithItsReasonPhrase() {
        for status in PlugboardError.Mapping.allowedStatuses {
            let line = String(decoding: HTTPResponse(status: status).serialize(head: false, keepAlive: true, date: "d"), as: UTF8.self)
                .prefix { $0 != "\r" }
            #expect(line.hasPrefix("HTTP/1.1 \(status) "), "\(line)")
            #expect(!line.contains("Status"), "\(line)")
        }
        let unsupported = HTTPResponse(status: 415).serialize(head: false, keepAlive: true, date: "d")
        #expect(String(decoding: unsupported, as: UTF8.self).hasPrefix("HTTP/1.1 415 Unsupported Media Type\r\n"))
    }
}
