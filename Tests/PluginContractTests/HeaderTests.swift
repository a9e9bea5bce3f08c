import PlugboardAPI
import Testing

@Suite struct HeaderTests {
    /// The literal every plugin (and the scaffold) writes must match the API's constants.
    @Test func scaffoldLiteral_matchesTheAPIConstants() throws {
        let literal: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 8)
        let expected = PluginHeader.expected
        #expect(literal.0 == PluginHeader.magic)
        #expect(literal.1 == PluginHeader.layoutVersion)
        #expect(literal.2 == expected.abiVersion)
        #expect(literal.3 == expected.apiMajor)
        #expect(literal.4 == expected.apiMinor)
    }

    @Test func headerBytes_roundTrip_andStartWithPBRD() throws {
        let bytes = PluginHeader.expected.bytes
        #expect(bytes.count == PluginHeader.size)
        #expect(Array(bytes.prefix(4)) == Array("PBRD".utf8))
        let parsed = try PluginHeader(bytes: bytes, plugin: "p")
        #expect(parsed == PluginHeader.expected)
        try parsed.checkCompatible(plugin: "p")
    }

    @Test(arguments: [0, 19, 21, 40])
    func header_ofTheWrongSize_isRefused(size: Int) {
        let error = #expect(throws: PlugboardError.self) {
            try PluginHeader(bytes: [UInt8](repeating: 0, count: size), plugin: "p")
        }
        #expect(error?.code == .abiMismatch)
        #expect(error?.detail?.contains("\(size) bytes") == true)
    }

    @Test func header_withBadMagic_isRefused_namingBoth() {
        var bytes = PluginHeader.expected.bytes
        bytes[0] = 0x51
        let error = #expect(throws: PlugboardError.self) { try PluginHeader(bytes: bytes, plugin: "p") }
        #expect(error?.code == .abiMismatch)
        #expect(error?.detail?.contains("44524250") == true)
        #expect(error?.detail?.contains("44524251") == true)
    }

    @Test func header_withAnotherABIOrNewerMinor_isIncompatible() throws {
        var other = PluginHeader.expected
        other.abiVersion += 1
        #expect(throws: PlugboardError.self) { try other.checkCompatible(plugin: "p") }
        var newer = PluginHeader.expected
        newer.apiMinor += 1
        let error = #expect(throws: PlugboardError.self) { try newer.checkCompatible(plugin: "p") }
        #expect(error?.code == .apiVersionMismatch)
    }
}
