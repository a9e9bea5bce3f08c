import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import PlugboardHost
import PlugboardTesting
import Testing

/// The S3 endpoint's one request path: a request without a body is prepared once on the
/// event loop (`S3Router.respondWithoutWaiting`), a GetObject or HeadObject the storage
/// has at once is answered there, and everything else goes on as a task from what was prepared. Either
/// way the answer must be the one `respond(to:)` gives, byte for byte but its request ID.
@Suite struct S3AnswerWithoutWaitingTests {
    /// The answer as a client compares it: the request's own IDs left out.
    static func comparable(_ response: HTTPResponse) -> [String] {
        response.headers.filter { !["x-amz-request-id", "x-amz-id-2"].contains($0.0.lowercased()) }.map { "\($0.0): \($0.1)" }
            + ["status \(response.status)"]
    }

    /// The body, an error's request ID (in its XML) written as `ID`.
    static func body(of response: HTTPResponse) async throws -> String {
        var out = response.body
        if let stream = response.stream {
            while let piece = try await stream.next() { out += piece }
        }
        let text = String(decoding: out, as: UTF8.self)
        guard let id = S3RouterTests.header(response, "x-amz-request-id") else { return text }
        return text.replacing(id, with: "ID")
    }

    static func setUp() async throws -> (S3Router, ObjectInfo) {
        let provider = ContainerProvider()
        let storage = InMemoryObjectStorage()
        try await provider.container.transaction(owner: "test") { tx in
            try tx.register((any ObjectStorage).self, instance: storage)
        }
        // The gate trusts a bucket it found for a second; a test on a busy machine can take longer.
        let router = S3Router(provider: provider,
                              configuration: .init(credentials: [S3Credential(accessKeyID: S3RouterTests.keyID,
                                                                              secretAccessKey: S3RouterTests.secret)]),
                              logger: .disabled, buckets: S3BucketGate(trust: .seconds(3600)))
        #expect(await router.respond(to: try S3RouterTests.signed("PUT", "/photos")).status == 200)
        let put = await router.respond(to: try S3RouterTests.signed("PUT", "/photos/a.txt", body: Array("hello, world".utf8),
                                                                    extra: [("content-type", "text/plain"), ("x-amz-meta-owner", "ada")]))
        #expect(put.status == 200)
        // The endpoint's gate trusts a bucket it has just found: a read through the task finds it.
        #expect(await router.respond(to: try S3RouterTests.signed("GET", "/photos/a.txt")).status == 200)
        return (router, try await storage.head("photos/a.txt"))
    }

    @Test func aGetTheStorageHasAtOnce_isAnsweredAtOnce_asTheTaskAnswersIt() async throws {
        let (router, info) = try await Self.setUp()
        let cases: [(String, [(String, String)], Int)] = [
            ("/photos/a.txt", [], 200),
            ("/photos/a.txt", [("range", "bytes=0-4")], 206),
            ("/photos/a.txt", [("range", "bytes=-3")], 206),
            ("/photos/a.txt", [("if-none-match", "\"\(info.etag)\"")], 304),
            ("/photos/a.txt", [("if-match", "\"0123\"")], 412),
            ("/photos/a.txt?response-content-type=application%2Fjson&response-cache-control=no-cache", [], 200),
        ]
        for (target, headers, status) in cases {
            let request = try S3RouterTests.signed("GET", target, extra: headers)
            guard case .answer(let atOnce) = router.respondWithoutWaiting(to: request) else {
                Issue.record("GET \(target) \(headers) was not answered at once")
                continue
            }
            let task = await router.respond(to: request)
            #expect(atOnce.status == status, "GET \(target) \(headers): \(S3RouterTests.text(atOnce))")
            #expect(Self.comparable(atOnce) == Self.comparable(task), "GET \(target) \(headers)")
            #expect(try await Self.body(of: atOnce) == (try await Self.body(of: task)), "GET \(target) \(headers)")
            #expect(S3RouterTests.header(atOnce, "x-amz-request-id")?.utf8.count == 16)
            #expect(atOnce.label == "GetObject")
        }
    }

