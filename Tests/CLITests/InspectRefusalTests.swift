import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// `plugboard inspect` on copies of a real plugin made incompatible: another PlugboardAPI
/// major version in its header, another compiler in its `.comment` section. Both are
/// refused from the file alone, before `dlopen`, naming both versions and the command that
/// rebuilds the plugin.
@Suite struct InspectRefusalTests {
    static var memoryStorage: String { "\(CommandRunner.productsFolder)/libMemoryStorage.so" }

    /// The bytes of `libMemoryStorage.so` with every occurrence of `target` replaced by
    /// `replacement` (same length, so the ELF layout is untouched).
    static func patched(_ target: [UInt8], _ replacement: [UInt8], in sandbox: Sandbox) throws -> [UInt8] {
        precondition(target.count == replacement.count)
        var bytes = try sandbox.read(memoryStorage)
        var found = 0
        var index = 0
        while index + target.count <= bytes.count {
            if bytes[index] == target[0] && Array(bytes[index..<(index + target.count)]) == target {
                bytes.replaceSubrange(index..<(index + target.count), with: replacement)
                found += 1
                index += target.count
            } else {
                index += 1
            }
        }
        try #require(found > 0, "the pattern to patch was not found in \(memoryStorage)")
        return bytes
    }

    static func words(_ values: [UInt32]) -> [UInt8] {
        values.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
    }

    @Test(arguments: [false, true]) func otherAPIMajor_isRefusedBeforeLoading(noLoad: Bool) async throws {
        let h = PluginHeader.expected
        let header = [PluginHeader.magic, h.layoutVersion, h.abiVersion, h.apiMajor, h.apiMinor]
        let forged = [PluginHeader.magic, h.layoutVersion, h.abiVersion, h.apiMajor + 1, 0]
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("libMemoryStorage.so", try Self.patched(Self.words(header), Self.words(forged), in: sandbox))
        let result = await sandbox.run(["inspect"] + (noLoad ? ["--no-load"] : []) + ["libMemoryStorage.so"])
        expectRun(result, status: 1, stdout: .empty, stderr: .contains(
            "plugboard: error: incompatible plugin \"MemoryStorage\": API version mismatch\n",
            "DETAIL: Host provides PlugboardAPI \(h.apiMajor).\(h.apiMinor), the plugin was built against \(h.apiMajor + 1).0.\n",
            "HINT: Rebuild the plugin against this host's PlugboardAPI: point its PlugboardAPI path dependency at this host's checkout, then run swift build -c release in the plugin's package.",
            "If the plugin's header literal was written or edited by hand, give it plugin ABI \(h.abiVersion) and API \(h.apiMajor).N"))
        // Refused from the file: nothing was copied into the cache, so nothing was dlopen'ed.
        #expect(sandbox.entries(sandbox.cacheDirectory) == [])

        let json = try await sandbox.run(["inspect", "--json", "libMemoryStorage.so"]).json()
        #expect(json["error"]?["code"]?.string == "plugin.api_version_mismatch")
    }

    /// A header claiming a newer API minor than the host's (a literal edited by hand, as
    /// often as a plugin really built against a newer API): the hint names the literal,
    /// which rebuilding alone would keep.
    @Test func newerAPIMinor_isRefused_withAHintAboutTheLiteral() async throws {
        let h = PluginHeader.expected
        let header = [PluginHeader.magic, h.layoutVersion, h.abiVersion, h.apiMajor, h.apiMinor]
        let forged = [PluginHeader.magic, h.layoutVersion, h.abiVersion, h.apiMajor, h.apiMinor + 1]
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("libMemoryStorage.so", try Self.patched(Self.words(header), Self.words(forged), in: sandbox))
        let result = await sandbox.run(["inspect", "--no-load", "libMemoryStorage.so"])
        expectRun(result, status: 1, stdout: .empty, stderr: .contains(
            "the plugin was built against the newer \(h.apiMajor).\(h.apiMinor + 1)",
            "HINT: Upgrade the host, or rebuild the plugin",
            "give it plugin ABI \(h.abiVersion) and API \(h.apiMajor).N with N the minor version the plugin is written for, at most \(h.apiMinor) for this host",
            "swift test makes this same check"))
    }

