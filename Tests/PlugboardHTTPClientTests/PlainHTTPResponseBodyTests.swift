import Glibc
import PlugboardConcurrency
import Testing
@testable import PlugboardHTTPClient

/// Response bodies read a piece at a time: the reader's framing over pieces of every size,
/// then ``PlainHTTPResponseBody`` over real loopback sockets (split writes, early closes,
/// bodies dropped or cancelled half-way).
@Suite struct PlainHTTPResponseBodyTests {
    typealias Pieces = PlainHTTPResponseReaderTests.Pieces

    /// Bytes without a short period, so that a piece delivered twice or skipped shows.
    static func data(_ count: Int) -> [UInt8] {
        // A plain loop over the buffer: a closure per byte costs seconds for 12 MiB in debug.
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for index in 0..<count {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                buffer[index] = UInt8(truncatingIfNeeded: state >> 56)
            }
            initialized = count
        }
    }

    static func chunkedEncoding(_ body: [UInt8], sizes: [Int]) -> [UInt8] {
        var out: [UInt8] = []
        var offset = 0
        var index = 0
        while offset < body.count {
            let size = min(sizes[index % sizes.count], body.count - offset)
            out += Array((String(size, radix: 16) + ";ext=1\r\n").utf8) + body[offset..<(offset + size)] + Array("\r\n".utf8)
            offset += size
            index += 1
        }
        return out + Array("0\r\nX-Trailer: t\r\n\r\n".utf8)
    }

    /// Every piece the reader hands out for `maxBytes`, and the reader after the last.
    static func pieces(_ bytes: [UInt8], piece: Int, maxBytes: Int) throws(PlainHTTPError)
        -> ([[UInt8]], PlainHTTPResponseReader<Pieces>) {
        var reader = PlainHTTPResponseReader(Pieces(bytes: bytes, piece: piece))
        _ = try reader.readHead(method: "GET")
        var out: [[UInt8]] = []
        while let chunk = try reader.nextBodyChunk(maxBytes: maxBytes) { out.append(chunk) }
        return (out, reader)
    }

    // MARK: - The reader's pieces

    @Test(arguments: PlainHTTPResponseReaderTests.pieces) func aContentLengthBodyComesInFullPieces(piece: Int) throws {
        let body = Self.data(1000)
        let (chunks, reader) = try Self.pieces(Array("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n".utf8) + body, piece: piece, maxBytes: 64)
        #expect(chunks.map(\.count) == Array(repeating: 64, count: 15) + [40])
        #expect(Array(chunks.joined()) == body && reader.isReusable && reader.bodyBytesRead == 1000)
    }

    @Test(arguments: PlainHTTPResponseReaderTests.pieces) func aChunkedBodysPiecesSpanItsChunks(piece: Int) throws {
        let body = Self.data(1000)
        let wire = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8) + Self.chunkedEncoding(body, sizes: [1, 100, 3, 500, 7])
        let (chunks, reader) = try Self.pieces(wire, piece: piece, maxBytes: 64)
        #expect(chunks.map(\.count) == Array(repeating: 64, count: 15) + [40])
        #expect(Array(chunks.joined()) == body && reader.isReusable)
    }

    @Test(arguments: PlainHTTPResponseReaderTests.pieces) func aCloseDelimitedBodyEndsWithTheStream(piece: Int) throws {
        let body = Self.data(300)
        let (chunks, reader) = try Self.pieces(Array("HTTP/1.1 200 OK\r\n\r\n".utf8) + body, piece: piece, maxBytes: 128)
        #expect(Array(chunks.joined()) == body && chunks.allSatisfy { $0.count <= 128 } && !reader.isReusable)
    }

    /// A body that streams events without end (etcd's watch) is handed over as each read
    /// brings it, never held back until a full piece has come.
    @Test(arguments: [1, 7, 100]) func whatArrivedIsWhatOneReadBrought(piece: Int) throws {
        let body = Self.data(1000)
        let wire = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8) + Self.chunkedEncoding(body, sizes: [50, 3, 400])
        var reader = PlainHTTPResponseReader(Pieces(bytes: wire, piece: piece))
        _ = try reader.readHead(method: "GET")
        var chunks: [[UInt8]] = []
        while let chunk = try reader.nextBodyChunk(maxBytes: 256, whatArrived: true) { chunks.append(chunk) }
        #expect(Array(chunks.joined()) == body && reader.isReusable)
        #expect(chunks.allSatisfy { !$0.isEmpty && $0.count <= piece }, "\(chunks.map(\.count))")
    }

    /// Backpressure: a piece costs reads of that piece, no more (a chunk's header line
    /// may bring up to one buffer's worth, 64 KiB, along).
    @Test func theReaderReadsNoFurtherThanThePieceAskedFor() throws {
        let head = Array("HTTP/1.1 200 OK\r\nContent-Length: 4194304\r\n\r\n".utf8)
        var reader = PlainHTTPResponseReader(Pieces(bytes: head + Self.data(4 << 20), piece: 1 << 16))
        _ = try reader.readHead(method: "GET")
        #expect(reader.source.offset <= 1 << 16)
        for index in 1...3 {
            #expect(try reader.nextBodyChunk(maxBytes: 256 * 1024)?.count == 256 * 1024)
            #expect(reader.source.offset == head.count + index * 256 * 1024)
        }

        let chunkedHead = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
        let wire = chunkedHead + Self.chunkedEncoding(Self.data(4 << 20), sizes: [100_000])
        var chunked = PlainHTTPResponseReader(Pieces(bytes: wire, piece: 1 << 16))
        _ = try chunked.readHead(method: "GET")
        for index in 1...3 {
            #expect(try chunked.nextBodyChunk(maxBytes: 256 * 1024)?.count == 256 * 1024)
            // Each 100,000-byte chunk has a header line of 13 bytes and a CRLF.
            #expect(chunked.source.offset <= chunkedHead.count + index * (256 * 1024 + 3 * 15) + (1 << 16))
        }
    }

    @Test(arguments: [1, 7, 1 << 16]) func aBodyCutShortThrowsNamingTheBytes(piece: Int) throws {
        let head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
        var reader = PlainHTTPResponseReader(Pieces(bytes: Array(head.utf8) + Self.data(700), piece: piece))
        _ = try reader.readHead(method: "GET")
        var delivered = 0
        #expect(throws: PlainHTTPError.connectionLost("the server closed the connection after 700 of 1000 body bytes")) {
            while let chunk = try reader.nextBodyChunk(maxBytes: 64) { delivered += chunk.count }
        }
        #expect(delivered == 640 && !reader.isReusable)
    }

    @Test func aMalformedChunkIsABadResponse() throws {
        var reader = PlainHTTPResponseReader(Pieces(bytes: Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX\r\n0\r\n\r\n".utf8), piece: 3))
        _ = try reader.readHead(method: "GET")
        #expect(throws: PlainHTTPError.badResponse(expected: "CRLF after a chunk's data", found: "\"XX\"")) {
            _ = try reader.nextBodyChunk(maxBytes: 64)
        }
        #expect(!reader.isReusable)
    }

    // MARK: - Over a socket

    static let lengthBody = data(3 << 20)
    static let chunkedBody = data((2 << 20) + 12_345)
    static let stalledLength = 64 << 20

    static func server() throws -> ScriptedHTTPServer {
        try ScriptedHTTPServer { line in
            let text = { (text: String) in Array(text.utf8) }
            switch line {
            case "GET /length HTTP/1.1":
                // Odd piece sizes a little apart: the client's reads split anywhere.
                return .init(bytes: text("HTTP/1.1 200 OK\r\nContent-Length: \(lengthBody.count)\r\n\r\n") + lengthBody, close: false,
                             piece: 40_009, pauseMicroseconds: 200)
            case "GET /chunked HTTP/1.1":
                return .init(bytes: text("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                                + chunkedEncoding(chunkedBody, sizes: [1, 70_000, 4_096, 333_333, 17]),
                             close: false, piece: 50_001, pauseMicroseconds: 100)
            case "GET /short HTTP/1.1":
                return .init(bytes: text("HTTP/1.1 200 OK\r\nContent-Length: 1048576\r\n\r\n") + data(300_000), close: true)
            case "GET /stalled HTTP/1.1":
                // 1 MiB of 64 MiB, then nothing until the client closes.
                return .init(bytes: text("HTTP/1.1 200 OK\r\nContent-Length: \(stalledLength)\r\n\r\n") + data(1 << 20), close: false,
                             hold: true)
            case "GET /missing HTTP/1.1":
                return .init(bytes: text("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nNoSuchKey"), close: false)
            default:
                return .init(bytes: text("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"), close: true)
            }
        }
    }

    static func open(_ client: PlainHTTPClient, _ target: String, port: Int) async throws -> PlainHTTPOpenedResponse {
        try await client.open(PlainHTTPPoolTests.request(target, port: port), streamingSuccess: true)
    }

    /// The whole body, piece by piece, and the size of each piece.
    static func readAll(_ body: PlainHTTPResponseBody) async throws -> ([UInt8], [Int]) {
        var bytes: [UInt8] = []
        var sizes: [Int] = []
        while let chunk = try await body.next() {
            bytes += chunk
            sizes.append(chunk.count)
        }
        return (bytes, sizes)
    }

    @Test func aContentLengthBodyStreamsAndItsConnectionIsReused() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 30)
        for _ in 0..<2 {
            let opened = try await Self.open(client, "/length", port: server.port)
            let body = try #require(opened.body)
            #expect(opened.response.status == 200 && opened.response.body.isEmpty && body.length == Self.lengthBody.count)
            let (bytes, sizes) = try await Self.readAll(body)
            #expect(bytes == Self.lengthBody)
            #expect(sizes == Array(repeating: PlainHTTPResponseBody.chunkBytes, count: 12), "3 MiB in pieces of 256 KiB")
            #expect(try await body.next() == nil && body.bytesReceived == Self.lengthBody.count)
            #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 1)
        }
        #expect(server.acceptedConnections == 1)
    }

    @Test func aChunkedBodyStreamsAndItsConnectionIsReused() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 30)
        let opened = try await Self.open(client, "/chunked", port: server.port)
        let body = try #require(opened.body)
        #expect(body.length == nil)
        let (bytes, sizes) = try await Self.readAll(body)
        #expect(bytes == Self.chunkedBody && sizes.dropLast().allSatisfy { $0 == PlainHTTPResponseBody.chunkBytes })
        _ = try await client.perform(PlainHTTPPoolTests.request("/missing", port: server.port))
        #expect(server.acceptedConnections == 1)
    }

    @Test func anErrorAnswerIsReadWholeAndNotStreamed() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 30)
        let opened = try await Self.open(client, "/missing", port: server.port)
        #expect(opened.body == nil && opened.response.status == 404 && opened.response.body == Array("NoSuchKey".utf8))
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 1)
    }

    @Test func aBodyTheServerCutsShortThrowsNamingTheBytesAndIsNotReused() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 30)
        let body = try #require(try await Self.open(client, "/short", port: server.port).body)
        let cut = PlainHTTPError.connectionLost("the server closed the connection after 300000 of 1048576 body bytes")
        await #expect(throws: cut) { _ = try await Self.readAll(body) }
        #expect(body.bytesReceived == 300_000)
        await #expect(throws: cut, "a failed body keeps failing") { _ = try await body.next() }
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 0)
    }

    /// Reads one piece of the stalled body and lets the body go.
    static func readOnePieceAndDrop(_ client: PlainHTTPClient, port: Int) async throws -> Int {
        let body = try #require(try await open(client, "/stalled", port: port).body)
        return try await body.next()?.count ?? 0
    }

    @Test func aBodyDroppedHalfWayClosesItsConnection() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 30)
        #expect(try await Self.readOnePieceAndDrop(client, port: server.port) == PlainHTTPResponseBody.chunkBytes)
        #expect(await server.waitForClientCloses(1), "the server still holds the connection of the dropped body")
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 0)
        _ = try await client.perform(PlainHTTPPoolTests.request("/missing", port: server.port))
        #expect(server.acceptedConnections == 2)
    }

    @Test func cancellingAReadThatWaitsOnTheSocketEndsItAndClosesTheConnection() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 300)
        let body = try #require(try await Self.open(client, "/stalled", port: server.port).body)
        // Four pieces come at once; the fifth waits for bytes the server never sends.
        let task = Task { try await Self.readAll(body) }
        try await Task.sleep(for: .milliseconds(300))
        let clock = ContinuousClock()
        let start = clock.now
        task.cancel()
        let result = await task.result
        // Liveness, as the pool's tests bound it: beside the whole suite a resumed task has
        // waited more than 60 s for a thread of the cooperative pool.
        #expect(clock.now - start < .seconds(240), "the server holds the body for ever; the timeout is 300 s")
        #expect(throws: PlainHTTPError.cancelled) { try result.get() }
        await #expect(throws: PlainHTTPError.cancelled) { _ = try await body.next() }
        #expect(await server.waitForClientCloses(1))
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 0)
    }

    @Test func aTaskCancelledBeforeItReadsGetsNoBytes() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let client = PlainHTTPClient(timeoutSeconds: 300)
        let body = try #require(try await Self.open(client, "/length", port: server.port).body)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await body.next()
        }
        await #expect(throws: PlainHTTPError.cancelled) { _ = try await task.value }
        #expect(client.pool.idleCount("127.0.0.1:\(server.port)") == 0)
    }
}
