import Testing
@testable import S3StorageClient

/// S3's XML answers: listings (URL-encoded keys, pagination), errors, and bodies that are
/// not what they should be, which must be error values naming what was expected.
@Suite struct S3XMLTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func listingWithURLEncodedKeysAndToken() throws {
        let page = try S3ListPage.parse(Self.bytes("""
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
              <Name>b</Name><Prefix>p%2F</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
              <EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>
              <Contents><Key>p/a+b%0Ac%C3%A9</Key><LastModified>2026-11-29T20:42:08.123Z</LastModified>
                <ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>
              <Contents><Key>p/%2B</Key><LastModified>2026-11-29T20:42:09.000Z</LastModified><ETag>"x"</ETag><Size>12</Size></Contents>
              <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
            </ListBucketResult>
            """))
        #expect(page.entries.map(\.key) == ["p/a b\nc\u{E9}", "p/+"])
        #expect(page.entries[0].etag == "\"d41d8cd98f00b204e9800998ecf8427e\"")
        #expect(page.entries[1].size == 12)
        #expect(page.isTruncated)
        #expect(page.nextContinuationToken == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=")
    }

    @Test func listingWithoutEncodingKeepsKeysAsWritten() throws {
        let page = try S3ListPage.parse(Self.bytes(
            "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a+b%20</Key><LastModified>2026-01-01T00:00:00Z</LastModified><ETag>e</ETag><Size>1</Size></Contents></ListBucketResult>"))
        #expect(page.entries.map(\.key) == ["a+b%20"])
        #expect(!page.isTruncated && page.nextContinuationToken == nil)
    }

    @Test func emptyListing() throws {
        let page = try S3ListPage.parse(Self.bytes("<ListBucketResult><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>"))
        #expect(page.entries.isEmpty && page.nextContinuationToken == nil)
    }

    @Test func errorDocument() throws {
        let error = try S3ErrorBody.parse(Self.bytes("""
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>RequestTimeTooSkewed</Code><Message>The difference is too large.</Message>
            <RequestTime>20261129T000000Z</RequestTime><ServerTime>2026-11-29T01:00:00Z</ServerTime>
            <RequestId>4442587FB7D0A2F9</RequestId></Error>
            """))
        #expect(error.code == "RequestTimeTooSkewed")
        #expect(error.message == "The difference is too large.")
        #expect(error.requestID == "4442587FB7D0A2F9")
        #expect(error.fields["ServerTime"] == "2026-11-29T01:00:00Z")
    }

    @Test(arguments: [
        ("", "an empty body"),
        ("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a", "malformed XML"),
        ("not xml at all", "malformed XML"),
        ("<Error><Code>X</Code></Error>", "expected a <ListBucketResult> document, found <Error>"),
        ("<ListBucketResult><Contents><Key>a</Key><Size>1</Size><LastModified>t</LastModified></Contents></ListBucketResult>", "expected <IsTruncated> true or false, found none"),
        ("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>a</Key><Size>-1</Size><LastModified>t</LastModified></Contents></ListBucketResult>", "non-negative integer <Size>"),
        ("<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Size>1</Size><LastModified>t</LastModified></Contents></ListBucketResult>", "expected <Key> in <Contents> number 1"),
        ("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "expected <NextContinuationToken> in a truncated listing"),
        ("<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated><Contents><Key>%FF%FE</Key><Size>1</Size><LastModified>t</LastModified></Contents></ListBucketResult>", "URL-encoded UTF-8 <Key>"),
        ("<!DOCTYPE x [<!ENTITY a \"aaaa\">]><ListBucketResult>&b;</ListBucketResult>", "malformed XML"),
    ])
    func malformedListingsAreErrorValues(body: String, expected: String) {
        #expect {
            _ = try S3ListPage.parse(Self.bytes(body))
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func deeplyNestedXMLIsRefused() {
        let body = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        #expect(throws: S3XML.ParseError.self) { _ = try S3XML.parse(Self.bytes(body)) }
    }

    /// Found by Tests/Fuzz/s3-xml (corpus/crash-element-name-not-utf8.xml): XMLParser
    /// hands libxml2's bytes of an element name to a String initializer that traps when
    /// they are not UTF-8, so such a body from a server once took the host down.
    @Test func elementNameThatIsNotUTF8IsAnErrorValue() {
        let body = Array("<ListBuc".utf8) + [0xFF, 0xFF, 0xFF, 0xFF]
            + Array("esult><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated></ListBucketResult>".utf8)
        #expect {
            _ = try S3ListPage.parse(body)
        } throws: { error in
            "\(error)".contains("not UTF-8 text")
        }
    }

    /// Found by Tests/Fuzz/s3-xml (corpus/crash-instruction-without-data.xml): XMLParser
    /// passes a processing instruction's missing data to strlen, a segfault; the other
    /// ways to smuggle one in (another encoding, UTF-16) are refused with it.
    @Test(arguments: [
        ("<?xml?><Error><Code>X</Code></Error>", "a processing instruction"),
        ("<Error><?pi?><Code>X</Code></Error>", "a processing instruction"),
        ("<?xml version=\"1.0\"?><!DOCTYPE e [<?pi?>]><Error/>", "a document type"),
        ("<?xml version=\"1.0\" encoding=\"IBM037\"?>LoxxLo", "an encoding other than UTF-8"),
        ("<\0?\0p\0?\0>\0", "not UTF-8 text"),
        // Found by the fuzzer in CI: a broken declaration that libxml2 recovers from ends
        // at the first "?>", and the "<?x" before it is read as an instruction.
        ("<?xml 0\"$s toZ</See>\n<R#tiequ<?x?>\n>>", "an XML declaration holding more"),
        ("<?xml version=\"1.0\"", "an XML declaration without its end"),
        (" <?xml version=\"1.0\"?><Error/>", "a processing instruction"),
        ("<!DOCTYPE e [<!NOTATION n SYSTEM \"x\">]><Error/>", "a document type"),
        ("<Error><!ENTITY e \"x\"><Code>X</Code></Error>", "a document type"),
    ])
    func processingInstructionsAreErrorValues(body: String, expected: String) {
        #expect {
            _ = try S3ErrorBody.parse(Self.bytes(body))
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    /// The declaration S3 and moto send, in either quoting, still passes the checks above,
    /// and so do comments and CDATA.
    @Test func utf8DeclarationStillParses() throws {
        let body = "<?xml version='1.0' encoding='utf-8' standalone='yes'?>\n<Error><Code>NoSuchKey</Code></Error>"
        #expect(try S3ErrorBody.parse(Self.bytes(body)).code == "NoSuchKey")
        let commented = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><!-- note --><Error><Code><![CDATA[SlowDown]]></Code></Error>"
        #expect(try S3ErrorBody.parse(Self.bytes(commented)).code == "SlowDown")
    }

    @Test func malformedErrorDocuments() {
        #expect(throws: S3XML.ParseError.self) { _ = try S3ErrorBody.parse(Self.bytes("<Error><Message>no code</Message></Error>")) }
        #expect(throws: S3XML.ParseError.self) { _ = try S3ErrorBody.parse(Self.bytes("<html>Bad gateway</html>")) }
        #expect(throws: S3XML.ParseError.self) { _ = try S3ErrorBody.parse(Self.bytes("<Error><Code>")) }
    }
}
