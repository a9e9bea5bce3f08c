import InMemoryStorage
import PlugboardAPI
@testable import PlugboardHTTP
@testable import PlugboardS3Server
import Testing

@Suite struct DeleteObjectsOperationTests {
    static func delete(_ s3: S3Fixture, _ document: String, bucket: String = "bkt") async throws -> HTTPResponse {
        try await DeleteObjectsOperation.deleteObjects(s3.context, s3.request("POST", bucket: bucket, query: [("delete", "")],
                                                                              body: Array(document.utf8)))
    }

    @Test func deletesEachKey_andReportsDeletedAndErrors() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        for key in ["one", "two", " spaced "] { try await s3.put("bkt", key, key) }
        let document = """
        <?xml version="1.0" encoding="UTF-8"?>
        <Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Object><Key>one</Key></Object>
          <Object><Key>two</Key><VersionId>null</VersionId></Object>
          <Object><Key> spaced </Key></Object>
          <Object><Key>never-there</Key></Object>
          <Object><Key>one</Key><VersionId>3sL4kqtJlcpXroDTDmJ</VersionId></Object>
        </Delete>
        """
        let response = try await Self.delete(s3, document)
        #expect(response.status == 200)
        let root = try response.document()
        #expect(root.name == "DeleteResult")
        let deleted = root.children("Deleted")
        #expect(deleted.map { $0.child("Key")?.text } == ["one", "two", " spaced ", "never-there"])
        #expect(deleted[1].text("VersionId") == "null")
        #expect(deleted[0].child("VersionId") == nil)
        let errors = root.children("Error")
        #expect(errors.count == 1)
        #expect(errors.first?.text("Key") == "one")
        #expect(errors.first?.text("VersionId") == "3sL4kqtJlcpXroDTDmJ")
        #expect(errors.first?.text("Code") == "NoSuchVersion")
        #expect(errors.first?.text("Message")?.isEmpty == false)
        #expect(try await s3.storage.list(prefix: "bkt/").isEmpty)
    }

    @Test func keysXMLCannotCarry_areDeletedExactly_andAnsweredParseably() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        let raw = "r\u{01}a\u{1F}w\u{FFFE}", referenced = "c\u{01}h\u{1F}r\u{FFFE}"
        for key in [raw, referenced] { try await s3.put("bkt", key, "x") }
        // What botocore sends (ElementTree writes such characters raw) and character
        // references, as other clients write them.
        let document = "<Delete><Object><Key>\(raw)</Key></Object><Object><Key>c&#x1;h&#31;r&#xFFFE;</Key></Object></Delete>"
        let response = try await Self.delete(s3, document)
        #expect(response.status == 200)
        #expect(try await s3.storage.list(prefix: "bkt/").isEmpty)
        let text = try #require(String(validating: response.body, as: UTF8.self))
        #expect(!text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || $0.value == 0xFFFE })
        let deleted = try response.document().children("Deleted").map { $0.child("Key")?.text }
        #expect(deleted == ["r\u{FFFD}a\u{FFFD}w\u{FFFD}", "c\u{FFFD}h\u{FFFD}r\u{FFFD}"])
    }

    @Test func quietMode_answersOnlyErrors() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        try await s3.put("bkt", "k", "v")
        let tooLong = String(repeating: "x", count: 1100)
        let root = try await Self.delete(s3, "<Delete><Quiet>true</Quiet><Object><Key>k</Key></Object><Object><Key>\(tooLong)</Key></Object></Delete>").document()
        #expect(root.children("Deleted").isEmpty)
        #expect(root.children("Error").count == 1)
        #expect(root.children("Error").first?.text("Code") == "KeyTooLongError")
        #expect(try await s3.storage.exists("bkt/k") == false)

        let loud = try await Self.delete(s3, "<Delete><Quiet>false</Quiet><Object><Key>k</Key></Object></Delete>").document()
        #expect(loud.children("Deleted").count == 1)
    }

    @Test func malformedDocuments_areMalformedXML() async throws {
        let s3 = S3Fixture()
        try await s3.makeBucket("bkt")
        try await s3.put("bkt", "k", "v")
        let tooMany = "<Delete>" + String(repeating: "<Object><Key>k</Key></Object>", count: 1001) + "</Delete>"
        for document in [tooMany, "<Delete></Delete>", "<Delete><Object><Key></Key></Object></Delete>",
                         "<Delete><Object><VersionId>null</VersionId></Object></Delete>", "<Remove><Object><Key>k</Key></Object></Remove>",
                         "<Delete><Quiet>maybe</Quiet><Object><Key>k</Key></Object></Delete>", "<Delete><Object><Key>k</Key></Object>"] {
            let error = await s3Error { try await Self.delete(s3, document) }
            #expect(error?.code == "MalformedXML", "\(document.prefix(80))")
            #expect(error?.status == 400)
        }
        // Nothing was deleted by a refused document.
        #expect(try await s3.storage.exists("bkt/k"))
        let exactly1000 = "<Delete><Quiet>true</Quiet>" + String(repeating: "<Object><Key>k</Key></Object>", count: 1000) + "</Delete>"
        #expect(try await Self.delete(s3, exactly1000).status == 200)
    }

    @Test func missingBucket_isNoSuchBucket() async throws {
        let s3 = S3Fixture()
        let error = await s3Error { try await Self.delete(s3, "<Delete><Object><Key>k</Key></Object></Delete>", bucket: "nope") }
        #expect(error?.code == "NoSuchBucket")
    }
}
