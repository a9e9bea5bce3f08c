import PlugboardAPI
import PlugboardHost
import PlugboardJSON

/// `plugboard inspect FILE`: what a plugin file declares.
enum InspectCommand {
    static func run(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        do throws(PlugboardError) {
            return try await inspect(ctx)
        } catch where error.code == .pluginFileNotFound {
            // The file came from the command line, not from a manifest: the loader's hint
            // (check plugins.json) would send the user to the wrong place.
            let file = ctx.parsed.arguments[0]
            throw PlugboardError(.pluginFileNotFound, "no file \"\(file)\" to inspect",
                detail: "The file does not exist (relative paths are relative to the working folder).",
                hint: "Give the path of a plugin's .so file, for example .build/release/libFileStorage.so after swift build -c release.")
        }
    }

    private static func inspect(_ ctx: CommandContext) async throws(PlugboardError) -> Int32 {
        let file = ctx.parsed.arguments[0]
        let name = PluginNames.fromFile(file)
        let inspection: PluginInspection
        var call: PluginCall?
        if ctx.parsed.flag("no-load") {
            inspection = try PluginInspection.plugin(at: file, name: name, pin: nil)
        } else {
            let cache: String
            if let configured = ctx.cacheDirectory {
                cache = configured
            } else {
                cache = try PluginHost.defaultCacheDirectory(environment: ctx.processEnvironment)
            }
            let loader = try PluginLoader(container: Container(), configuration: .init(cacheDirectory: cache, logger: ctx.logger))
            let described = try loader.describe(path: file, name: name)
            inspection = described.0
            call = described.1
        }
        let header = inspection.header
        if ctx.json {
            var members: [(String, JSONOutput)] = [
                ("file", .string(inspection.path)), ("sha256", .string(inspection.sha256)), ("size", .int(Int64(inspection.size))),
                ("abiVersion", header.map { .int(Int64($0.abiVersion)) } ?? .null),
                ("apiVersion", header.map { .string("\($0.apiMajor).\($0.apiMinor)") } ?? .null),
                ("toolchain", .string(inspection.toolchain)),
                ("needed", .array(inspection.neededLibraries.map { .string($0) })),
            ]
            if let call {
                members += [("name", .string(call.name)), ("version", .string(call.version)),
                            ("services", .array(call.services.map { .string($0) }))]
            }
            ctx.out(.object(members))
        } else {
            var lines = "file:        \(inspection.path)\nsha256:      \(inspection.sha256)\nsize:        \(inspection.size) bytes\n"
            if let h = header {
                lines += "ABI version: \(h.abiVersion)\nAPI version: \(h.apiMajor).\(h.apiMinor)\n"
            }
            lines += "toolchain:   \(inspection.toolchain ?? "-")\nneeds:       \(inspection.neededLibraries.joined(separator: ", "))\n"
            if let call {
                lines += "name:        \(call.name ?? "-")\nversion:     \(call.version ?? "-")\n"
                lines += "services:    \(call.services.isEmpty ? "-" : call.services.joined(separator: ", "))\n"
            }
            ctx.out(lines)
        }
        return 0
    }
}

/// A plugin's display name from its file name: `libS3Storage.so` -> `S3Storage`.
enum PluginNames {
    static func fromFile(_ path: String) -> String {
        var name = path.split(separator: "/").last.map(String.init) ?? path
        if name.hasPrefix("lib") { name.removeFirst(3) }
        if name.hasSuffix(".so") { name.removeLast(3) }
        return name
    }
}
