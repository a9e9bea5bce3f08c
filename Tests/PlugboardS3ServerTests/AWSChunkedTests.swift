import PlugboardAPI
import InMemoryStorage
import PlugboardBytes
import PlugboardHTTP
import PlugboardHost
import Testing
@testable import PlugboardS3Server

/// S3BodyDecoder: `aws-chunked` bodies (AWS's published chunked-upload example, the
/// trailer forms, every split point) and the checks of plain bodies.
@Suite struct AWSChunkedTests {
    static let verifier = SigV4Verifier(
        credentials: [S3Credential(accessKeyID: SigV4VerifierTests.accessKey, secretAccessKey: SigV4VerifierTests.secret)], region: "us-east-1")

    /// A raw body made of these pieces, in order.
    static func raw(_ pieces: [[UInt8]]) -> ObjectBody {
        let stream = AsyncStream<[UInt8]> { continuation in
            for piece in pieces { continuation.yield(piece) }
            continuation.finish()
        }
        return ObjectBody(length: pieces.reduce(0) { $0 + $1.count }, stream)
    }

    /// `bytes` cut every `size` bytes.
    static func pieces(_ bytes: [UInt8], size: Int) -> [[UInt8]] {
        stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) }
    }

    struct Outcome {
        var chunks: [[UInt8]] = []
        var error: S3Error?
        var bytes: [UInt8] { chunks.flatMap { $0 } }
    }

    /// Reads `body` to its end or its first error (which must be an S3Error).
    static func read(_ body: ObjectBody) async -> Outcome {
        var outcome = Outcome()
        var iterator = body.makeAsyncIterator()
        do {
            while let chunk = try await iterator.next() { outcome.chunks.append(chunk) }
        } catch let error as S3Error {
            outcome.error = error
            // Once failed, always failed: never a nil that looks like a clean end.
            do {
                _ = try await iterator.next()
                Issue.record("next() after a failure returned instead of throwing")
            } catch {}
        } catch {
            Issue.record("unexpected error \(error)")
        }
        return outcome
    }

    // MARK: AWS's example: PUT /examplebucket/chunkObject.txt, 64 KiB + 1 KiB of "a"

    static let exampleHeaders: [(String, String)] = [
        ("Host", "s3.amazonaws.com"), ("x-amz-date", "20130524T000000Z"), ("x-amz-storage-class", "REDUCED_REDUNDANCY"),
        ("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class,Signature=4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"),
        ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"), ("Content-Encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", "66560"), ("Content-Length", "66824"),
    ]
    static let exampleSignatures = ["ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
                                    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
                                    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"]

    static func exampleBody(signatures: [String] = exampleSignatures, tamperData: Bool = false) -> [UInt8] {
        var first = [UInt8](repeating: UInt8(ascii: "a"), count: 65536)
        if tamperData { first[1000] = UInt8(ascii: "b") }
        return Array("10000;chunk-signature=\(signatures[0])\r\n".utf8) + first + Array("\r\n".utf8)
            + Array("400;chunk-signature=\(signatures[1])\r\n".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 1024) + Array("\r\n".utf8)
            + Array("0;chunk-signature=\(signatures[2])\r\n\r\n".utf8)
    }

    static func exampleAuthentication() throws -> S3Authentication {
        try verifier.authenticate(method: "PUT", rawTarget: "/examplebucket/chunkObject.txt",
                                  headers: SigV4VerifierTests.headers(exampleHeaders), now: SigV4VerifierTests.exampleTime)
    }

    @Test func awsChunkedExample_decodesTo66560As() async throws {
        let auth = try Self.exampleAuthentication()
        #expect(auth.payload == .signedChunks(trailer: false))
        #expect(auth.seedSignature == "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9")
        let body = Self.exampleBody()
        #expect(body.count == 66824)
        for size in [body.count, 65536 + 87, 4096, 1000, 97, 7] {
            let decoded = try S3BodyDecoder.decode(Self.raw(Self.pieces(body, size: size)), headers: SigV4VerifierTests.headers(Self.exampleHeaders),
                                                   authentication: auth)
            #expect(decoded.length == 66560)
            let outcome = await Self.read(decoded)
            #expect(outcome.error == nil, "pieces of \(size): \(outcome.error?.description ?? "")")
            #expect(outcome.bytes.count == 66560 && outcome.bytes.allSatisfy { $0 == UInt8(ascii: "a") })
            #expect(outcome.chunks.map(\.count) == [65536, 1024], "pieces of \(size)")
        }
    }

    @Test func awsChunkedExample_tamperedSignatureOrData_failsWithNothingPastTheFailure() async throws {
        let auth = try Self.exampleAuthentication()
        let headers = SigV4VerifierTests.headers(Self.exampleHeaders)
        func outcome(_ body: [UInt8]) async throws -> Outcome {
            await Self.read(try S3BodyDecoder.decode(Self.raw(Self.pieces(body, size: 8192)), headers: headers, authentication: auth))
        }
        var signatures = Self.exampleSignatures
        signatures[1] = "1055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"
        let second = try await outcome(Self.exampleBody(signatures: signatures))
        #expect(second.error?.code == "SignatureDoesNotMatch")
        #expect(second.chunks.map(\.count) == [65536], "the first chunk (good) only")
        #expect(second.error?.message.contains("chunk 2") == true)

        signatures = Self.exampleSignatures
        signatures[0] = "bd80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
        let first = try await outcome(Self.exampleBody(signatures: signatures))
        #expect(first.error?.code == "SignatureDoesNotMatch")
        #expect(first.chunks.isEmpty)

        let data = try await outcome(Self.exampleBody(tamperData: true))
        #expect(data.error?.code == "SignatureDoesNotMatch")
        #expect(data.chunks.isEmpty)

        signatures = Self.exampleSignatures
        signatures[2] = "c6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
        let last = try await outcome(Self.exampleBody(signatures: signatures))
        #expect(last.error?.code == "SignatureDoesNotMatch")
        #expect(last.chunks.map(\.count) == [65536, 1024])

        // Cut short, or longer than announced.
        let body = Self.exampleBody()
        let short = try await outcome(Array(body.prefix(body.count - 2)))
        #expect(short.error?.code == "IncompleteBody")
        let long = try await outcome(body + Array("x".utf8))
        #expect(long.error?.code == "InvalidRequest")
    }

    @Test func storagePut_overAFailingBody_storesNothing() async throws {
        let auth = try Self.exampleAuthentication()
        let headers = SigV4VerifierTests.headers(Self.exampleHeaders)
        let storage = InMemoryObjectStorage()
        var signatures = Self.exampleSignatures
        signatures[2] = "c6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
        let bad = try S3BodyDecoder.decode(Self.raw(Self.pieces(Self.exampleBody(signatures: signatures), size: 4096)),
                                           headers: headers, authentication: auth)
        await #expect(throws: S3Error.self) {
            _ = try await storage.put("chunkObject.txt", body: bad, contentType: nil, metadata: [:], condition: .none)
        }
        let badTrailer = try S3BodyDecoder.decode(Self.raw([Self.unsignedTrailerBody(crc: "AfkR9w==")]), headers: Self.unsignedTrailerHeaders,
                                                  authentication: Self.unsignedTrailerAuthentication)
        await #expect(throws: S3Error.self) {
            _ = try await storage.put("trailer.txt", body: badTrailer, contentType: nil, metadata: [:], condition: .none)
        }
        #expect(storage.count == 0)
        let good = try S3BodyDecoder.decode(Self.raw(Self.pieces(Self.exampleBody(), size: 4096)), headers: headers, authentication: auth)
        let info = try await storage.put("chunkObject.txt", body: good, contentType: nil, metadata: [:], condition: .none)
        #expect(info.size == 66560)
        #expect(storage.count == 1)
    }

    @Test func decodedContentLength_mustBePresentValidAndTrue() async throws {
        let auth = try Self.exampleAuthentication()
        var headers = Self.exampleHeaders
        headers.removeAll { $0.0 == "x-amz-decoded-content-length" }
        #expect(throws: S3Error.self) {
            try S3BodyDecoder.decode(Self.raw([]), headers: SigV4VerifierTests.headers(headers), authentication: auth)
        }
        do {
            _ = try S3BodyDecoder.decode(Self.raw([]), headers: SigV4VerifierTests.headers(headers), authentication: auth)
        } catch {
            #expect(error.code == "MissingContentLength")
        }
        for bad in ["", "-1", "12a", "99999999999999999999"] {
            do {
                _ = try S3BodyDecoder.decode(Self.raw([]), headers: SigV4VerifierTests.headers(headers + [("x-amz-decoded-content-length", bad)]),
                                             authentication: auth)
                Issue.record("accepted x-amz-decoded-content-length \"\(bad)\"")
            } catch {
                #expect(error.code == "InvalidArgument")
            }
        }
        // A length the chunks do not carry (the signatures still match: the header is
        // not what the decoder's chain signs).
        for (announced, code) in [("66561", "IncompleteBody"), ("66559", "InvalidRequest")] {
            let decoded = try S3BodyDecoder.decode(Self.raw([Self.exampleBody()]),
                                                   headers: SigV4VerifierTests.headers(headers + [("x-amz-decoded-content-length", announced)]),
                                                   authentication: auth)
            let outcome = await Self.read(decoded)
            #expect(outcome.error?.code == code, "\(announced)")
        }
    }

    // MARK: Trailers

    static let trailerData = Array("hello world, ".utf8).repeated(10)
    /// zlib.crc32(b"hello world, " * 10), big-endian, base64.
    static let trailerCRC32 = "AfkR9g=="

    static func unsignedTrailerBody(crc: String = trailerCRC32, trailerName: String = "x-amz-checksum-crc32") -> [UInt8] {
        Array("40\r\n".utf8) + Array(trailerData[..<64]) + Array("\r\n42\r\n".utf8) + Array(trailerData[64...])
            + Array("\r\n0\r\n\(trailerName):\(crc)\r\n\r\n".utf8)
    }

    static let unsignedTrailerAuthentication = S3Authentication(
        accessKeyID: "AKID", payload: .unsignedChunksWithTrailer, signingKey: [], scope: "", amzDate: "", seedSignature: "")
    static let unsignedTrailerHeaders = SigV4VerifierTests.headers([
        ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"), ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", "130"), ("x-amz-trailer", "x-amz-checksum-crc32"),
    ])

    @Test func unsignedTrailer_crc32_decodesAtEverySplit() async throws {
        #expect(CRC32.checksum(Self.trailerData) == 0x01F9_11F6)
        let body = Self.unsignedTrailerBody()
        #expect(body.count == 178)
        for i in 0...body.count {
            for j in stride(from: i, through: body.count, by: 5) {
                let pieces = [Array(body[..<i]), Array(body[i..<j]), Array(body[j...])]
                let decoded = try S3BodyDecoder.decode(Self.raw(pieces), headers: Self.unsignedTrailerHeaders,
                                                       authentication: Self.unsignedTrailerAuthentication)
                let outcome = await Self.read(decoded)
                guard outcome.error == nil, outcome.bytes == Self.trailerData else {
                    Issue.record("split at \(i), \(j): \(outcome.error?.description ?? "wrong bytes")")
                    return
                }
            }
        }
        // One byte at a time.
        let decoded = try S3BodyDecoder.decode(Self.raw(Self.pieces(body, size: 1)), headers: Self.unsignedTrailerHeaders,
                                               authentication: Self.unsignedTrailerAuthentication)
        #expect(await Self.read(decoded).bytes == Self.trailerData)
    }

    @Test func unsignedTrailer_wrongOrMissingChecksum_isRefusedBeforeTheEnd() async throws {
        func outcome(_ body: [UInt8]) async throws -> Outcome {
            await Self.read(try S3BodyDecoder.decode(Self.raw([body]), headers: Self.unsignedTrailerHeaders,
                                                     authentication: Self.unsignedTrailerAuthentication))
        }
        let wrong = try await outcome(Self.unsignedTrailerBody(crc: "AfkR9w=="))
        #expect(wrong.error?.code == "BadDigest")
        #expect(wrong.error?.message.contains("AfkR9w==") == true && wrong.error?.message.contains("AfkR9g==") == true)
        let other = try await outcome(Self.unsignedTrailerBody(trailerName: "x-amz-checksum-crc32c"))
        #expect(other.error?.code == "MalformedTrailerError")
        let none = try await outcome(Array(Self.unsignedTrailerBody().prefix(145)) + Array("\r\n".utf8))
        #expect(none.error?.code == "MalformedTrailerError", "\(none.error?.description ?? "accepted")")
        let garbage = try await outcome(Self.unsignedTrailerBody(crc: "not base64!"))
        #expect(garbage.error?.code == "InvalidRequest")
        // Framing: a size line too long, a chunk over 16 MiB, a bad CRLF.
        let longLine = try await outcome(Array(String(repeating: "0", count: 300).utf8) + Array("40\r\n".utf8))
        #expect(longLine.error?.code == "IncompleteBody")
        let huge = try await outcome(Array("1000001\r\n".utf8))
        #expect(huge.error?.code == "InvalidRequest")
        #expect(huge.error?.message.contains("16777216") == true)
        var badCRLF = Self.unsignedTrailerBody()
        badCRLF[4 + 64] = UInt8(ascii: "x")
        #expect(try await outcome(badCRLF).error?.code == "IncompleteBody")
        // A chunk that claims more than remains.
        let tooBig = try await outcome(Array("83\r\n".utf8) + [UInt8](repeating: 0, count: 131) + Array("\r\n0\r\n\r\n".utf8))
        #expect(tooBig.error?.code == "InvalidRequest")
    }

    @Test func signedTrailer_crc32_decodesAtEverySplit_andChecksItsSignature() async throws {
        // Signed by the Python reference (AWS's algorithm, the examples' key): PUT
        // /examplebucket/trailer.txt, SignedHeaders as below, seed 5683d3b1...
        let fields: [(String, String)] = [
            ("content-encoding", "aws-chunked"), ("host", "s3.amazonaws.com"),
            ("x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"), ("x-amz-date", "20130524T000000Z"),
            ("x-amz-decoded-content-length", "130"), ("x-amz-trailer", "x-amz-checksum-crc32"),
            ("authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-trailer,Signature=5683d3b1780463ea007a391bd49a652ab91c54459a2999c035754557aecf2dd9"),
        ]
        let headers = SigV4VerifierTests.headers(fields)
        let auth = try Self.verifier.authenticate(method: "PUT", rawTarget: "/examplebucket/trailer.txt", headers: headers,
                                                  now: SigV4VerifierTests.exampleTime)
        #expect(auth.payload == .signedChunks(trailer: true))
        func body(trailerSignature: String = "ffec419741f8ddcd64857bcc831335798d12beecfa89ca702482c33303c4e042", crc: String = Self.trailerCRC32) -> [UInt8] {
            Array("40;chunk-signature=01022e646f6b27b2aa442e2af6a07004ca9378b98e4a1a086f731c300affee17\r\n".utf8) + Array(Self.trailerData[..<64])
                + Array("\r\n42;chunk-signature=aaa2e58425878cb3aa51716c5d0799eb98def49a08a25c919e75c9601858c928\r\n".utf8)
                + Array(Self.trailerData[64...])
                + Array("\r\n0;chunk-signature=b7147bbf48abe9b4687d3a9ca442979f01a6530a3ec574eeb5457f1bf632b73e\r\n".utf8)
                + Array("x-amz-checksum-crc32:\(crc)\r\nx-amz-trailer-signature:\(trailerSignature)\r\n\r\n".utf8)
        }
        let good = body()
        #expect(good.count == 511)
        for i in 0...good.count {
            let decoded = try S3BodyDecoder.decode(Self.raw([Array(good[..<i]), Array(good[i...])]), headers: headers, authentication: auth)
            let outcome = await Self.read(decoded)
            guard outcome.error == nil, outcome.bytes == Self.trailerData else {
                Issue.record("split at \(i): \(outcome.error?.description ?? "wrong bytes")")
                return
            }
        }
        let forged = await Self.read(try S3BodyDecoder.decode(
            Self.raw([body(trailerSignature: "0fec419741f8ddcd64857bcc831335798d12beecfa89ca702482c33303c4e042")]), headers: headers, authentication: auth))
        #expect(forged.error?.code == "SignatureDoesNotMatch")
        #expect(forged.error?.message.contains("trailer") == true)
        // A changed checksum breaks the trailer's signature first.
        let changed = await Self.read(try S3BodyDecoder.decode(Self.raw([body(crc: "AfkR9w==")]), headers: headers, authentication: auth))
        #expect(changed.error?.code == "SignatureDoesNotMatch")
    }

    // MARK: Plain bodies

    static let welcome = Array("Welcome to Amazon S3.".utf8)

    static func plain(_ payload: PayloadMode) -> S3Authentication {
        S3Authentication(accessKeyID: "AKID", payload: payload, signingKey: [], scope: "", amzDate: "", seedSignature: "")
    }

    static func plainOutcome(_ bytes: [UInt8], payload: PayloadMode = .unsigned, headers: [(String, String)]) async throws -> Outcome {
        await read(try S3BodyDecoder.decode(raw(pieces(bytes, size: 5)), headers: SigV4VerifierTests.headers(headers), authentication: plain(payload)))
    }

    @Test func plainBody_sha256_md5_andChecksumHeaders() async throws {
        let sha = PayloadMode.sha256("44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let good = try await Self.plainOutcome(Self.welcome, payload: sha, headers: [])
        #expect(good.error == nil && good.bytes == Self.welcome)
        var changed = Self.welcome
        changed[0] = UInt8(ascii: "w")
        let mismatch = try await Self.plainOutcome(changed, payload: sha, headers: [])
        #expect(mismatch.error?.code == "XAmzContentSHA256Mismatch")
        #expect(mismatch.bytes == changed, "the bytes pass; the error comes before the end")

        let md5 = [("Content-MD5", "1EfQ6PKJ8WoS/2AnznfCWA==")]
        #expect(try await Self.plainOutcome(Self.welcome, headers: md5).error == nil)
        let badMD5 = try await Self.plainOutcome(changed, headers: md5)
        #expect(badMD5.error?.code == "BadDigest")

        let checksums = [("x-amz-checksum-crc32", "Ox7nCg=="), ("x-amz-checksum-sha1", "yBt20ll2Oj9Ev3fHrkTHwj+qSZk="),
                         ("x-amz-checksum-sha256", "RM591nyVng01JP+sF3Hfu6h9K2tLTpnkIDSouAP4sHI="),
                         ("x-amz-checksum-crc32c", Base64.encode(Self.CRC32CBytes(Self.welcome))),
                         ("x-amz-checksum-crc64nvme", Base64.encode(Self.CRC64Bytes(Self.welcome)))]
        for header in checksums {
            let ok = try await Self.plainOutcome(Self.welcome, headers: [header] + md5)
            #expect(ok.error == nil, "\(header.0): \(ok.error?.description ?? "")")
            let bad = try await Self.plainOutcome(changed, headers: [header])
            #expect(bad.error?.code == "BadDigest", "\(header.0)")
            #expect(bad.error?.message.hasPrefix("Value for \(header.0) header is invalid") == true)
            #expect(bad.error?.message.contains(header.1) == true)
        }
        // A short body, through the public entry and a RequestBody.
        let body = try S3BodyDecoder.body(RequestBody(Self.welcome), headers: SigV4VerifierTests.headers(md5), authentication: Self.plain(.unsigned))
        #expect(try await body.collect(upTo: 100) == Self.welcome)
    }

    /// A request without a body that signs the empty body's SHA-256 (every GET, HEAD and
    /// DELETE an SDK sends) is checked by one comparison, at once: nobody reads an empty
    /// body to its end, so a check left for the end would never run.
    @Test func anEmptyBody_isCheckedAtOnce() async throws {
        let empty = PayloadMode.sha256(SigV4Verifier.emptySHA256)
        let body = try S3BodyDecoder.body(RequestBody([]), headers: SigV4VerifierTests.headers([]), authentication: Self.plain(empty))
        #expect(try await body.collect(upTo: 10) == [])
        let other = PayloadMode.sha256("44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072")
        let refused = #expect(throws: S3Error.self) {
            _ = try S3BodyDecoder.body(RequestBody([]), headers: SigV4VerifierTests.headers([]), authentication: Self.plain(other))
        }
        #expect(refused?.code == "XAmzContentSHA256Mismatch")
        // A checksum beside it takes the whole way: the empty body's CRC32 is 0.
        let crc = try S3BodyDecoder.body(RequestBody([]), headers: SigV4VerifierTests.headers([("x-amz-checksum-crc32", "AAAAAA==")]),
                                         authentication: Self.plain(empty))
        #expect(try await crc.collect(upTo: 10) == [])
        let wrongCRC = try S3BodyDecoder.body(RequestBody([]), headers: SigV4VerifierTests.headers([("x-amz-checksum-crc32", "Ox7nCg==")]),
                                              authentication: Self.plain(empty))
        await #expect(throws: S3Error.self) { _ = try await wrongCRC.collect(upTo: 10) }
    }

    static func CRC32CBytes(_ bytes: [UInt8]) -> [UInt8] {
        var crc = CRC32C()
        crc.update(bytes)
        return crc.bytes
    }

    static func CRC64Bytes(_ bytes: [UInt8]) -> [UInt8] {
        var crc = CRC64NVME()
        crc.update(bytes)
        return crc.bytes
    }

    @Test func malformedDigestHeaders_areRefusedUpFront() {
        func refusal(_ headers: [(String, String)], payload: PayloadMode = .unsigned) -> S3Error? {
            do {
                _ = try S3BodyDecoder.decode(Self.raw([]), headers: SigV4VerifierTests.headers(headers), authentication: Self.plain(payload))
                Issue.record("accepted \(headers)")
                return nil
            } catch {
                return error
            }
        }
        #expect(refusal([("Content-MD5", "not-base64")])?.code == "InvalidDigest")
        #expect(refusal([("Content-MD5", "YWI=")])?.code == "InvalidDigest")
        // A value that is not base64 is malformed; base64 of another length is a digest
        // that cannot match: BadDigest, as S3 answers it.
        let crc = refusal([("x-amz-checksum-crc32", "not base64!")])
        #expect(crc?.code == "InvalidRequest")
        #expect(crc?.message.hasPrefix("Value for x-amz-checksum-crc32 header is invalid") == true)
        let short = refusal([("x-amz-checksum-sha256", "ABCD")])
        #expect(short?.code == "BadDigest")
        #expect(short?.status == 400)
        #expect(short?.message.hasPrefix("Value for x-amz-checksum-sha256 header is invalid") == true)
        #expect(refusal([("x-amz-checksum-crc32", "Ox7nCg=="), ("x-amz-checksum-sha1", "yBt20ll2Oj9Ev3fHrkTHwj+qSZk=")])?.code == "InvalidRequest")
        #expect(refusal([("x-amz-trailer", "x-amz-checksum-md5")], payload: .unsignedChunksWithTrailer)?.code == "InvalidRequest")
        #expect(refusal([("x-amz-trailer", "x-amz-checksum-crc32")])?.code == "InvalidRequest")
    }
}

extension Array {
    func repeated(_ count: Int) -> [Element] { (0..<count).flatMap { _ in self } }
}
