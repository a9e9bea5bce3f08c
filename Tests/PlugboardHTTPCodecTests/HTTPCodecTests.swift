import PlugboardHTTPCodec
import Testing

/// The grammar both directions read by: each refusal here is one the server gives a
/// request and the client gives a response, from the same code.
@Suite struct HTTPFieldLineTests {
    private func parse(_ text: String) throws(HTTPSyntaxError) -> (String, String) {
        let bytes = Array(text.utf8)
        let line = try HTTPFieldLine.parse(bytes, 0..<bytes.count)
        return (line.lowercasedName(in: bytes), line.value(in: bytes))
    }

    @Test func aFieldIsItsLowerCaseNameAndItsValueWithoutSurroundingWhitespace() throws {
        #expect(try parse("Content-Type: \t text/plain; q=1 \t") == ("content-type", "text/plain; q=1"))
        #expect(try parse("X-Empty:") == ("x-empty", ""))
        #expect(try parse("x-utf8: r\u{E9}sum\u{E9}") == ("x-utf8", "r\u{E9}sum\u{E9}"))
    }

    @Test func aNameIsComparedWithoutRegardToASCIICase_andByItsBytes() throws {
        let bytes = Array("X-Amz-Date: 1".utf8)
        let line = try HTTPFieldLine.parse(bytes, 0..<bytes.count)
        func has(_ name: String) -> Bool {
            bytes.withUnsafeBufferPointer { all in Array(name.utf8).withUnsafeBufferPointer { line.hasName($0, in: all) } }
        }
        #expect(has("x-amz-date") && has("X-AMZ-DATE") && has("X-Amz-Date"))
        #expect(!has("x-amz-dat") && !has("x-amz-datex") && !has("x-amz_date") && !has(""))
        // Only ASCII letters fold: "^" and "~" differ by the case bit and stay apart.
        let at = Array("a^: 1".utf8)
        let atLine = try HTTPFieldLine.parse(at, 0..<at.count)
        #expect(at.withUnsafeBufferPointer { all in Array("a~".utf8).withUnsafeBufferPointer { !atLine.hasName($0, in: all) } })
    }

    @Test func theRangesAreTheBuffersOwn() throws {
        let bytes = Array("GET / HTTP/1.1\r\nHost: a\r\n".utf8)
        let line = try HTTPFieldLine.parse(bytes, 16..<23)
        #expect(line.name == 16..<20)
        #expect(line.value == 22..<23)
    }

    @Test(arguments: [
        (" folded: x", HTTPSyntaxError.Kind.obsoleteFolding),
        ("\tfolded: x", .obsoleteFolding),
        ("no colon here", .missingColon),
        (": no name", .invalidFieldName),
        ("Name : space before colon", .invalidFieldName),
        ("Na(me: x", .invalidFieldName),
        ("Name: a\u{0}b", .invalidFieldValue),
        ("Name: a\rb", .invalidFieldValue),
        ("Name: a\u{7F}", .invalidFieldValue),
        ("", .emptyLine),
    ])
    func everyMalformedLineIsRefusedWithItsReason(text: String, kind: HTTPSyntaxError.Kind) {
        #expect(throws: HTTPSyntaxError.self) { try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.kind == kind)
            #expect(error.expected == "a \"Name: value\" header line")
        }
    }
}

@Suite struct HTTPByteTests {
    @Test func tokenBytesAreRFC9110sTchars() {
        let tchar = Set("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
        for b in 0...255 { #expect(HTTPByte.isToken(UInt8(b)) == tchar.contains(UInt8(b)), "byte \(b)") }
    }
}

@Suite struct HTTPNumberTests {
    @Test func aContentLengthIsDigitsOnly() throws {
        #expect(try HTTPNumber.contentLength("0".utf8) == 0)
        #expect(try HTTPNumber.contentLength("007".utf8) == 7)
        #expect(try HTTPNumber.contentLength(String(Int.max).utf8) == Int.max)
        for bad in ["", "-1", "+1", " 1", "1 ", "1,1", "0x10", "1e3"] {
            #expect(throws: HTTPSyntaxError(.invalidNumber, "invalid Content-Length", expected: "a Content-Length of decimal digits",
                                            detail: "Expected a decimal number of bytes.")) {
                try HTTPNumber.contentLength(bad.utf8)
            }
        }
    }

