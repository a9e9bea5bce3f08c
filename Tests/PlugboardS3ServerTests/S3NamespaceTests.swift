import Testing
@testable import PlugboardS3Server

@Suite struct S3NamespaceTests {
    @Test func bucketNames_followS3sRules() throws {
        // Only four all-number parts make an address; "1.2.3" and "256.1.1.1" are names.
        for good in ["abc", "photos", "my.bucket-2", String(repeating: "a", count: 63), "a.b.c.d", "1.2.3", "1.2.3.4.5",
                     "256.1.1.1", "1.2.3.a"] {
            try S3Namespace.validateBucketName(good)
        }
        let bad: [(String, String)] = [("ab", "expected 3 to 63 characters, found 2"), ("Photos", "found \"P\""),
                                       ("-abc", "at the start and the end"), ("a..b", "adjacent periods"),
                                       ("192.168.1.1", "IP address"), ("_plugboard-s3", "found \"_\""), ("0.0.0.0", "IP address"),
                                       ("a.b..c", "adjacent periods"), ("1..2.3", "adjacent periods")]
        for (name, why) in bad {
            #expect(throws: S3Error.self) { try S3Namespace.validateBucketName(name) }
            do { try S3Namespace.validateBucketName(name) } catch {
                #expect(error.code == "InvalidBucketName")
                #expect(error.message.contains(why), "\(name): \(error.message)")
            }
        }
    }

    @Test func newBucketNames_refuseWhatAWSReserves_butExistingOnesStayReachable() throws {
        for (name, why) in [("xn--bucket", "begin with \"xn--\""), ("sthree-data", "begin with \"sthree-\""),
                            ("amzn-s3-demo-bucket", "begin with \"amzn-s3-demo-\""), ("photos-s3alias", "end with \"-s3alias\""),
                            ("photos--ol-s3", "end with \"--ol-s3\""), ("photos.mrap", "end with \".mrap\""),
                            ("photos--x-s3", "end with \"--x-s3\""), ("photos--table-s3", "end with \"--table-s3\"")] {
            do {
                try S3Namespace.validateBucketName(name)
                Issue.record("\(name) was accepted for a new bucket")
            } catch {
                #expect(error.code == "InvalidBucketName")
                #expect(error.message.contains(why), "\(name): \(error.message)")
            }
            // A bucket made under the looser rule before is still reachable.
            try S3Namespace.validateBucketName(name, creating: false)
        }
        for name in ["_plugboard-s3", "a/b", "Photos"] {
            #expect(throws: S3Error.self) { try S3Namespace.validateBucketName(name, creating: false) }
        }
    }

    @Test func xmlWriter_escapesText() {
        var xml = S3XMLWriter(root: "R")
        xml.element("K", "a&b<c>\"d'\r\u{1}")
        let text = String(decoding: xml.finish(), as: UTF8.self)
        #expect(text.hasSuffix("<R xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><K>a&amp;b&lt;c&gt;&quot;d&apos;&#13;\u{FFFD}</K></R>"))
    }
}
