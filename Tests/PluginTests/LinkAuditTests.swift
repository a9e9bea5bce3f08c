import PlugboardAPI
import Testing

/// Every plugin built from Plugins/ shares the host's one libPlugboardAPI.so (docs/ARCHITECTURE.md
/// fact 1): it needs the library, and defines none of its symbols itself, which it would
/// if the API had been linked into it statically.
@Suite struct LinkAuditTests {
    static let plugins = ["MemoryStorage", "FileStorage", "RESTStorage", "S3Storage", "QuotaStorage", "MirrorStorage"]

    /// Symbols every shared object defines, which the linker makes.
    static let linkerSymbols: Set<String> = ["_init", "_fini", "__bss_start", "_edata", "_end"]

    /// The names `nm -D --defined-only` lists for `path`.
    static func definedDynamicSymbols(_ path: String) throws -> Set<String> {
        let output = try PluginFixtures.run("nm", ["-D", "--defined-only", path])
        var names = Set<String>()
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count >= 3 { names.insert(String(fields[2])) }
        }
        return names.subtracting(linkerSymbols)
    }

    @Test(arguments: plugins)
    func thePluginNeedsLibPlugboardAPI(plugin: String) throws {
        let output = try PluginFixtures.run("readelf", ["-d", PluginFixtures.product(plugin)])
        let needed = output.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        #expect(needed.contains { $0.contains("[libPlugboardAPI.so]") }, "NEEDED of lib\(plugin).so: \(needed)")
    }

    @Test(arguments: plugins)
    func thePluginDefinesNoneOfLibPlugboardAPIsSymbols(plugin: String) throws {
        let api = try Self.definedDynamicSymbols(PluginFixtures.product("PlugboardAPI"))
        #expect(api.count > 100, "libPlugboardAPI.so defines only \(api.count) dynamic symbols")
        let own = try Self.definedDynamicSymbols(PluginFixtures.product(plugin))
        #expect(own.contains("plugboard_plugin_entry"))
        let shared = own.intersection(api).sorted()
        #expect(shared.isEmpty, "lib\(plugin).so defines \(shared.count) symbols of libPlugboardAPI.so, e.g. \(shared.prefix(5))")
    }
}
