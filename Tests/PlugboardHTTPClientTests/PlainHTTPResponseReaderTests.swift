import Testing
@testable import PlugboardHTTPClient

/// Responses as bytes, cut into pieces of every size so that no framing rule depends on
/// where reads happen to split the stream.
@Suite struct PlainHTTPResponseReaderTests {
    /// Hands out `bytes` at most `piece` at a time, then the end of the stream.
    struct Pieces: PlainHTTPByteSource {
        var bytes: [UInt8]
        var piece: Int
        var offset = 0

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(PlainHTTPError) -> Int {
            let count = min(piece, buffer.count, bytes.count - offset)
            let start = offset
            bytes.withUnsafeBytes { source in
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<(start + count)]))
            }
            offset += count
            return count
        }
    }

    static func read(_ text: String, method: String = "GET", piece: Int, limits: PlainHTTPLimits = PlainHTTPLimits())
        throws(PlainHTTPError) -> PlainHTTPResponse {
        var reader = PlainHTTPResponseReader(Pieces(bytes: Array(text.utf8), piece: piece), limits: limits)
        return try reader.read(method: method)
    }

    static let pieces = [1, 2, 3, 7, 64, 1 << 16]

    @Test(arguments: pieces) func contentLength(piece: Int) throws {
        let response = try Self.read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"x\"\r\nX-Amz-Meta-A: 1\r\nx-amz-meta-a: 2\r\n\r\nhello", piece: piece)
        #expect(response.status == 200 && response.body == Array("hello".utf8) && response.reusable)
        #expect(response.headers["etag"] == "\"x\"" && response.headers["x-amz-meta-a"] == "1, 2")
    }

    @Test(arguments: pieces) func chunkedWithExtensionsAndTrailers(piece: Int) throws {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;name=v\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n"
        let response = try Self.read(text, piece: piece)
        #expect(response.body == Array("hello world".utf8) && response.reusable)
    }

    @Test(arguments: pieces) func closeDelimitedIsReadToTheEndAndNotReused(piece: Int) throws {
        let response = try Self.read("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", piece: piece)
        #expect(response.body == Array("until the end".utf8) && !response.reusable)
    }

    @Test func interimResponsesAreSkipped() throws {
        let response = try Self.read("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", piece: 5)
        #expect(response.status == 204 && response.body.isEmpty && response.reusable)
    }

    @Test func headAnswersHaveNoBodyAndKeepTheConnection() throws {
        let response = try Self.read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", method: "HEAD", piece: 4)
        #expect(response.body.isEmpty && response.headers["content-length"] == "5" && response.reusable)
    }

    @Test func connectionCloseAndHTTP10AreNotReused() throws {
        #expect(try !Self.read("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", piece: 9).reusable)
        #expect(try !Self.read("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", piece: 9).reusable)
        #expect(try Self.read("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", piece: 9).reusable)
        // Bytes after the response that nobody asked for.
        #expect(try !Self.read("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200", piece: 1 << 16).reusable)
    }

    @Test func oversizeHeadersAreRefusedNamingTheLimit() {
        let text = "HTTP/1.1 200 OK\r\nX-Big: " + String(repeating: "a", count: 5000) + "\r\n\r\n"
        // All of it in one read: refused once complete.
        #expect(throws: PlainHTTPError.tooLarge(what: "response header", limit: 1024, found: 5028)) {
            try Self.read(text, piece: 1 << 16, limits: PlainHTTPLimits(maxHeaderBytes: 1024))
        }
        // Trickling in: refused as soon as the limit is passed, before the end arrives.
        #expect(throws: PlainHTTPError.tooLarge(what: "response header", limit: 1024, found: 1100)) {
            try Self.read(text, piece: 100, limits: PlainHTTPLimits(maxHeaderBytes: 1024))
        }
        let error = PlainHTTPError.tooLarge(what: "response header", limit: 1024, found: 5028)
        #expect(error.description == "response header too large: expected at most 1024 bytes, found 5028")
    }

    /// A length of gigabytes, in as many leading zeros as it likes, with a few bytes behind
    /// it: the reader reserves no more than 1 MiB for it and fails at the early end (the
    /// s3-response fuzz target ran out of memory on this before).
    @Test func aHugeAnnouncedLengthWithAFewBytesCommitsNoMemory() {
        let text = "HTTP/1.1 200 OK\r\nContent-Length: " + String(repeating: "0", count: 70) + "3442882186\r\n\r\nhello"
        #expect(throws: PlainHTTPError.self) { try Self.read(text, piece: 7) }
    }

    @Test func oversizeBodiesAreRefusedBeforeTheyAreRead() {
        let limits = PlainHTTPLimits(maxBodyBytes: 10)
        #expect(throws: PlainHTTPError.tooLarge(what: "response body", limit: 10, found: 11)) {
            try Self.read("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n", piece: 3, limits: limits)
        }
        #expect(throws: PlainHTTPError.tooLarge(what: "response body", limit: 10, found: 12)) {
            try Self.read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n0\r\n\r\n", piece: 3, limits: limits)
        }
        #expect(throws: PlainHTTPError.tooLarge(what: "response body", limit: 10, found: 16)) {
            try Self.read("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "z", count: 16), piece: 1 << 16, limits: limits)
        }
        // Trickling in: refused at the first read past the limit (the head's last read
        // brought the first byte).
        #expect(throws: PlainHTTPError.tooLarge(what: "response body", limit: 10, found: 13)) {
            try Self.read("HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "z", count: 16), piece: 4, limits: limits)
        }
    }

    @Test func garbageIsABadResponseNamingWhatWasFound() {
        #expect(throws: PlainHTTPError.badResponse(expected: "an HTTP/1.x status line", found: "\"SSH-2.0-OpenSSH_9.2\"")) {
            try Self.read("SSH-2.0-OpenSSH_9.2\r\n\r\n", piece: 4)
        }
        #expect(throws: PlainHTTPError.badResponse(expected: "a \"Name: value\" header line", found: "\"no colon here\"")) {
            try Self.read("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", piece: 4)
        }
        #expect(throws: PlainHTTPError.badResponse(expected: "a Content-Length of decimal digits", found: "\"5, 6\"")) {
            try Self.read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", piece: 4)
        }
        #expect(throws: PlainHTTPError.badResponse(expected: "a hexadecimal chunk size", found: "\"zz\"")) {
            try Self.read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", piece: 4)
        }
        #expect(throws: PlainHTTPError.badResponse(expected: "a header block ending in a blank line", found: "the end of the stream after 18 bytes")) {
            try Self.read("HTTP/1.1 200 OK\r\nA", piece: 4)
        }
    }

    /// Found by Tests/Fuzz/s3-response (corpus/crash-negative-chunk-size.http): a signed
    /// chunk size was read as a count, and "-6" trapped the reader, so a server could take
    /// the host down with one response.
    @Test(arguments: ["-6", "+6", "-0"]) func signedChunkSizeIsABadResponse(size: String) {
        #expect(throws: PlainHTTPError.badResponse(expected: "a hexadecimal chunk size", found: "\"\(size)\"")) {
            try Self.read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n", piece: 4)
        }
    }

    @Test func truncatedBodiesAndSilentClosesAreLostConnections() {
        #expect(throws: PlainHTTPError.connectionLost("the server closed the connection after 3 of 5 body bytes")) {
            try Self.read("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", piece: 2)
        }
        #expect(throws: PlainHTTPError.connectionLost("the server closed the connection after 2 of a chunk's 5 bytes (4 body bytes in all)")) {
            try Self.read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nxy\r\n5\r\nab", piece: 2)
        }
        #expect(throws: PlainHTTPError.connectionLost("the server closed the connection in the middle of a chunked body")) {
            try Self.read("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello", piece: 2)
        }
        var reader = PlainHTTPResponseReader(Pieces(bytes: [], piece: 1))
        #expect(throws: PlainHTTPError.connectionLost("the server closed the connection before answering")) {
            try reader.read(method: "GET")
        }
        #expect(!reader.receivedAny)
    }

    @Test func aChunkedUploadAnnouncesItsCodingAndFramesEachPiece() throws {
        var request = PlainHTTPRequest(method: "PUT", host: "127.0.0.1", port: 80, hostHeader: "h", target: "/k",
                                       headers: [], sendsLength: true)
        request.chunked = true
        #expect(try String(decoding: PlainHTTPClient.encode(request), as: UTF8.self)
            == "PUT /k HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(PlainHTTPUpload.chunk(Array("hello".utf8)) == Array("5\r\nhello\r\n".utf8))
        #expect(PlainHTTPUpload.chunk([UInt8](repeating: 0x41, count: 300)).prefix(5) == Array("12c\r\n".utf8)[...])
    }

    @Test func requestsAreEncodedWithTheSignedHostAndRefuseLineBreaks() throws {
        var request = PlainHTTPRequest(method: "PUT", host: "::1", port: 9000, hostHeader: "[::1]:9000", target: "/b/k?x=1",
                                       headers: [("x-amz-date", "20261129T230000Z")], body: [], sendsLength: true)
        #expect(try String(decoding: PlainHTTPClient.encode(request), as: UTF8.self)
            == "PUT /b/k?x=1 HTTP/1.1\r\nHost: [::1]:9000\r\nx-amz-date: 20261129T230000Z\r\nContent-Length: 0\r\n\r\n")
        request.headers.append(("x-amz-meta-a", "1\r\nEvil: yes"))
        #expect(throws: PlainHTTPError.invalidRequest("a header field value holds a CR, LF or other control: \"1??Evil: yes\"")) {
            try PlainHTTPClient.encode(request)
        }
    }
}
