import Foundation
import PlugboardAPI
import PlugboardCrypto
import Testing

/// The interop checks against a real S3 server, written once for each server the suites
/// run them against (moto, Ceph's RGW): what S3Storage writes boto3 reads, and what boto3
/// writes S3Storage reads, bytes, content type, metadata and ETag alike.
enum S3Interop {
    /// `boto3` runs the peer script (Python/boto3_peer.py) against the server at `endpoint`.
    static func plugboardWritesBoto3Reads(_ storage: any ObjectStorage, endpoint: String, bucket: String,
                                          boto3: ([String]) throws -> String) async throws {
        let data = (0..<300_000).map { _ in UInt8.random(in: 0...255) }
        let key = "from-plugboard/r\u{E9}sum\u{E9} 1+1.bin"
        let metadata = ["owner": "plugboard", "n": "42", "note": "spaces inside, ok"]
        let info = try await storage.put(key, data: data, contentType: "application/x-test; v=1", metadata: metadata)

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-interop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("read-by-boto3").path
        let answer = try JSONSerialization.jsonObject(with: Data(try boto3(["get", endpoint, bucket, key, file]).utf8)) as? [String: Any]
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: file))) == data)
        #expect(answer?["contentType"] as? String == "application/x-test; v=1")
        #expect(answer?["metadata"] as? [String: String] == metadata)
        #expect(answer?["etag"] as? String == "\"\(info.etag)\"")
        #expect(info.etag == Hex.encode(try MD5Hasher.hash(data)))
    }

    static func boto3WritesPlugboardReads(_ storage: any ObjectStorage, endpoint: String, bucket: String,
                                          boto3: ([String]) throws -> String) async throws {
        let data = (0..<200_001).map { _ in UInt8.random(in: 0...255) }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-interop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("written-by-boto3").path
        try Data(data).write(to: URL(fileURLWithPath: file))
        let key = "from-boto3/\u{FC} x+y/..%2F.dat"
        _ = try boto3(["put", endpoint, bucket, key, file, "text/csv; charset=utf-8", "{\"source\": \"boto3\", \"run-id\": \"7\"}"])

        let object = try await storage.get(key)
        #expect(object.data == data)
        #expect(object.info.contentType == "text/csv; charset=utf-8")
        #expect(object.info.metadata == ["source": "boto3", "run-id": "7"])
        #expect(object.info.etag == Hex.encode(try MD5Hasher.hash(data)))
        #expect(try await storage.head(key) == object.info)
        let listed = try await storage.list(prefix: "from-boto3/", limit: 10, continuationToken: nil)
        #expect(listed.objects.map(\.key) == [key] && listed.objects.first?.etag == object.info.etag)
    }

    /// Odd keys (`\n` among them only where the server can store it) and content types
    /// that round-trip through S3Storage: stored, read back and listed in key order.
    static func contentTypesAndSpecialKeysRoundTrip(_ storage: any ObjectStorage, newlineKeys: Bool) async throws {
        for (index, type) in ["text/plain", "application/json; charset=utf-8", "image/svg+xml", "x-custom/Mixed.Case-1"].enumerated() {
            let put = try await storage.put("typed-\(index)", data: Array("x".utf8), contentType: type)
            #expect(put.contentType == type)
            #expect(try await storage.head("typed-\(index)").contentType == type)
            #expect(try await storage.get("typed-\(index)").info.contentType == type)
        }
        #expect(try await storage.put("untyped", data: []).contentType == "application/octet-stream")
        #expect(try await storage.head("untyped").contentType == "application/octet-stream")
        let names = ["with space", "100%", "%2F", "%", "a+b", "what?", "#hash", "a&b=c", "back\\slash",
                     "\"quoted\"", "'single'", "tab\there"] + (newlineKeys ? ["new\nline"] : []) + ["carriage\rreturn", "del\u{7F}",
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
}
