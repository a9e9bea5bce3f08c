import Testing
@testable import PlugboardS3Server

@Suite struct S3XMLReaderTests {
    @Test func readsAnS3RequestDocument() throws {
        let text = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- boto3 -->
        <Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Quiet>true</Quiet>
          <Object><Key>a &amp; b&#x2F;c&lt;</Key><VersionId>null</VersionId></Object>
          <s3:Object><Key><![CDATA[x<y]]></Key></s3:Object><Empty/>
        </Delete>
        """
        let root = try S3XMLReader.parse(Array(text.utf8))
        #expect(root.name == "Delete")
        #expect(root.text("Quiet") == "true")
        #expect(root.children("Object").map { $0.text("Key") } == ["a & b/c<", "x<y"])
        #expect(root.child("Empty")?.text == "")
    }

    @Test func refusesWhatS3DocumentsDoNotHave() {
        let cases: [(String, String)] = [
            ("", "expected the root element"),
            ("<a><b></a>", "expected </b>, found </a>"),
            ("<!DOCTYPE a [<!ENTITY x 'y'>]><a/>", "document type"),
            ("<a>&x;</a>", "unknown entity"),
            ("<a>&#0;</a>", "invalid character reference"),
            ("<a></a><b/>", "after the root element"),
            ("<a><?pi x?></a>", "processing instruction"),
            (String(repeating: "<a>", count: 40), "deeper than 16"),
            ("<a", "without its end"),
        ]
        for (text, why) in cases {
            do {
                _ = try S3XMLReader.parse(Array(text.utf8))
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.code == "MalformedXML")
                #expect(error.message.contains(why), "\(text): \(error.message)")
            }
        }
        #expect(throws: S3Error.self) { try S3XMLReader.parse([0xFF, 0x3C]) }
    }
}
