import PlugboardAPI
import Testing

@Suite("ObjectMetadata validation")
struct ObjectMetadataTests {
    @Test func validMetadata_isAccepted() {
        let printable = String(decoding: (0x21...0x7E).map { UInt8($0) }, as: UTF8.self)
        let metadata = ["owner": "team a", "n0-9": "", "-": "x", "printable": printable]
        #expect(errorCode { try ObjectMetadata.validate(metadata) } == nil)
        #expect(errorCode { try ObjectMetadata.validate([:]) } == nil)
    }

    @Test(arguments: ["", "Owner", "OWNER", "snake_case", "dot.ted", "with space", "caf\u{E9}", "tab\t", "colon:"])
    func badKey_isInvalidMetadata(key: String) {
        let error = plugboardError { try ObjectMetadata.validate([key: "v"]) }
        #expect(error?.code == .storageInvalidMetadata)
        if !key.isEmpty {
            #expect(error?.message.contains("metadata key") == true)
        }
    }

    @Test(arguments: ["line\nbreak", "cr\r", "tab\t", "nul\u{0}", "del\u{7F}", "caf\u{E9}", "\u{1F600}",
                      " leading", "trailing ", " "])
    func badValue_isInvalidMetadata_namingTheKey(value: String) {
        let error = plugboardError { try ObjectMetadata.validate(["owner": value]) }
        #expect(error?.code == .storageInvalidMetadata)
        #expect(error?.message == "invalid value for metadata key \"owner\"")
    }

    @Test func exactly2048Bytes_isAccepted_and2049IsRefused() {
        let atLimit = ["k": String(repeating: "v", count: 2047)]
        let over = ["k": String(repeating: "v", count: 2048)]
        #expect(errorCode { try ObjectMetadata.validate(atLimit) } == nil)
        let error = plugboardError { try ObjectMetadata.validate(over) }
        #expect(error?.code == .storageInvalidMetadata)
        #expect(error?.detail?.contains("2049 bytes") == true)
    }

    @Test func sizeCountsKeysAndValuesOfAllEntries() {
        var metadata: [String: String] = [:]
        for index in 0..<10 { metadata["key\(index)"] = String(repeating: "v", count: 200) }
        // 10 × (4 + 200) = 2040 bytes: fine; one more entry of 5 + 5 bytes goes over.
        #expect(errorCode { try ObjectMetadata.validate(metadata) } == nil)
        metadata["extra"] = "12345"
        #expect(errorCode { try ObjectMetadata.validate(metadata) } == .storageInvalidMetadata)
    }

    @Test func severalBadEntries_alwaysReportTheSameOneFirst() {
        let metadata = ["Zed": "x", "Alpha": "y", "ok": "\n"]
        let messages = (0..<20).map { _ in plugboardError { try ObjectMetadata.validate(metadata) }?.message }
        #expect(Set(messages).count == 1)
        #expect(messages.first == "invalid metadata key \"Alpha\"")
    }
}
