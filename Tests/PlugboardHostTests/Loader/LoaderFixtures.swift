#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
@testable import PlugboardHost
import PlugboardTestSupport

/// Real files for loader tests: the plugins the package builds, copies of them patched
/// in place, and shared objects built at test time by the toolchain's own compilers.
enum LoaderFixtures {
    /// The folder with the package's build products (`.build/<triple>/debug`), where the
    /// test bundle itself lives.
    static var productsFolder: String { BuildProducts.folder }

    static func product(_ name: String) -> String { BuildProducts.library(name) }

    /// The repository root, for sources the fixtures compile.
    static var repositoryRoot: String {
        var folder = productsFolder
        while folder != "/" && access("\(folder)/Package.swift", F_OK) != 0 { folder = PluginFile.parentFolder(folder) }
        return folder
    }

    /// The toolchain's `bin` folder, next to the `swiftc` on PATH (or /opt/swift).
    static var toolchainBin: String {
        for dir in (ProcessInfoLite.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        where access("\(dir)/swiftc", X_OK) == 0 {
            return PluginFile.parentFolder(PluginFile.realPath("\(dir)/swiftc") ?? "\(dir)/swiftc")
        }
        return "/opt/swift/usr/bin"
    }

    /// A fresh temporary folder (mode 0755, so the loader's folder check passes).
    static func temporaryFolder(_ label: String = "plugboard-test") -> String {
        BuildProducts.temporaryFolder(label)
    }

    /// Copies `source` to `folder/name` (mode 0644) and returns the new path.
    @discardableResult
    static func copy(_ source: String, to folder: String, as name: String? = nil,
                     patch: ((inout [UInt8]) -> Void)? = nil) throws -> String {
        var bytes = try PluginFile.readAll(source, plugin: "fixture")
        patch?(&bytes)
        let target = "\(folder)/\(name ?? PluginFile.fileName(source))"
        try write(bytes, to: target)
        return target
    }

    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        guard fd >= 0 else { throw FixtureError("could not create \(path)") }
        defer { close(fd) }
        let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw FixtureError("could not write \(path)") }
        fchmod(fd, mode)
    }

    /// The names in `folder`, "." and ".." left out.
    static func entries(_ folder: String) -> [String] {
        guard let dir = opendir(folder) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The file offset of a section's content.
    static func sectionOffset(_ bytes: [UInt8], _ name: String) throws -> Int {
        let image = try ELFImage(bytes: bytes)
        guard let s = image.sections.first(where: { $0.name == name }) else { throw FixtureError("no section \(name)") }
        return s.offset
    }

    /// Runs a program to completion; returns its exit status and output.
    ///
    /// The wait happens on a thread of its own (``OwnThread``): a compiler running for
    /// seconds must not starve other tests' tasks.
    @discardableResult
    static func run(_ program: String, _ args: [String]) async throws -> (status: Int32, output: String) {
        let out = temporaryFolder("plugboard-run") + "/out.txt"
        let command = ([program] + args).map { "'" + $0.replacingAll("'", with: "'\\''") + "'" }.joined(separator: " ")
        let status: Int32 = await OwnThread.run { system("\(command) > '\(out)' 2>&1") }
        let text = String(decoding: (try? PluginFile.readAll(out, plugin: "run")) ?? [], as: UTF8.self)
        guard status == 0 else { throw FixtureError("\(program) failed (\(status)): \(text)") }
        return (status, text)
    }

    /// A C shared object carrying a valid plugin header but no entry point, built with the
    /// toolchain's own clang so it passes the toolchain check.
    static func headerOnlyCLibrary(in folder: String) async throws -> String {
        let source = "\(folder)/header_only.c"
        let header = PluginHeader.expected
        try write(Array("""
            #include <stdint.h>
            __attribute__((used, section("plugboard_header")))
            const uint32_t plugin_header_words[5] = {0x44524250u, 1u, \(header.abiVersion)u, \(header.apiMajor)u, \(header.apiMinor)u};
            int not_an_entry_point(void) { return 7; }
            """.utf8), to: source)
        let output = "\(folder)/libHeaderOnly.so"
        try await run("\(toolchainBin)/clang", ["-shared", "-fPIC", "-o", output, source])
        return output
    }

    /// A Swift plugin compiled together with its own copy of PlugboardAPI's sources, so it
    /// links the API statically: what a wrong package layout produces.
    static func pluginWithItsOwnAPI(in folder: String) async throws -> String {
        let apiSources = "\(repositoryRoot)/Sources/PlugboardAPI/Sources/PlugboardAPI"
        let tlsFolder = "\(repositoryRoot)/Sources/PlugboardAPI/Sources/CPlugboardThreadLocal"
        let files = try await listSwiftFiles(apiSources)
        let header = PluginHeader.expected
        let main = "\(folder)/DupPlugin.swift"
        try write(Array("""
            @section("plugboard_header") @used
            let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, \(header.abiVersion), \(header.apiMajor), \(header.apiMinor))

            @c(plugboard_plugin_entry)
            public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
                PluginEntry.run(op, arg, DupPlugin.self)
            }

            enum DupPlugin: Plugin {
                static let name = "DupPlugin"
                static let version = "0.0.1"
                static func register(into registrar: PluginRegistrar) throws {}
            }
            """.utf8), to: main)
        let object = "\(folder)/ThreadLocal.o"
        try await run("\(toolchainBin)/clang", ["-c", "-fPIC", "-I", "\(tlsFolder)/include", "-o", object, "\(tlsFolder)/ThreadLocal.c"])
        let output = "\(folder)/libDupPlugin.so"
        try await run("\(toolchainBin)/swiftc", ["-emit-library", "-parse-as-library", "-module-name", "DupPlugin",
                                           "-swift-version", "6", "-I", "\(tlsFolder)/include",
                                           "-o", output, main, object] + files)
        return output
    }

    static func listSwiftFiles(_ folder: String) async throws -> [String] {
        let (_, out) = try await run("/usr/bin/find", [folder, "-name", "*.swift"])
        return out.split(separator: "\n").map(String.init).sorted()
    }
}

struct FixtureError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}

/// The process environment without Foundation.
enum ProcessInfoLite {
    static var environment: [String: String] {
        var out: [String: String] = [:]
        var entry = environ
        while let p = entry.pointee {
            let pair = String(cString: p)
            if let eq = pair.firstIndex(of: "=") { out[String(pair[..<eq])] = String(pair[pair.index(after: eq)...]) }
            entry += 1
        }
        return out
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
