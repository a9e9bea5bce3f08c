import PlugboardAPI
import Testing

@Suite struct HandshakeTests {
    @Test func handshakeOfAPluginBuiltHere_passes() throws {
        let hs = try PluginHandshake(words: handshakeWords(GreeterPlugin.self), plugin: "g")
        #expect(hs.abi == PluginABI.current)
        #expect(hs.api == APIVersion.current)
        try hs.check(plugin: "g")
    }

    @Test func handshake_refusesOtherTypeIdentities_asDuplicateAPIModule() throws {
        var words = handshakeWords(GreeterPlugin.self)
        words[6] &+= 16  // another Container metadata address: a second copy of the API
        let hs = try PluginHandshake(words: words, plugin: "Dup")
        let error = #expect(throws: PlugboardError.self) { try hs.check(plugin: "Dup") }
        #expect(error?.code == .duplicateAPIModule)
        #expect(error?.message.contains("\"Dup\"") == true)
    }

    @Test func handshake_refusesAnotherABI_namingBoth() throws {
        var words = handshakeWords(GreeterPlugin.self)
        words[1] = UInt64(PluginABI.current + 1)
        let error = #expect(throws: PlugboardError.self) {
            try PluginHandshake(words: words, plugin: "Old").check(plugin: "Old")
        }
        #expect(error?.code == .abiMismatch)
        #expect(error?.detail?.contains("ABI \(PluginABI.current)") == true)
        #expect(error?.detail?.contains("ABI \(PluginABI.current + 1)") == true)
        #expect(error?.hint?.contains("Rebuild") == true)
    }

    @Test func handshake_refusesANewerMinor_butAcceptsAnOlderOne() throws {
        let host = APIVersion.current
        var words = handshakeWords(GreeterPlugin.self)
        words[3] = UInt64(host.minor + 1)
        let newer = #expect(throws: PlugboardError.self) {
            try PluginHandshake(words: words, plugin: "New").check(plugin: "New")
        }
        #expect(newer?.code == .apiVersionMismatch)
        #expect(newer?.detail?.contains("\(host.major).\(host.minor + 1)") == true)

        if host.minor > 0 {
            words[3] = UInt64(host.minor - 1)
            try PluginHandshake(words: words, plugin: "Older").check(plugin: "Older")
        }
        words[3] = UInt64(host.minor)
        words[4] = UInt64(host.patch + 7)  // patch never matters
        try PluginHandshake(words: words, plugin: "Patch").check(plugin: "Patch")
    }

    @Test func handshake_refusesAnotherMajor() throws {
        var words = handshakeWords(GreeterPlugin.self)
        words[2] = UInt64(APIVersion.current.major + 1)
        let error = #expect(throws: PlugboardError.self) {
            try PluginHandshake(words: words, plugin: "Next").check(plugin: "Next")
        }
        #expect(error?.code == .apiVersionMismatch)
        #expect(error?.detail?.contains("PlugboardAPI \(APIVersion.current)") == true)
    }

    @Test func handshake_unwrittenBuffer_isAProtocolViolation() {
        let error = #expect(throws: PlugboardError.self) {
            try PluginHandshake(words: [UInt64](repeating: 0, count: PluginHandshake.wordCount), plugin: "Mute")
        }
        #expect(error?.code == .protocolViolation)
    }

    @Test func entryPoint_answersUnknownOperationsAndMissingArguments() {
        #expect(PluginEntry.run(99, UnsafeMutableRawPointer(bitPattern: 8), GreeterPlugin.self) == PluginEntry.Status.unknownOperation)
        #expect(PluginEntry.run(PluginEntry.Op.handshake, nil, GreeterPlugin.self) == PluginEntry.Status.missingArgument)
    }
}
