#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHost
import Testing

/// A plugin that needs a shared library of its own beside it (as a contract package is):
/// loaded from the cache, the library is found; a second plugin bringing another build of
/// a library the process already has under that name binds to the one already loaded.
@Suite(.serialized) struct LoaderSiblingTests {
    /// The service the fixture plugins register: what their sibling library answers.
    final class Answer: Sendable {
        let value: Int32
        init(_ value: Int32) { self.value = value }
    }

    /// Builds, in a fresh folder, `libGreeting.so` (C, answering `value`) and
    /// `lib<plugin>.so` (Swift) that links it and registers its answer under `name`.
    static func build(plugin: String, answer value: Int32, library: String = "Greeting") async throws -> String {
        let folder = LoaderFixtures.temporaryFolder("plugboard-sibling")
        let bin = LoaderFixtures.toolchainBin
        try LoaderFixtures.write(Array("int greeting_value(void) { return \(value); }\n".utf8), to: "\(folder)/greeting.c")
        try await LoaderFixtures.run("\(bin)/clang", ["-shared", "-fPIC", "-o", "\(folder)/lib\(library).so", "\(folder)/greeting.c"])
        let header = PluginHeader.expected
        try LoaderFixtures.write(Array("""
            import PlugboardAPI

            @section("plugboard_header") @used
            let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, \(header.abiVersion), \(header.apiMajor), \(header.apiMinor))

            @_silgen_name("greeting_value") func greetingValue() -> Int32

            @c(plugboard_plugin_entry)
            public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
                PluginEntry.run(op, arg, \(plugin).self)
            }

            enum \(plugin): Plugin {
                static let name = "\(plugin)"
                static let version = "1.0.0"
                static func register(into registrar: PluginRegistrar) throws {
                    let answer = greetingValue()
                    try registrar.register(Int32.self, name: "\(plugin)", instance: answer)
                }
            }
            """.utf8), to: "\(folder)/\(plugin).swift")
        let products = LoaderFixtures.productsFolder
        try await LoaderFixtures.run("\(bin)/swiftc", [
            "-emit-library", "-parse-as-library", "-module-name", plugin, "-swift-version", "6",
            "-I", "\(products)/Modules", "-L", products, "-lPlugboardAPI",
            "-L", folder, "-l\(library)", "-Xlinker", "-rpath", "-Xlinker", "$ORIGIN",
            "-o", "\(folder)/lib\(plugin).so", "\(folder)/\(plugin).swift"])
        return folder
    }

    @Test func aSiblingLibrary_isFoundFromTheCache_andAnotherBuildOfItIsNeverLoadedTwice() async throws {
        let first = try await Self.build(plugin: "SiblingOne", answer: 41)
        let second = try await Self.build(plugin: "SiblingTwo", answer: 99)
        let cache = LoaderFixtures.temporaryFolder("plugboard-cache")
        let container = Container(environment: .testing)
        let loader = try PluginLoader(container: container, configuration: .init(cacheDirectory: cache))

        let one = await loader.load(.init(name: "SiblingOne", path: "\(first)/libSiblingOne.so"))
        #expect(one.state == .active, "\(String(describing: one.error))")
        #expect(try container.resolve(Int32.self, name: "SiblingOne") == 41)
        // Loaded from the cache, through a folder of links named as the originals were.
        let maps = String(decoding: try PluginFile.readAll("/proc/self/maps", plugin: "maps"), as: UTF8.self)
        let greetingImages = Set(maps.split(separator: "\n").compactMap { line -> String? in
            guard let slash = line.firstIndex(of: "/"), line.hasPrefix(cache) || line.contains(cache) else { return nil }
            return String(line[slash...])
        })
        #expect(!greetingImages.isEmpty, "nothing was mapped from the cache")
        #expect(access("\(cache)/\(one.sha256 ?? "").d/libGreeting.so", F_OK) == 0)

        // The second plugin's folder has its own libGreeting.so (answering 99); the process
        // already has one under that name, so the plugin binds to it.
        let two = await loader.load(.init(name: "SiblingTwo", path: "\(second)/libSiblingTwo.so"))
        #expect(two.state == .active, "\(String(describing: two.error))")
        #expect(try container.resolve(Int32.self, name: "SiblingTwo") == 41)
    }

    @Test func aSiblingThatFailsTheChecks_rejectsThePlugin_beforeDlopen() async throws {
        let folder = try await Self.build(plugin: "SiblingBad", answer: 7, library: "GreetingBad")
        chmod("\(folder)/libGreetingBad.so", 0o666)
        let loader = try PluginLoader(container: Container(),
                                      configuration: .init(cacheDirectory: LoaderFixtures.temporaryFolder("plugboard-cache")))
        let record = await loader.load(.init(name: "SiblingBad", path: "\(folder)/libSiblingBad.so"))
        #expect(record.state == .rejected)
        #expect(record.error?.code == .insecurePermissions)
        #expect(record.error?.message.contains("libGreetingBad.so") == true)
        #expect(!DynamicLibrary.isLoaded("libGreetingBad.so"))
    }
}