    @Test func aContentLengthPastItsLimitOrPastIntIsTooLarge() {
        for (text, limit) in [("11", 10), ("9223372036854775808", Int.max), (String(repeating: "9", count: 40), Int.max)] {
            do {
                _ = try HTTPNumber.contentLength(text.utf8, limit: limit)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.kind == .numberTooLarge)
            }
        }
    }

    @Test func aChunkSizeIsHexadecimalWithOptionalExtensions() throws {
        #expect(try HTTPNumber.chunkSize(ArraySlice("1a".utf8)) == 26)
        #expect(try HTTPNumber.chunkSize(ArraySlice("FF ;name=value".utf8)) == 255)
        #expect(try HTTPNumber.chunkSize(ArraySlice("0".utf8)) == 0)
        #expect(try HTTPNumber.chunkSize(ArraySlice(String(repeating: "f", count: 15).utf8)) == (1 << 60) - 1)
        let cases: [(String, HTTPSyntaxError.Kind)] = [
            ("", .invalidChunkSize), ("-6", .invalidChunkSize), ("+6", .invalidChunkSize), (" 6", .invalidChunkSize),
            ("6 x", .invalidChunkSize), ("zz", .invalidChunkSize),
            (String(repeating: "f", count: 16), .chunkSizeTooLarge), ("6;\u{1}", .invalidChunkExtension),
        ]
        for (text, kind) in cases {
            do {
                _ = try HTTPNumber.chunkSize(ArraySlice(text.utf8))
                Issue.record("\(text.debugDescription) was accepted")
            } catch {
                #expect(error.kind == kind, "\(text.debugDescription)")
                #expect(error.expected == "a hexadecimal chunk size")
            }
        }
    }

    @Test func aSliceIsReadFromItsOwnIndices() throws {
        let bytes = Array("xx10;yy".utf8)
        #expect(try HTTPNumber.chunkSize(bytes[2...]) == 16)
    }
}

@Suite struct HTTPStatusLineAndPersistenceTests {
    @Test func aStatusLineGivesItsVersionAndStatus() throws {
        #expect(try HTTPStatusLine.parse(ArraySlice("HTTP/1.1 200 OK".utf8)) == HTTPStatusLine(minorVersion: 1, status: 200))
        #expect(try HTTPStatusLine.parse(ArraySlice("HTTP/1.0 404".utf8)) == HTTPStatusLine(minorVersion: 0, status: 404))
        for bad in ["HTTP/2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 200OK", "SSH-2.0-OpenSSH_9.2", "http/1.1 200 OK", ""] {
            #expect(throws: HTTPSyntaxError(.invalidStatusLine, "malformed status line", expected: "an HTTP/1.x status line")) {
                try HTTPStatusLine.parse(ArraySlice(bad.utf8))
            }
        }
    }

    @Test func persistenceFollowsTheVersionAndTheConnectionOptions() {
        #expect(HTTPPersistence.keepAlive(minorVersion: 1, connection: [String]()))
        #expect(!HTTPPersistence.keepAlive(minorVersion: 1, connection: ["keep-alive, Close"]))
        #expect(!HTTPPersistence.keepAlive(minorVersion: 1, connection: ["upgrade", " close "]))
        #expect(HTTPPersistence.keepAlive(minorVersion: 1, connection: ["closed"]), "an option is a whole token")
        #expect(!HTTPPersistence.keepAlive(minorVersion: 0, connection: [String]()))
        #expect(HTTPPersistence.keepAlive(minorVersion: 0, connection: ["Keep-Alive"]))
    }
}

@Suite struct HTTPHeadWriterTests {
    @Test func aControlIsFoundAtEveryPlaceOfAValueOfEveryLength() throws {
        for length in 1...40 {
            let clean = Array(repeating: UInt8(ascii: "v"), count: length)
            let line = Array("X: ".utf8) + clean
            #expect(try HTTPFieldLine.parse(line, 0..<line.count).value == 3..<line.count)
            for place in 0..<length {
                for control: UInt8 in [0, 0x0A, 0x0D, 0x1F, 0x7F] {
                    var value = clean
                    value[place] = control
                    let bad = Array("X: ".utf8) + value + Array("w".utf8)
                    #expect(throws: HTTPSyntaxError.self) { try HTTPFieldLine.parse(bad, 0..<bad.count) }
                    var writer = HTTPHeadWriter()
                    writer.field("X", replacingControls: String(decoding: value, as: UTF8.self))
                    var expected = clean
                    expected[place] = HTTPByte.space
                    #expect(writer.bytes == Array("X: ".utf8) + expected + [HTTPByte.cr, HTTPByte.lf], "length \(length), place \(place)")
                }
            }
        }
    }

    @Test func aHeadWrittenInPlaceStopsAtThePieceThatDoesNotFit() {
        var after: UInt8 = 0
        let written = [UInt8](unsafeUninitializedCapacity: 24) { buffer, count in
            var out = HTTPHeadWriter.InPlace(UnsafeMutableBufferPointer(rebasing: buffer[0..<20]))
            buffer[20] = 0xAA
            out.field("X-Long", replacingControls: "0123456789abcdef")
            #expect(out.overflowed)
            // Nothing after the piece that did not fit, even one that would.
            let before = out.written(since: buffer)
            out.end()
            #expect(out.written(since: buffer) == before)
            after = buffer[20]
            count = out.written(since: buffer)
        }
        #expect(after == 0xAA)
        #expect(String(decoding: written, as: UTF8.self) == "X-Long: ")
    }