    @Test func aHeadTheStorageHasAtOnce_isAnsweredAtOnce_asTheTaskAnswersIt() async throws {
        let (router, info) = try await Self.setUp()
        let cases: [(String, [(String, String)], Int)] = [
            ("/photos/a.txt", [], 200),
            ("/photos/a.txt", [("range", "bytes=0-4")], 206),
            ("/photos/a.txt", [("range", "bytes=100-")], 416),
            ("/photos/a.txt", [("if-none-match", "\"\(info.etag)\"")], 304),
            ("/photos/a.txt", [("if-match", "\"0123\"")], 412),
            ("/photos/a.txt?response-content-type=application%2Fjson", [], 200),
        ]
        for (target, headers, status) in cases {
            let request = try S3RouterTests.signed("HEAD", target, extra: headers)
            guard case .answer(let atOnce) = router.respondWithoutWaiting(to: request) else {
                Issue.record("HEAD \(target) \(headers) was not answered at once")
                continue
            }
            let task = await router.respond(to: request)
            #expect(atOnce.status == status, "HEAD \(target) \(headers): \(S3RouterTests.text(atOnce))")
            #expect(Self.comparable(atOnce) == Self.comparable(task), "HEAD \(target) \(headers)")
            #expect(atOnce.headLength == task.headLength, "HEAD \(target) \(headers)")
            #expect(atOnce.label == "HeadObject")
        }
    }

    /// What the task must answer (a missing key, whose answer depends on the bucket's; a
    /// kept checksum; a part; another operation) goes on from what was prepared, with the
    /// same answer as a request the task took whole.
    @Test func whatWouldWait_goesOnAsATask_withTheSameAnswer() async throws {
        let (router, _) = try await Self.setUp()
        let cases: [(String, String, [(String, String)], Int)] = [
            ("GET", "/photos/missing.txt", [], 404),
            ("GET", "/nobucket/a.txt", [], 404),
            ("GET", "/photos/a.txt", [("x-amz-checksum-mode", "ENABLED")], 200),
            ("GET", "/photos/a.txt?partNumber=1", [], 206),
            ("GET", "/photos/a.txt", [("range", "bytes=100-")], 416),
            ("HEAD", "/photos/missing.txt", [], 404),
            ("HEAD", "/photos/a.txt", [("x-amz-checksum-mode", "ENABLED")], 200),
            ("HEAD", "/photos/a.txt?partNumber=1", [], 206),
            ("GET", "/photos?list-type=2", [], 200),
            ("DELETE", "/photos/gone.txt", [], 204),
        ]
        for (method, target, headers, status) in cases {
            let request = try S3RouterTests.signed(method, target, extra: headers)
            guard case .later(let rest) = router.respondWithoutWaiting(to: request) else {
                Issue.record("\(method) \(target) \(headers) was not handed on as a task")
                continue
            }
            let later = await rest()
            let task = await router.respond(to: request)
            #expect(later.status == status, "\(method) \(target) \(headers): \(S3RouterTests.text(later))")
            #expect(Self.comparable(later) == Self.comparable(task), "\(method) \(target) \(headers)")
            #expect(try await Self.body(of: later) == (try await Self.body(of: task)), "\(method) \(target) \(headers)")
        }
    }

    /// A request refused while it is prepared (a wrong signature, an unknown bucket name's
    /// form) is answered at once, as S3's XML with its request ID.
    @Test func aRefusal_isAnsweredAtOnce() async throws {
        let (router, _) = try await Self.setUp()
        var forged = try S3RouterTests.signed("GET", "/photos/a.txt")
        forged.head.headers = HTTPHeaders(forged.head.headers.fields.map {
            $0.name == "authorization" ? (name: $0.name, value: String($0.value.dropLast(4)) + "0000") : $0
        })
        guard case .answer(let refused) = router.respondWithoutWaiting(to: forged) else {
            Issue.record("a forged signature was not refused at once")
            return
        }
        #expect(refused.status == 403)
        #expect(S3RouterTests.text(refused).contains("<Code>SignatureDoesNotMatch</Code>"))
        #expect(S3RouterTests.header(refused, "x-amz-request-id")?.utf8.count == 16)
    }
}
