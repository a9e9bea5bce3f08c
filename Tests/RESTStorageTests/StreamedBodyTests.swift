import PlugboardAPI
import PlugboardConcurrency
import RESTStorageClient
import Testing

/// Streamed GET bodies over `http://` against answers a Plugboard server gives only when
/// something breaks: a body cut short, a body that is not what its ETag says.
@Suite struct StreamedBodyTests {
    /// The head of an object answer for key `k`, as `plugboard serve` writes one.
    static func head(_ status: String = "200 OK", length: Int, etag: String = String(repeating: "0", count: 32),
                     extra: String = "") -> String {
        "HTTP/1.1 \(status)\r\nContent-Length: \(length)\r\nContent-Type: application/octet-stream\r\n"
            + "ETag: \"\(etag)\"\r\nX-Plugboard-Key: k\r\nX-Plugboard-Last-Modified: 2026-11-29T20:42:08Z\r\n\(extra)\r\n"
    }

    private func storage(_ server: RawHTTPServer) -> RESTStorage {
        RESTStorage(configuration: .init(endpoint: Endpoint(base: server.baseURL), maxRetries: 0), plugin: "Remote", logger: .disabled)
    }

    @Test func aBodyCutShortByTheServerIsAnErrorNamingTheBytes() async throws {
        let server = try RawHTTPServer(.respond(Self.head(length: 1000) + String(repeating: "x", count: 10)))
        defer { server.stop() }
        let stream = try await storage(server).get("k", range: nil)
        #expect(stream.body.length == 1000 && stream.info.size == 1000)
        let error = await thrownError { _ = try await stream.body.collect(upTo: 2000) }
        #expect(error?.code == .storageUnavailable)
        #expect(error?.message.contains("stopped sending the object") == true)
        #expect(error?.detail?.contains("expected 1000 bytes, found 10 before the body broke off") == true, "\(String(describing: error))")
        #expect(error?.hint?.contains("Read the object again") == true)
    }

    @Test func aRangedBodyCutShortNamesTheRangesBytes() async throws {
        let server = try RawHTTPServer(.respond(Self.head("206 Partial Content", length: 1000, extra: "Content-Range: bytes 0-999/5000\r\n")
            + String(repeating: "y", count: 300)))
        defer { server.stop() }
        let stream = try await storage(server).get("k", range: .closed(first: 0, last: 999))
        #expect(stream.range == 0..<1000 && stream.info.size == 5000)
        let error = await thrownError { _ = try await stream.body.collect(upTo: 2000) }
        #expect(error?.detail?.contains("expected 1000 bytes, found 300") == true, "\(String(describing: error))")
    }

    /// A streamed put says `Expect: 100-continue` and waits: a server that refuses at once
    /// (401, or 503 while its storage is not ready) is heard before any of the body is
    /// read, so the body is never touched and a 503 is retried, body and all.
    @Test func aRefusalBeforeTheBodyIsHeard_andTheBodyIsNeverRead() async throws {
        let json = #"{"error":{"code":"http.unavailable","message":"not ready"}}"#
        for (status, retries, code) in [("401 Unauthorized", 0, PlugboardError.Code.storageAccessDenied),
                                         ("503 Service Unavailable", 2, .storageUnavailable)] {
            let server = try RawHTTPServer(.respond("HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(json.utf8.count)\r\nConnection: close\r\n\r\n\(json)"))
            defer { server.stop() }
            let storage = RESTStorage(configuration: .init(endpoint: Endpoint(base: server.baseURL), maxRetries: retries),
                                      plugin: "Remote", logger: .disabled)
            let pulled = LockedValueBox(0)
            for length in [1 << 20, nil] {
                let body = ObjectBody(length: length) {
                    pulled.withLock { $0 += 1 }
                    return [UInt8](repeating: 7, count: 1 << 20)
                }
                let error = await thrownError { _ = try await storage.put("k", body: body, contentType: nil, metadata: [:], condition: .none) }
                #expect(error?.code == code, "\(status): \(String(describing: error))")
            }
            #expect(pulled.withLock { $0 } == 0, "\(status): the body was read")
            let heads = await server.requests(atLeast: 2 * (retries + 1))
            #expect(heads.count == 2 * (retries + 1), "\(status): \(heads.count) requests")
            #expect(heads.allSatisfy { $0.lowercased().contains("expect: 100-continue") })
            #expect(heads.last?.lowercased().contains("transfer-encoding: chunked") == true)
        }
    }

    /// A server that ignores `Range` answers 200 with the whole object: the range's bytes
    /// come out of it as they arrive, without the object being collected first.
    @Test func aRangeAnsweredWithTheWholeObject_isSlicedAsItArrives() async throws {
        // Printable ASCII, so that the scripted server's text is these bytes.
        let object = (0..<1_300_000).map { UInt8(0x21 + ($0 &* 7) % 90) }
        let server = try RawHTTPServer(.respond(Self.head(length: object.count) + String(decoding: object, as: UTF8.self)))
        defer { server.stop() }
        let cases: [(ByteRange, Range<Int>)] = [
            (.closed(first: 2, last: 5), 2..<6),
            (.from(1_299_990), 1_299_990..<1_300_000),
            (.suffix(1_000_001), 299_999..<1_300_000),
            (.closed(first: 0, last: 1_299_999), 0..<1_300_000),
            (.closed(first: 65_530, last: 1_200_000), 65_530..<1_200_001),
        ]
        for (range, offsets) in cases {
            let stream = try await storage(server).get("k", range: range)
            #expect(stream.range == offsets && stream.info.size == object.count && stream.body.length == offsets.count)
            #expect(try await stream.body.collect(upTo: 2_000_000) == Array(object[offsets]), "\(range)")
        }
        let error = await thrownError { _ = try await storage(server).get("k", range: .from(1_300_000)) }
        #expect(error?.code == .storageRangeNotSatisfiable, "\(String(describing: error))")
    }

    @Test func aWholeBodyThatIsNotItsETagEndsInAnError_beforeItsLastPiece() async throws {
        let server = try RawHTTPServer(.respond(Self.head(length: 5) + "hello"))
        defer { server.stop() }
        let stream = try await storage(server).get("k", range: nil)
        var pieces = 0
        let error = await thrownError {
            for try await _ in stream.body { pieces += 1 }
        }
        #expect(pieces == 0)
        #expect(error?.code == .storageFailed)
        #expect(error?.detail?.contains("expected a body whose MD5 is the ETag 00000000000000000000000000000000, found 5 bytes with MD5 5d41402abc4b2a76b9719d911017c592") == true,
                "\(String(describing: error))")
    }
}
