import Foundation
import PlugboardAPI
import PlugboardHost
import PlugboardTesting
import PlugboardTestSupport
import Testing

/// libS3Storage.so against a moto_server that verifies every SigV4 signature (with
/// botocore's signer) and every IAM permission: the signing is checked end to end, on
/// every key the conformance suite writes, and S3's refusals map as documented.
@Suite(.serialized, .pythonTools) struct S3StorageSignatureTests {
    struct Keys: Decodable {
        var accessKeyId: String
        var secretAccessKey: String
    }

    /// The authenticating server, its bucket and the IAM user's key, set up once.
    static let setUp: Result<(MotoServer, String, Keys), any Error> = Result {
        let server = try MotoServer.authenticating.get()
        let bucket = "signed-\(UInt32.random(in: 0...UInt32.max))"
        let keys = try JSONDecoder().decode(Keys.self, from: Data(try server.boto3(["auth-setup", server.endpoint, bucket]).utf8))
        return (server, bucket, keys)
    }

    static func config(secret: String? = nil, accessKeyId: String? = nil) throws -> [String: ConfigValue] {
        let (server, bucket, keys) = try setUp.get()
        return S3PluginFixture.config(bucket: bucket, server: server, extra: [
            "accessKeyId": .string(accessKeyId ?? keys.accessKeyId), "secretAccessKey": .string(secret ?? keys.secretAccessKey)])
    }

    @Test func everyConformanceRequestIsSignedRight() async throws {
        let storage = try await S3PluginFixture.storage(try Self.config())
        let options = ObjectStorageConformance.Options(largeObjectByteCount: 8 * 1024 * 1024, concurrentTasks: 8)
        let report = await ObjectStorageConformance(makeStorage: { storage }, options: options).run()
        // The rules moto cannot pass for any client (S3StorageMotoTests) fail here the same
        // way, and its races may; any other failure, a refused signature first of all, is a bug.
        let motoCannot: Set = ["content_type_roundtrip_and_default", "key_special_characters_ok"]
        for result in report.results {
            if case .failed(let reason) = result.outcome {
                if Self.motoChecksTheWirePath(result.name, reason) { continue }
                #expect(motoCannot.contains(result.name) || MotoRaces.excuse(result.name, reason, in: report), "\(result.name): \(reason)")
                #expect(!reason.contains("access_denied"), "\(result.name): \(reason)")
            }
        }
    }

    /// The key `..` travels as `%2E%2E` and is signed as `..`, SigV4's canonical URI:
    /// AWS S3 and Ceph RGW decode the path and encode it again before checking (the RGW
    /// suite passes the rule), but moto hands the path as sent to botocore's signer, so it
    /// wants `%2E%2E` signed. Excused only as that refusal of the put of `..`; every other
    /// key of the suite is sent in its canonical form, so moto checks those signatures.
    static func motoChecksTheWirePath(_ name: String, _ reason: String) -> Bool {
        name == "key_dotdot_ok" && reason.hasPrefix("put of key \"..\" ") && reason.contains("S3 refused the request signature")
    }

    @Test func wrongSecret_isSignatureDoesNotMatch_withItsHint() async throws {
        let (_, bucket, _) = try Self.setUp.get()
        let wrong = "wrong-secret-for-this-key-0123456789"
        let lines = CapturedLines()
        let (container, record) = try await S3PluginFixture.load(try Self.config(secret: wrong), logger: lines.logger)
        // HeadBucket's 403 carries no code: the load goes on with a warning.
        #expect(record.state == .active)
        #expect(lines.lines.contains { $0.contains("cannot check the bucket") })
        let storage: any ObjectStorage = try container.resolve()
        do {
            _ = try await storage.get("anything")
            Issue.record("expected storage.access_denied")
        } catch let error as PlugboardError {
            #expect(error.code == .storageAccessDenied)
            #expect(error.message.contains("refused the request signature") && error.message.contains(bucket))
            #expect(error.detail?.contains("SignatureDoesNotMatch") == true)
            #expect(error.hint?.contains("clock") == true && error.hint?.contains("secretAccessKey") == true)
            #expect(!"\(error)".contains(wrong))
        }
        #expect(lines.lines.allSatisfy { !$0.contains(wrong) })
    }

    @Test func unknownKeyId_isInvalidAccessKeyId() async throws {
        let storage = try await S3PluginFixture.storage(try Self.config(accessKeyId: "AKIANOSUCHKEY0000000"))
        do {
            try await storage.delete("anything")
            Issue.record("expected storage.access_denied")
        } catch let error as PlugboardError {
            #expect(error.code == .storageAccessDenied)
            #expect(error.message.contains("InvalidAccessKeyId"))
            #expect(error.hint?.contains("does not know the access key id") == true)
        }
    }
}