    @Test func aHeadWrittenInPlaceIsTheWritersHead_inTheSizeItsPiecesSaid() {
        let values = ["text/plain", "", "a\r\nInjected: 1\u{0}\u{7F}", "r\u{E9}sum\u{E9}", String(repeating: "v", count: 40)]
        for status in [200, 404, 1_000] {
            for length in [0, 7, 1_234_567, -3] {
                var writer = HTTPHeadWriter()
                writer.statusLine(minorVersion: 0, status: status, reason: "Reason")
                var size = HTTPHeadWriter.InPlace.statusLineSize(status: status, reason: "Reason") + HTTPHeadWriter.InPlace.endSize
                for value in values {
                    writer.field("X-Value", replacingControls: value)
                    size += HTTPHeadWriter.InPlace.fieldSize("X-Value", value)
                }
                writer.field("Content-Length", decimal: length)
                size += HTTPHeadWriter.InPlace.fieldSize("Content-Length", decimal: length)
                writer.end()
                let body: [UInt8] = [1, 2, 3]
                let inPlace = [UInt8](unsafeUninitializedCapacity: size + body.count) { buffer, count in
                    var out = HTTPHeadWriter.InPlace(buffer)
                    out.statusLine(minorVersion: 0, status: status, reason: "Reason")
                    for value in values { out.field("X-Value", replacingControls: value) }
                    out.field("Content-Length", decimal: length)
                    out.end()
                    body.withUnsafeBufferPointer { out.bytes($0) }
                    count = out.written(since: buffer)
                }
                #expect(inPlace == writer.bytes + body, "status \(status), length \(length)")
                #expect(inPlace.count == size + body.count)
            }
        }
    }

    @Test func aRequestHeadIsWrittenAsItIsGiven() throws {
        var head = HTTPHeadWriter()
        try head.requestLine(method: "PUT", target: "/b/k?x=1")
        try head.field("Host", "[::1]:9000")
        head.field("Content-Length", decimal: 1234)
        head.field("X-Zero", decimal: 0)
        head.end()
        #expect(String(decoding: head.bytes, as: UTF8.self)
            == "PUT /b/k?x=1 HTTP/1.1\r\nHost: [::1]:9000\r\nContent-Length: 1234\r\nX-Zero: 0\r\n\r\n")
    }

    @Test func numbersAreWrittenInDecimal() {
        for value in [0, 1, 9, 10, 99, 100, 206, 1024, 65_535, 5 << 30, Int.max, -1] {
            var head = HTTPHeadWriter()
            head.field("N", decimal: value)
            #expect(String(decoding: head.bytes, as: UTF8.self) == "N: \(value)\r\n")
        }
    }

    @Test func aStatusLineAndFieldsWithControlsReplaced() {
        var head = HTTPHeadWriter()
        head.statusLine(minorVersion: 0, status: 206, reason: "Partial Content")
        head.field("X-Stored", replacingControls: "a\r\nEvil: yes\u{0}")
        head.field("X-Plain", replacingControls: "r\u{E9}sum\u{E9}\tok")
        head.end()
        #expect(String(decoding: head.bytes, as: UTF8.self)
            == "HTTP/1.0 206 Partial Content\r\nX-Stored: a  Evil: yes \r\nX-Plain: r\u{E9}sum\u{E9}\tok\r\n\r\n")
    }

    /// Header injection: nothing the caller passes can end a field early.
    @Test func aFieldThatWouldSplitTheHeadIsRefused() {
        var head = HTTPHeadWriter()
        let cases: [(String, String, String)] = [
            ("X-A", "1\r\nEvil: yes", "a header field value holds a CR, LF or other control: \"1??Evil: yes\""),
            ("X-A", "nul\u{0}", "a header field value holds a CR, LF or other control: \"nul?\""),
            ("X A", "1", "a header field name is not a token: \"X A\""),
            ("", "1", "a header field name is not a token: \"\""),
            ("X-\r\nB", "1", "a header field name is not a token: \"X-??B\""),
        ]
        for (name, value, summary) in cases {
            do {
                try head.field(name, value)
                Issue.record("\(name.debugDescription): \(value.debugDescription) was written")
            } catch {
                #expect(error.summary == summary)
                #expect(error.kind == .invalidFieldForWriting)
            }
        }
        #expect(throws: HTTPSyntaxError.self) { try head.requestLine(method: "GET", target: "/a b") }
        #expect(throws: HTTPSyntaxError.self) { try head.requestLine(method: "G\nET", target: "/") }
        #expect(head.bytes.isEmpty, "a refused piece writes nothing")
    }

    @Test func aLongRefusedValueIsShownCut() {
        var head = HTTPHeadWriter()
        do {
            try head.field("X", String(repeating: "v", count: 50) + "\n")
            Issue.record("written")
        } catch {
            #expect(error.summary == "a header field value holds a CR, LF or other control: \"\(String(repeating: "v", count: 40))...\"")
        }
    }
}
