#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHost
import PlugboardTestSupport
import Testing

/// Copies of a real plugin whose ELF header or section table holds sizes and offsets
/// that overflow when added (2^63, UInt64.max): refused as damaged before `dlopen`, by
/// the inspection and by the loader, and the host goes on. Then thousands of seeded random
/// mutations of the same tables: the reader returns or throws, never traps.
@Suite struct ELFHostileFieldTests {
    static var memoryStorage: String { LoaderFixtures.product("MemoryStorage") }

    /// Where the fields of the ELF header and of one section header are in the file.
    struct Layout {
        static let shoff = 0x28, shentsize = 0x3A, shnum = 0x3C
        let sectionTable: Int
        let entrySize: Int
        let count: Int

        init(_ bytes: [UInt8]) {
            sectionTable = Int(Self.read(bytes, Self.shoff, 8))
            entrySize = Int(Self.read(bytes, Self.shentsize, 2))
            count = Int(Self.read(bytes, Self.shnum, 2))
        }

        /// The file offset of section `name`'s header.
        func header(of name: String, in bytes: [UInt8]) throws -> Int {
            let index = try #require(try ELFImage(bytes: bytes).sections.firstIndex { $0.name == name })
            return sectionTable + index * entrySize
        }

        static func read(_ b: [UInt8], _ at: Int, _ width: Int) -> UInt64 {
            (0..<width).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64(b[at + $1]) }
        }
    }

    static func write(_ value: UInt64, width: Int = 8, at offset: Int, in bytes: inout [UInt8]) {
        for i in 0..<width { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
    }

    /// One hostile value in one field, and the words the refusal must name.
    struct Patch: CustomTestStringConvertible, Sendable {
        let label: String
        let apply: @Sendable (inout [UInt8]) throws -> Void
        let named: [String]
        var testDescription: String { label }
    }

    static let patches: [Patch] = [
        Patch(label: "plugboard_header size 2^63", apply: { bytes in
            let at = try Layout(bytes).header(of: PluginHeader.sectionName, in: bytes)
            write(1 << 63, at: at + 0x20, in: &bytes)
        }, named: ["section", PluginHeader.sectionName, "9223372036854775808 bytes"]),
        Patch(label: "plugboard_header offset near UInt64.max", apply: { bytes in
            let at = try Layout(bytes).header(of: PluginHeader.sectionName, in: bytes)
            write(UInt64.max - 7, at: at + 0x18, in: &bytes)
        }, named: [PluginHeader.sectionName, "offset 18446744073709551608"]),
        Patch(label: "plugboard_header offset Int.max, size 2", apply: { bytes in
            let at = try Layout(bytes).header(of: PluginHeader.sectionName, in: bytes)
            write(UInt64(Int.max), at: at + 0x18, in: &bytes)
            write(2, at: at + 0x20, in: &bytes)
        }, named: [PluginHeader.sectionName, "offset 9223372036854775807"]),
        Patch(label: "e_shoff near UInt64.max", apply: { bytes in
            write(UInt64.max - 63, at: Layout.shoff, in: &bytes)
        }, named: ["section table", "offset 18446744073709551552"]),
        Patch(label: "e_shoff 2^63", apply: { bytes in
            write(1 << 63, at: Layout.shoff, in: &bytes)
        }, named: ["section table", "offset 9223372036854775808"]),
        Patch(label: "e_shnum * e_shentsize beyond the file", apply: { bytes in
            write(0xFFFF, width: 2, at: Layout.shentsize, in: &bytes)
            write(0xFFFF, width: 2, at: Layout.shnum, in: &bytes)
        }, named: ["section table", "65535 headers of 65535 bytes"]),
    ]

    @Test(arguments: patches) func aHostileField_isRefusedAsDamaged_byInspectionAndLoader(patch: Patch) async throws {
        var bytes = try PluginFile.readAll(Self.memoryStorage, plugin: "fixture")
        let intact = bytes
        try patch.apply(&bytes)
        #expect(bytes != intact)
        let path = LoaderFixtures.temporaryFolder() + "/libHostile.so"
        try LoaderFixtures.write(bytes, to: path)

        let error = #expect(throws: PlugboardError.self) { try PluginInspection.plugin(at: path, name: "Hostile", pin: nil) }
        #expect(error?.code == .truncatedELF)
        #expect(error?.message.contains("truncated or damaged ELF file") == true)
        let detail = try #require(error?.detail)
        for word in patch.named { #expect(detail.contains(word), "\(detail)") }
        #expect(detail.contains("Expected"))

        let container = Container(environment: .testing)
        let loader = try PluginLoader(container: container,
                                      configuration: .init(cacheDirectory: LoaderFixtures.temporaryFolder("plugboard-cache")))
        let record = await loader.load(.init(name: "Hostile", path: path, sha256: nil, config: PluginConfig([:], plugin: "Hostile")))
        #expect(record.state == .rejected)
        #expect(record.error?.code == .truncatedELF)
        // The host goes on: the intact plugin still loads beside it.
        let after = await loader.load(.init(name: "After", path: Self.memoryStorage, sha256: nil,
                                            config: PluginConfig([:], plugin: "After")))
        #expect(after.state == .active, "\(String(describing: after.error))")
    }

    /// The byte ranges of the ELF header and the whole section table of `bytes`.
    static func tableBytes(_ bytes: [UInt8]) -> [Int] {
        let layout = Layout(bytes)
        return Array(0..<64) + Array(layout.sectionTable..<(layout.sectionTable + layout.count * layout.entrySize))
    }

    /// Values that break arithmetic when they land in an offset, size or count.
    static let interesting: [UInt64] = [0, 1, 0x7F, 0x80, 0xFF, 0xFFFF, 0x8000_0000, 0xFFFF_FFFF,
                                        1 << 63, UInt64(Int.max), UInt64.max, UInt64.max - 7]

    @Test func seededMutationsOfHeaderAndSectionTable_returnOrThrow_neverTrap() throws {
        var bytes = try PluginFile.readAll(Self.memoryStorage, plugin: "fuzz")
        let original = bytes
        let targets = Self.tableBytes(bytes)
        var rng = SplitMix64(state: 0xE1F_5EED)
        var outcomes = (parsed: 0, refused: 0)
        for _ in 0..<3_000 {
            var touched: [Int] = []
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let at = targets.randomElement(using: &rng) ?? 0
                if Bool.random(using: &rng) {
                    touched.append(at)
                    bytes[at] = UInt8.random(in: 0...255, using: &rng)
                } else {
                    // A whole little-endian field: the value lands aligned with one.
                    let start = min(at & ~7, bytes.count - 8)
                    touched += Array(start..<(start + 8))
                    Self.write(Self.interesting.randomElement(using: &rng) ?? 0, at: start, in: &bytes)
                }
            }
            do {
                let image = try ELFImage(bytes: bytes)
                // Everything the loader reads after the tables.
                if let header = image.section(named: PluginHeader.sectionName) {
                    _ = try? PluginHeader(bytes: header, plugin: "fuzz")
                }
                _ = Toolchain.identify(image.comments)
                _ = image.neededLibraries
                outcomes.parsed += 1
            } catch {
                outcomes.refused += 1
            }
            // Undo in place: copying megabytes per case would dominate the run.
            for at in touched { bytes[at] = original[at] }
        }
        #expect(bytes == original)
        // Both paths were exercised, so the mutations neither always nor never broke the file.
        #expect(outcomes.parsed > 100 && outcomes.refused > 100, "\(outcomes)")
        // No time bound: timings are a benchmark's to measure, and a loaded CI machine would
        // fail one that holds on a quiet machine.
    }
}
