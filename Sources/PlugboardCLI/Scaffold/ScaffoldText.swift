import PlugboardAPI

/// What `new-plugin` and `new-contract` write alike: the header literal, the entry point,
/// the strictness settings, the way a path dependency is named. One copy, so that the two
/// scaffolds cannot drift apart on the parts the host checks.
enum ScaffoldText {
    /// The package identity SwiftPM gives a path dependency: its folder's name.
    static func packageIdentity(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }

    /// A string as a Swift or JSON string literal (paths may hold quotes or backslashes).
    static func quoted(_ s: String) -> String {
        ConfigValue.string(s).description
    }

    static func headerLiteral(_ header: PluginHeader) -> String {
        "(0x\(hexGrouped(PluginHeader.magic)), \(header.layoutVersion), \(header.abiVersion), \(header.apiMajor), \(header.apiMinor))"
    }

    private static func hexGrouped(_ value: UInt32) -> String {
        let hex = String(value, radix: 16, uppercase: true)
        let padded = String(repeating: "0", count: max(0, 8 - hex.count)) + hex
        return padded.prefix(4) + "_" + padded.suffix(4)
    }

    /// The plugin header and the entry point calling `pluginType`, for a plugin's main file.
    static func headerAndEntryPoint(_ header: PluginHeader, pluginType: String) -> String {
        #"""
        // The plugin header (docs/PLUGIN_HEADER.md in the Plugboard checkout): magic, header
        // layout, plugin ABI, PlugboardAPI major and minor version. The host reads it from the
        // file before loading anything. It must be a literal written here (a constant from
        // another module is not allowed in a constant expression). The minor version is the
        // PlugboardAPI the plugin is written for: a newer SDK still builds and loads it, and
        // its tests hold it to that version's rules; raise it once the plugin implements what
        // a newer version added (PLUGIN_GUIDE.md, "Upgrading the SDK").
        @section("plugboard_header") @used
        let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = \#(headerLiteral(header))

        /// The one C symbol the host calls.
        @c(plugboard_plugin_entry)
        public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
            PlugboardAPI.PluginEntry.run(op, arg, \#(pluginType).self)
        }
        """#
    }

    /// The generated tests' check of a loaded plugin's header (`plugin` in scope): that this
    /// host and SDK accept it, as the loader does, not that it equals the newest, so that an
    /// SDK upgrade leaves a plugin written for an older minor version green.
    static func headerCheck(_ plugin: String) -> String {
        #"""
        // The header declares the PlugboardAPI the plugin is written for; the host loads any
                // minor version up to its own (docs/PLUGIN_HEADER.md), as this checks.
                let header = try #require(plugin.header, "lib\#(plugin).so has no plugboard_header section")
                #expect(throws: Never.self) { try header.checkCompatible(plugin: "\#(plugin)") }
        """#
    }

    /// The generated tests' verdict on a conformance report (`report` in scope): failures
    /// fail the test; rules newer than the header's version are warnings saying what to do.
    static let reportCheck = #"""
        #expect(report.allPassed, "\(report)")
                // Rules a newer PlugboardAPI than the header declares introduced: not required,
                // each says what to implement and which version to declare then.
                for warning in report.warnings {
                    Issue.record(Comment(rawValue: "\(warning)"), severity: .warning)
                }
        """#

    /// The end of every Package.swift the scaffolds write: the project's strictness.
    static let strictSettings = """
        for target in package.targets {
            target.swiftSettings = (target.swiftSettings ?? []) + [
                .swiftLanguageMode(.v6),
                .enableUpcomingFeature("ExistentialAny"),
            ]
        }

        """
}
