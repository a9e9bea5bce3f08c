import Foundation
import PlugboardAPI
import PlugboardCrypto
import PlugboardTesting
import Testing

/// libRESTStorage.so, loaded through the host's loader, against a real `plugboard serve`
/// (the package's executable) that binds FileStorage on a temporary root.
@Suite(.serialized) struct ServeIntegrationTests {
    @Test func passesTheWholeConformanceSuiteOverHTTP() async throws {
        let sandbox = try TestSandbox("conformance")
        defer { sandbox.remove() }
        let server = try ServeProcess(manifest: try sandbox.fileStorageManifest(), sandbox: sandbox)
        defer { server.stop() }
        let storage = try await sandbox.restStorage(server.baseURL)

        let report = await ObjectStorageConformance(makeStorage: { storage }).run()
        do {
            try report.requireAllPassed()
        } catch {
            // The rules' messages say what failed, not why: one more call's whole error, and
            // the server's log, which shows whether the requests arrived.
            let probe = await thrownError { _ = try await storage.head("probe") }
            Issue.record("after the failed rules, a head got: \(String(describing: probe)) \(String(describing: probe?.underlying)); the server's log:\n\(String(server.log.suffix(6000)))")
            throw error
        }
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        #expect(report.result(named: "concurrent_writers")?.outcome == .passed)
        // Every rule deleted what it wrote, through HTTP, down to FileStorage's files.
        let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.storageRoot + "/objects")
        #expect(left == [])
        let status = server.stop()
        // 66 is ThreadSanitizer's exit status: its report is in the server's log.
        let log = server.log
        let race = log.range(of: "WARNING: ThreadSanitizer").map { String(log[$0.lowerBound...].prefix(20_000)) }
        #expect(status == 0, "serve exited \(status); its log:\n\(race ?? String(log.suffix(20_000)))")
    }

    @Test func objectsWrittenThroughRESTAreFileStoragesObjects_byteForByte() async throws {
        let sandbox = try TestSandbox("same-bytes")
        defer { sandbox.remove() }
        let server = try ServeProcess(manifest: try sandbox.fileStorageManifest(), sandbox: sandbox)
        defer { server.stop() }
        let remote = try await sandbox.restStorage(server.baseURL)

        let binary = (0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }
        let objects: [(String, [UInt8], String?, [String: String])] = [
            ("..", [], nil, [:]),
            ("a//b/./c", Array("dots and slashes".utf8), "text/plain; charset=utf-8", ["owner": "ops", "empty": ""]),
            ("caf\u{E9}", Array("nfc".utf8), nil, ["n": "1"]),
            ("cafe\u{301}", Array("nfd".utf8), nil, ["n": "2"]),
            ("%2F?#+ key", binary, "application/x-binary", ["build-id": "42"]),
            (String(repeating: "\u{1F600}", count: 256), Array(repeating: 0, count: 3), nil, [:]),
        ]
        var written: [ObjectInfo] = []
        for (key, data, type, metadata) in objects {
            written.append(try await remote.put(key, data: data, contentType: type, metadata: metadata))
        }

        // FileStorage on the same root, in this process, sees the same objects.
        let local = try await sandbox.fileStorage()
        for ((key, data, _, _), info) in zip(objects, written) {
            let object = try await local.get(key)
            #expect(object.data == data, "\(key)")
            #expect(object.info.etag == Hex.encode(try MD5Hasher.hash(data)))
            #expect(object.info.contentType == info.contentType && object.info.metadata == info.metadata)
            #expect(object.info.lastModified.iso8601 == info.lastModified.iso8601)
            #expect(try await remote.head(key) == info)
        }
        let localKeys = try await local.list(prefix: "", limit: 1000, continuationToken: nil).objects.map(\.key)
        let remoteKeys = try await remote.list(prefix: "", limit: 1000, continuationToken: nil).objects.map(\.key)
        #expect(localKeys.map { Array($0.utf8) } == remoteKeys.map { Array($0.utf8) })
        #expect(localKeys.count == objects.count)

        // And the other way: written by FileStorage, read through the server.
        let direct = try await local.put("direct", data: binary, contentType: "image/png", metadata: ["via": "file"])
        let fetched = try await remote.get("direct")
        #expect(fetched.data == binary)
        #expect(fetched.info.etag == direct.etag && fetched.info.metadata == ["via": "file"])
        #expect(fetched.info.contentType == "image/png")
    }

    @Test func aServerWithATokenRefusesAMissingOrWrongOne_andTheTokenIsNeverShown() async throws {
        let sandbox = try TestSandbox("token")
        defer { sandbox.remove() }
        let token = "api-T0KEN-\(UUID().uuidString)"
        let wrong = "wrong-T0KEN-\(UUID().uuidString)"
        let server = try ServeProcess(manifest: try sandbox.fileStorageManifest(), sandbox: sandbox,
                                      environment: ["PLUGBOARD_API_TOKEN": token])
        defer { server.stop() }

        let anonymous = try await sandbox.restStorage(server.baseURL)
        let missing = await thrownError { _ = try await anonymous.put("k", data: [1], contentType: nil, metadata: [:]) }
        #expect(missing?.code == .storageAccessDenied)
        #expect(missing?.hint?.contains("requires a bearer token") == true)

        let mistaken = try await sandbox.restStorage(server.baseURL, token: wrong)
        for call in [{ _ = try await mistaken.get("k") }, { try await mistaken.delete("k") },
                     { _ = try await mistaken.list(prefix: "", limit: 5, continuationToken: nil) }] as [@Sendable () async throws -> Void] {
            let error = await thrownError(call)
            #expect(error?.code == .storageAccessDenied)
            #expect(error?.hint?.contains("configured token was refused") == true)
            let shown = error.map { "\($0) \(String(describing: $0.underlying))" } ?? ""
            #expect(!shown.contains(wrong) && !shown.contains(token), "\(shown)")
        }

        let allowed = try await sandbox.restStorage(server.baseURL, token: token)
        let info = try await allowed.put("k", data: Array("guarded".utf8), contentType: "text/plain", metadata: [:])
        #expect(try await allowed.get("k").data == Array("guarded".utf8))
        #expect(try await allowed.head("k") == info)
        try await allowed.delete("k")
        await #expect(throws: PlugboardError.self) { try await allowed.head("k") }

        let log = server.log
        #expect(log.contains("/v1/objects/k"), "the access log is on: \(log)")
        #expect(!log.contains(token) && !log.contains(wrong))
    }

    @Test func aStoppedServerIsUnavailable_andAWrongBaseURLIsNamed() async throws {
        let sandbox = try TestSandbox("stopped")
        defer { sandbox.remove() }
        let server = try ServeProcess(manifest: try sandbox.fileStorageManifest(), sandbox: sandbox)
        let storage = try await sandbox.restStorage(server.baseURL, maxRetries: 2)
        _ = try await storage.put("k", data: [1, 2, 3], contentType: nil, metadata: [:])

        let misdirected = try await sandbox.restStorage(server.baseURL + "/not-plugboard", maxRetries: 0)
        let wrongPath = await thrownError { _ = try await misdirected.get("k") }
        #expect(wrongPath?.code == .storageFailed)
        #expect(wrongPath?.hint?.contains("baseURL") == true)

        #expect(server.stop() == 0)
        let start = ContinuousClock.now
        for call in [{ _ = try await storage.get("k") }, { _ = try await storage.put("k", data: [], contentType: nil, metadata: [:]) },
                     { _ = try await storage.list(prefix: "", limit: 1, continuationToken: nil) }] as [@Sendable () async throws -> Void] {
            let error = await thrownError(call)
            #expect(error?.code == .storageUnavailable)
            #expect(error?.message.contains(server.baseURL) == true)
            #expect(error?.detail?.contains("3 attempts") == true, "\(String(describing: error))")
        }
        // Three calls of three attempts, backing off at most 100 + 200 ms each; the bound
        // is liveness only, wide enough for a loaded machine (beside the whole suite a
        // resumed task has waited more than 60 s for a thread of the cooperative pool).
        #expect(ContinuousClock.now - start < .seconds(240))
    }
}
