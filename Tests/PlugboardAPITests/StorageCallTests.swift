import PlugboardAPI
import Testing

/// `StorageCall` (PlugboardAPI 1.8): what a front end says a storage call is for, as a
/// layer reads it.
@Suite struct StorageCallTests {
    @Test func everyCallNobodyMarked_isAUsersObject() {
        #expect(StorageCall.current == .object)
        #expect(!StorageCall.current.isFrontEnds)
    }

    @Test func aMarkedCall_isSeenInsideIt_andNotAfter() async {
        let part = StorageCall(purpose: .part, object: "photos/big.bin", upload: "U1")
        let seen = await StorageCall.with(part) { () async -> StorageCall in
            // A task the call starts inherits it, as a layer's own child tasks do.
            await Task { StorageCall.current }.value
        }
        #expect(seen == part && seen.isFrontEnds)
        #expect(StorageCall.current == .object)
        #expect(StorageCall.withoutWaiting(.record) { StorageCall.current.purpose } == .record)
        #expect("\(part)" == #"part for "photos/big.bin" of upload U1"#)
    }

    @Test func metadataByteCount_isWhatTheLimitCounts() throws {
        let metadata = ["a": "bc", "caf": "\u{E9}"]
        #expect(ObjectMetadata.byteCount(metadata) == 1 + 2 + 3 + 2)
        #expect(ObjectMetadata.byteCount([:]) == 0)
    }
}
