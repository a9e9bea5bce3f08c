import Testing
@testable import PlugboardS3Server

@Suite struct S3XMLWriterTests {
    static func escaped(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        S3XMLWriter.escape(text, into: &bytes)
        return bytes
    }

    @Test func writesWhatXML10Carries_andAReplacementForWhatItCannot() {
        #expect(Self.escaped("a&b<c>d\"e'f") == Array("a&amp;b&lt;c&gt;d&quot;e&apos;f".utf8))
        #expect(Self.escaped("\t\n\r") == Array("\t\n&#13;".utf8))
        // C0 controls, U+FFFE and U+FFFF: neither raw nor as references in XML 1.0.
        #expect(Self.escaped("\u{01}\u{1F}\u{FFFE}\u{FFFF}") == Array("\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}".utf8))
        // Everything else XML 1.0 allows goes through as it is, the neighbours included.
        let allowed = "\u{7F}\u{85}\u{D7FF}\u{E000}\u{FFFC}\u{FFFD}\u{EFBF}\u{10000}\u{10FFFF}é"
        #expect(Self.escaped(allowed) == Array(allowed.utf8))
    }

    @Test func aDocumentWithSuchKeys_isWellFormedXML10() throws {
        var xml = S3XMLWriter(root: "DeleteResult")
        xml.element("Key", "k\u{01}\u{FFFE}")
        let text = try #require(String(validating: xml.finish(), as: UTF8.self))
        #expect(text.hasSuffix("<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Key>k\u{FFFD}\u{FFFD}</Key></DeleteResult>"))
    }
}
