import PlugboardAPI
import PlugboardBytes

/// What the loader learns from a plugin file without running any of its code: the
/// checks of steps 1 and 2, in PostgreSQL's order, most basic mismatch first.
public struct PluginInspection: Sendable, Equatable {
    /// The resolved path of the file.
    public let path: String
    /// Lowercase hex SHA-256 of the file's content.
    public let sha256: String
    public let size: Int
    /// The `plugboard_header` section; nil for a sibling library, which needs none.
    public let header: PluginHeader?
    /// The `.comment` line naming the Swift toolchain that built it.
    public let toolchain: String?
    /// Its `DT_NEEDED` libraries.
    public let neededLibraries: [String]

    /// Inspects a plugin: path policy and permissions, the sha256 pin, the ELF header,
    /// the plugin header, the toolchain.
    public static func plugin(at path: String, name: String, pin: String?) throws(PlugboardError) -> PluginInspection {
        let file = try PluginFile.read(path, plugin: name)
        return try check(file, sha256: try Digest.sha256Hex(file.bytes), name: name, pin: pin, requireHeader: true)
    }

    /// Inspects a library a plugin needs beside it (a contract package): the same checks
    /// but the plugin header and the pin.
    static func sibling(_ file: PluginFile, sha256: String, of plugin: String) throws(PlugboardError) -> PluginInspection {
        try check(file, sha256: sha256, name: plugin, pin: nil, requireHeader: false)
    }

    /// Every check after the read, on bytes already hashed: the file is read and hashed
    /// once by whoever stages it (``PluginLoader/stage(path:name:pin:)``).
    static func check(_ file: PluginFile, sha256 sha: String, name: String, pin: String?,
                      requireHeader: Bool) throws(PlugboardError) -> PluginInspection {
        try checkPin(pin, sha256: sha, name: name, path: file.path)
        let image = try checkELF(file, plugin: name)
        var header: PluginHeader?
        if requireHeader {
            guard let section = image.section(named: PluginHeader.sectionName) else {
                throw PlugboardError(.headerMissing, "incompatible plugin \"\(name)\": missing plugin header",
                    detail: "\"\(file.path)\" is a shared object without a \(PluginHeader.sectionName) section.",
                    hint: "Plugins must declare the header literal (see docs/PLUGIN_HEADER.md); scaffold one with plugboard new-plugin.")
            }
            let h = try PluginHeader(bytes: section, plugin: name)
            try h.checkCompatible(plugin: name)
            header = h
        }
        let toolchain = Toolchain.identify(image.comments)
        if let host = Toolchain.host, toolchain != host {
            let found = toolchain.map { "\"\($0)\"" }
                ?? (image.comments.isEmpty ? "no compiler named in its .comment section"
                    : "no Swift toolchain (its .comment section names: \(image.comments.map { "\"\($0)\"" }.joined(separator: ", ")))")
            throw PlugboardError(.toolchainMismatch, "incompatible plugin \"\(name)\": toolchain mismatch",
                detail: "The host was built by \"\(host)\", the plugin by \(found). Swift has no stable ABI on Linux.",
                hint: "Rebuild the plugin with the host's Swift toolchain: swift build -c release in the plugin's package.")
        }
        return PluginInspection(path: file.path, sha256: sha, size: file.bytes.count, header: header,
                                toolchain: toolchain, neededLibraries: image.neededLibraries)
    }

    /// The sha256 pin of the manifest entry, if any, against the digest of the file's bytes.
    static func checkPin(_ pin: String?, sha256 sha: String, name: String, path: String,
                         manifest: String? = nil) throws(PlugboardError) {
        if let pin, pin.lowercased() != sha {
            throw PlugboardError(.checksumMismatch, "plugin \"\(name)\": file \"\(path)\" does not match its sha256 pin",
                detail: "Expected SHA-256 \(pin.lowercased()), found \(sha).",
                hint: "If the plugin was rebuilt on purpose, set \"sha256\" in \(manifest ?? "the manifest") to \(sha); otherwise find out who changed the file.")
        }
    }

    private static func checkELF(_ file: PluginFile, plugin: String) throws(PlugboardError) -> ELFImage {
        let image: ELFImage
        do {
            image = try ELFImage(bytes: file.bytes)
        } catch {
            switch error {
            case .notELF:
                let looksText = file.bytes.prefix(64).allSatisfy { $0 == 9 || $0 == 10 || $0 == 13 || (0x20...0x7E).contains($0) }
                throw PlugboardError(.notELF, "plugin \"\(plugin)\": file \"\(file.path)\" is not an ELF shared object",
                    detail: "Expected the ELF magic 7f 45 4c 46, found \(hex(file.bytes.prefix(4)))\(looksText && !file.bytes.isEmpty ? " (it looks like a text file)" : file.bytes.isEmpty ? " (the file is empty)" : "").",
                    hint: "Point the plugin's path at a shared object built with swift build.")
            case .truncated(let why):
                throw PlugboardError(.truncatedELF, "plugin \"\(plugin)\": file \"\(file.path)\" is a truncated or damaged ELF file",
                    detail: why,
                    hint: "Rebuild the plugin or copy it again; the file was cut short or damaged on its way here.")
            case .unsupportedClass(let c):
                throw PlugboardError(.wrongArchitecture, "plugin \"\(plugin)\": file \"\(file.path)\" is for another architecture",
                    detail: "Expected a 64-bit ELF file, found \(ELFImage.classNames[c] ?? "ELF class \(c)").",
                    hint: "Build the plugin for this machine (\(ELFImage.machineName(ELFImage.hostMachine))).")
            case .unsupportedEncoding:
                throw PlugboardError(.wrongArchitecture, "plugin \"\(plugin)\": file \"\(file.path)\" is for another architecture",
                    detail: "Expected a little-endian ELF file, found a big-endian one.",
                    hint: "Build the plugin for this machine (\(ELFImage.machineName(ELFImage.hostMachine))).")
            }
        }
        guard image.machine == ELFImage.hostMachine else {
            throw PlugboardError(.wrongArchitecture, "plugin \"\(plugin)\": file \"\(file.path)\" is for another architecture",
                detail: "Expected an ELF file for \(ELFImage.machineName(ELFImage.hostMachine)), found one for \(image.machineName).",
                hint: "Build the plugin on (or for) this machine.")
        }
        guard image.type == 3 else {
            throw PlugboardError(.notSharedObject, "plugin \"\(plugin)\": file \"\(file.path)\" is not a shared object",
                detail: "Expected an ELF shared object, found an ELF \(image.typeName).",
                hint: "Build the plugin as a dynamic library: .library(name: ..., type: .dynamic, ...).")
        }
        return image
    }

    private static func hex(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.isEmpty ? "nothing" : bytes.map { b in String(decoding: [HexDigits.lower(b >> 4), HexDigits.lower(b & 0x0F)], as: UTF8.self) }
            .joined(separator: " ")
    }
}