    /// `libMemoryStorage.so` with the `plugboard_header` section header's size field set
    /// to 2^63: offset plus size overflows, which once made the reader trap (SIGILL).
    static func withHeaderSectionSize2To63(in sandbox: Sandbox) throws -> [UInt8] {
        var bytes = try sandbox.read(memoryStorage)
        func u64(_ at: Int) -> UInt64 { (0..<8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[at + $1]) } }
        let h = PluginHeader.expected
        let words = words([PluginHeader.magic, h.layoutVersion, h.abiVersion, h.apiMajor, h.apiMinor])
        let content = try #require(bytes.indices.first { bytes[$0...].starts(with: words) })
        // The section header whose sh_offset (at +0x18) points at the header's words.
        let table = Int(u64(0x28)), entrySize = Int(bytes[0x3A]) | Int(bytes[0x3B]) << 8
        let count = Int(bytes[0x3C]) | Int(bytes[0x3D]) << 8
        let entry = try #require((0..<count).map { table + $0 * entrySize }.first { u64($0 + 0x18) == UInt64(content) })
        for i in 0..<8 { bytes[entry + 0x20 + i] = i == 7 ? 0x80 : 0 }
        return bytes
    }

    @Test(arguments: [false, true]) func aSectionSizeOf2To63_isRefusedAsDamaged_notACrash(noLoad: Bool) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        try sandbox.write("libMemoryStorage.so", try Self.withHeaderSectionSize2To63(in: sandbox))
        let result = await sandbox.run(["inspect"] + (noLoad ? ["--no-load"] : []) + ["libMemoryStorage.so"])
        expectRun(result, status: 1, stdout: .empty, stderr: .contains(
            "plugboard: error: plugin \"MemoryStorage\": file \"\(sandbox.path("libMemoryStorage.so"))\" is a truncated or damaged ELF file\n",
            "found 9223372036854775808 bytes at offset",
            "HINT: Rebuild the plugin or copy it again"))
        #expect(sandbox.entries(sandbox.cacheDirectory) == [])

        let json = try await sandbox.run(["inspect", "--no-load", "--json", "libMemoryStorage.so"]).json()
        #expect(json["error"]?["code"]?.string == "loader.truncated_elf")
    }

    @Test(arguments: [false, true]) func otherToolchain_isRefusedBeforeLoading(noLoad: Bool) async throws {
        let sandbox = try Sandbox()
        defer { sandbox.remove() }
        let real = try #require(await sandbox.run(["inspect", "--no-load", "--json", Self.memoryStorage]).json()["toolchain"]?.string)
        // Every digit moved on by one: the same length, another compiler version and commit.
        let forged = String(real.map { c in c.isASCII && c.isNumber ? Character(String((Int(String(c))! + 1) % 10)) : c })
        try sandbox.write("libMemoryStorage.so", try Self.patched(Array(real.utf8), Array(forged.utf8), in: sandbox))
        let result = await sandbox.run(["inspect"] + (noLoad ? ["--no-load"] : []) + ["libMemoryStorage.so"])
        expectRun(result, status: 1, stdout: .empty, stderr: .contains(
            "plugboard: error: incompatible plugin \"MemoryStorage\": toolchain mismatch\n",
            "DETAIL: The host was built by \"\(real)\", the plugin by \"\(forged)\".",
            "HINT: Rebuild the plugin with the host's Swift toolchain: swift build -c release in the plugin's package.\n"))
        #expect(sandbox.entries(sandbox.cacheDirectory) == [])

        let json = try await sandbox.run(["inspect", "--json", "libMemoryStorage.so"]).json()
        #expect(json["error"]?["code"]?.string == "plugin.toolchain_mismatch")
    }
}
