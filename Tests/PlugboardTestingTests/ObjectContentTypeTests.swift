import PlugboardAPI
import Testing

@Suite("ObjectContentType")
struct ObjectContentTypeTests {
    @Test func nil_resolvesToOctetStream() throws {
        #expect(try ObjectContentType.resolve(nil) == "application/octet-stream")
        #expect(ObjectContentType.defaultValue == "application/octet-stream")
    }

    @Test(arguments: ["text/plain", "application/json; charset=utf-8", "x/y", String(repeating: "t", count: 1024)])
    func givenType_isKeptUnchanged(type: String) throws {
        #expect(try ObjectContentType.resolve(type) == type)
    }

    @Test(arguments: ["", "text/plain\r\nx-injected: 1", "text/plain\n", "caf\u{E9}/x", "nul\u{0}", " text/plain",
                      "text/plain ", String(repeating: "t", count: 1025)])
    func badType_isInvalidArgument(type: String) {
        #expect(errorCode { _ = try ObjectContentType.resolve(type) } == .storageInvalidArgument)
    }
}
