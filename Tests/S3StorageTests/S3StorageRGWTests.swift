import Foundation
import PlugboardAPI
import PlugboardCrypto
import PlugboardTesting
import Testing

/// libS3Storage.so, loaded through the host's loader, against Ceph's RADOS Gateway: the
/// whole conformance suite against a real S3 implementation, not only moto's imitation.
/// Start the gateway with `Tests/e2e/ceph.sh start DIR`, then `set -a; . DIR/env; set +a`
/// before `swift test --filter S3StorageRGWTests`. moto's races are not excused here.
@Suite(.serialized, .enabled(if: RGWServer.isConfigured,
                             "PLUGBOARD_RGW_ENDPOINT is not set: no Ceph RADOS Gateway to test against (start one with Tests/e2e/ceph.sh start DIR, then set -a; . DIR/env; set +a)"))
struct S3StorageRGWTests {
    @Test func passesTheConformanceSuite_exceptRGWsOwnBugs() async throws {
        let server = try RGWServer.get()
        let bucket = try server.makeBucket("conformance")
        let storage = try await S3PluginFixture.storage(server.config(bucket: bucket))
        let report = await ObjectStorageConformance(makeStorage: { storage }).run()
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        #expect(report.result(named: "concurrent_writers")?.outcome == .passed)
        let limits = try JSONDecoder().decode(RGWBugs.Limits.self, from: Data(try server.boto3(["rgw-limits", server.endpoint, bucket]).utf8))
        var excused: [String] = []
        for result in report.results {
            if case .failed(let reason) = result.outcome {
                if RGWBugs.excuse(result.name, reason, limits: limits) {
                    excused.append(result.name)
                } else {
                    Issue.record("\(result.name): \(reason)")
                }
            }
        }
        // The log says what RGW was let off, so that a fixed RGW shows as an empty list.
        print("S3StorageRGWTests: \(report.results.count) rules, failures excused as RGW 16.2's bugs: \(excused.isEmpty ? "none" : excused.joined(separator: ", "))")
        let left = try await storage.list(prefix: "", limit: 1000, continuationToken: nil)
        #expect(left.objects.isEmpty, "every rule deletes what it wrote")
    }

    /// The content types and odd keys moto cannot store (excused there), on a server that can.
    @Test func contentTypesAndSpecialKeysRoundTrip() async throws {
        let server = try RGWServer.get()
        let storage = try await S3PluginFixture.storage(server.config(bucket: try server.makeBucket("special")))
        for (index, type) in ["text/plain", "application/json; charset=utf-8", "image/svg+xml", "x-custom/Mixed.Case-1"].enumerated() {
            let put = try await storage.put("typed-\(index)", data: Array("x".utf8), contentType: type)
            #expect(put.contentType == type)
            #expect(try await storage.head("typed-\(index)").contentType == type)
            #expect(try await storage.get("typed-\(index)").info.contentType == type)
        }
        #expect(try await storage.put("untyped", data: []).contentType == "application/octet-stream")
        #expect(try await storage.head("untyped").contentType == "application/octet-stream")
        let names = ["with space", "100%", "%2F", "%", "a+b", "what?", "#hash", "a&b=c", "back\\slash",
                     "\"quoted\"", "'single'", "tab\there", "new\nline", "carriage\rreturn", "del\u{7F}",
                     "bell\u{7}", "<tag>", "pipe|star*", "colon:semi;", "~tilde", "$HOME", "`tick`", "{braces}[]"]
        for (index, name) in names.enumerated() {
            _ = try await storage.put("special/" + name, data: Array(repeating: UInt8(index), count: index + 1), contentType: nil, metadata: [:])
        }
        for (index, name) in names.enumerated() {
            #expect(try await storage.get("special/" + name).data == Array(repeating: UInt8(index), count: index + 1), "\(name)")
        }
        let listed = try await storage.list(prefix: "special/").map(\.key)
        #expect(listed.map { Array($0.utf8) } == names.map { "special/" + $0 }.sorted(by: ObjectKey.precedes).map { Array($0.utf8) })
    }

    @Test func interop_plugboardWritesBoto3Reads() async throws {
        let server = try RGWServer.get()
        let bucket = try server.makeBucket("interop")
        let storage = try await S3PluginFixture.storage(server.config(bucket: bucket))
        let data = (0..<300_000).map { _ in UInt8.random(in: 0...255) }
        let key = "from-plugboard/r\u{E9}sum\u{E9} 1+1.bin"
        let metadata = ["owner": "plugboard", "n": "42", "note": "spaces inside, ok"]
        let info = try await storage.put(key, data: data, contentType: "application/x-test; v=1", metadata: metadata)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-rgw-interop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("read-by-boto3").path
        let answer = try JSONSerialization.jsonObject(with: Data(try server.boto3(["get", server.endpoint, bucket, key, file]).utf8)) as? [String: Any]
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file))) == data)
        #expect(answer?["contentType"] as? String == "application/x-test; v=1")
        #expect(answer?["metadata"] as? [String: String] == metadata)
        #expect(answer?["etag"] as? String == "\"\(info.etag)\"")
        #expect(info.etag == Hex.encode(try MD5Hasher.hash(data)))
    }

    @Test func interop_boto3WritesPlugboardReads() async throws {
        let server = try RGWServer.get()
        let bucket = try server.makeBucket("interop")
        let storage = try await S3PluginFixture.storage(server.config(bucket: bucket))
        let data = (0..<200_001).map { _ in UInt8.random(in: 0...255) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-rgw-interop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("written-by-boto3").path
        try Data(data).write(to: URL(fileURLWithPath: file))
        let key = "from-boto3/\u{FC} x+y/..%2F.dat"
        try server.boto3(["put", server.endpoint, bucket, key, file, "text/csv; charset=utf-8", "{\"source\": \"boto3\", \"run-id\": \"7\"}"])

        let object = try await storage.get(key)
        #expect(object.data == data)
        #expect(object.info.contentType == "text/csv; charset=utf-8")
        #expect(object.info.metadata == ["source": "boto3", "run-id": "7"])
        #expect(object.info.etag == Hex.encode(try MD5Hasher.hash(data)))
        #expect(try await storage.head(key) == object.info)
        let listed = try await storage.list(prefix: "from-boto3/", limit: 10, continuationToken: nil)
        #expect(listed.objects.map(\.key) == [key] && listed.objects.first?.etag == object.info.etag)
    }
}
