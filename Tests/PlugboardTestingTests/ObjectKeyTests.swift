import PlugboardAPI
import Testing

@Suite("ObjectKey validation and ordering")
struct ObjectKeyTests {
    @Test(arguments: ["a", "a/b", "..", ".", "/leading", "//", "trailing/", "a//b", " ", "\u{7F}", "tab\there",
                      "caf\u{E9}", "\u{1D11E}", "\u{FFFD}", "\u{10FFFF}", String(repeating: "k", count: 1024),
                      String(repeating: "\u{1D11E}", count: 256)])
    func validKeys_areAccepted(key: String) {
        #expect(errorCode { try ObjectKey.validate(key) } == nil)
    }

    @Test func emptyKey_isInvalidKey() {
        let error = plugboardError { try ObjectKey.validate("") }
        #expect(error?.code == .storageInvalidKey)
        #expect(error?.message == "object key is empty")
        #expect(error?.detail?.hasSuffix(".") == true)
        #expect(error?.hint != nil)
    }

    @Test func key1025ASCIIBytes_isInvalidKey_andDetailSaysTheLength() {
        let error = plugboardError { try ObjectKey.validate(String(repeating: "k", count: 1025)) }
        #expect(error?.code == .storageInvalidKey)
        #expect(error?.detail?.contains("1025 bytes") == true)
        #expect(error?.detail?.contains("1024") == true)
    }

    @Test func key513CharactersOf1025Bytes_isInvalidKey() {
        let key = "a" + String(repeating: "\u{E9}", count: 512)
        #expect(key.count == 513)
        #expect(errorCode { try ObjectKey.validate(key) } == .storageInvalidKey)
    }

    @Test(arguments: ["\u{0}", "a\u{0}b", "end\u{0}"])
    func keyWithNUL_isInvalidKey_andMessageShowsItEscaped(key: String) {
        let error = plugboardError { try ObjectKey.validate(key) }
        #expect(error?.code == .storageInvalidKey)
        #expect(error?.message.contains("\\u{0}") == true)
        #expect(error?.message.utf8.contains(0) == false)
    }

    @Test func validBytes_becomeTheKey() throws {
        let key = try ObjectKey.validate(bytes: Array("dir/caf\u{E9}".utf8))
        #expect(ObjectKey.isSame(key, as: "dir/caf\u{E9}"))
    }

    @Test(arguments: [
        [0xFF] as [UInt8],                 // never valid in UTF-8
        [0x61, 0x80],                      // lone continuation byte
        [0xC0, 0x80],                      // overlong NUL
        [0xE0, 0x80, 0xAF],                // overlong "/"
        [0xED, 0xA0, 0x80],                // UTF-16 surrogate
        [0xF4, 0x90, 0x80, 0x80],          // above U+10FFFF
        [0x61, 0xE2, 0x82],                // truncated sequence
    ])
    func invalidUTF8Bytes_areInvalidKey(bytes: [UInt8]) {
        let error = plugboardError { _ = try ObjectKey.validate(bytes: bytes) }
        #expect(error?.code == .storageInvalidKey)
        #expect(error?.message == "object key is not valid UTF-8")
    }

    @Test func invalidUTF8_detailNamesTheOffendingByteAndOffset() {
        let error = plugboardError { _ = try ObjectKey.validate(bytes: [0x61, 0x62, 0xFF, 0x63]) }
        #expect(error?.detail?.contains("0xFF") == true)
        #expect(error?.detail?.contains("offset 2") == true)
    }

    @Test func bytes_emptyTooLongOrWithNUL_areInvalidKey() {
        #expect(errorCode { _ = try ObjectKey.validate(bytes: [UInt8]()) } == .storageInvalidKey)
        #expect(errorCode { _ = try ObjectKey.validate(bytes: [UInt8](repeating: 0x61, count: 1025)) } == .storageInvalidKey)
        #expect(errorCode { _ = try ObjectKey.validate(bytes: [0x61, 0x00]) } == .storageInvalidKey)
        #expect(errorCode { _ = try ObjectKey.validate(bytes: [UInt8](repeating: 0x61, count: 1024)) } == nil)
    }

    @Test func veryLongByteSequence_isRefusedWithItsTotalLength() {
        let error = plugboardError { _ = try ObjectKey.validate(bytes: [UInt8](repeating: 0x61, count: 100_000)) }
        #expect(error?.code == .storageInvalidKey)
        #expect(error?.detail?.contains("100000 bytes") == true)
    }

    @Test func longKeyInMessage_isShortened() {
        let error = plugboardError { try ObjectKey.validate(String(repeating: "k", count: 5000)) }
        #expect((error?.message.count ?? .max) < 200)
    }

    @Test func ordering_isUTF8ByteOrder_notStringOrder() {
        let keys = ["\u{1D11E}", "z", "\u{FFFD}", "e\u{301}", "B", "\u{E9}", "a", "f"]
        let sorted = keys.sorted(by: ObjectKey.precedes)
        #expect(sorted.map { Array($0.utf8) } == ["B", "a", "e\u{301}", "f", "z", "\u{E9}", "\u{FFFD}", "\u{1D11E}"].map { Array($0.utf8) })
        // Swift's own String order disagrees, which is why the helper exists.
        #expect(("e\u{301}" < "f") == false)
        #expect(ObjectKey.precedes("e\u{301}", "f"))
    }

    @Test func ordering_putsAPrefixBeforeItsExtensions() {
        #expect(ObjectKey.precedes("a", "a/b"))
        #expect(ObjectKey.precedes("a/b", "ab"))
        #expect(!ObjectKey.precedes("a", "a"))
    }

    @Test func sameness_isByteEquality_notCanonicalEquivalence() {
        #expect("caf\u{E9}" == "cafe\u{301}")
        #expect(!ObjectKey.isSame("caf\u{E9}", as: "cafe\u{301}"))
        #expect(ObjectKey.isSame("caf\u{E9}", as: "caf\u{E9}"))
    }

    @Test func prefixMatch_isByteWise() {
        #expect(!"cafe\u{301}".hasPrefix("cafe"))
        #expect(ObjectKey.hasPrefix("cafe\u{301}", "cafe"))
        #expect(!ObjectKey.hasPrefix("caf\u{E9}", "cafe"))
        #expect(ObjectKey.hasPrefix("anything", ""))
    }
}
