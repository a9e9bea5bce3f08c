import Foundation
import PlugboardAPI
import PlugboardTesting
import Testing

/// docs/plugin-reference.md keeps up with the code: it is written by hand, so these tests
/// read the sources and fail when a name an author touches is missing from the page or
/// differs there.
@Suite("docs/plugin-reference.md")
struct PluginReferenceTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func read(_ relative: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(relative), encoding: .utf8)
    }

    static var reference: String { get throws { try read("docs/plugin-reference.md") } }

    /// `public static let swiftName: Self = "text.code"` lines of a source file.
    static func codes(in relative: String) throws -> [(swift: String, code: String)] {
        try read(relative).split(separator: "\n").compactMap { line in
            guard let start = line.range(of: "public static let "), let colon = line.range(of: ": Self = \"") else { return nil }
            let swift = line[start.upperBound..<colon.lowerBound]
            let code = line[colon.upperBound...].prefix { $0 != "\"" }
            return (String(swift), String(code))
        }
    }

    /// The selectors (`int(_:default:)`) of the `public ... func` declarations in a source
    /// file, and the names of its `public let` and `public var` members.
    static func publicMembers(in text: String) -> (functions: [String], properties: [String]) {
        var functions: [String] = []
        var properties: [String] = []
        var rest = Substring(text)
        while let found = rest.range(of: "public ") {
            rest = rest[found.upperBound...]
            let words = rest.prefix { $0 != "(" && $0 != ":" && $0 != "=" && $0 != "{" && $0 != "\n" }
                .split(separator: " ")
            guard let kind = words.dropLast().last ?? words.first, words.count >= 2 else { continue }
            let name = String(words.last!)
            if kind == "func" {
                guard let open = rest.firstIndex(of: "(") else { continue }
                var depth = 0
                var close = open
                for index in rest[open...].indices {
                    if "([".contains(rest[index]) { depth += 1 }
                    if ")]".contains(rest[index]) { depth -= 1 }
                    if depth == 0 { close = index; break }
                }
                functions.append(name + "(" + labels(rest[rest.index(after: open)..<close]) + ")")
            } else if kind == "let" || kind == "var" {
                properties.append(name)
            }
        }
        return (functions, properties)
    }

    /// `_ key: String, default value: Int` -> `_:default:`.
    static func labels(_ parameters: Substring) -> String {
        var out = ""
        var depth = 0
        var current = ""
        for character in parameters + "," {
            if "([<".contains(character) { depth += 1 }
            if ")]>".contains(character) && !current.hasSuffix("-") { depth -= 1 }
            if character == "," && depth == 0 {
                let head = current.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
                if let label = head.split(whereSeparator: { $0 == " " || $0 == "\n" }).first { out += "\(label):" }
                current = ""
            } else {
                current.append(character)
            }
        }
        return out
    }

    /// Fails naming what is missing, without printing the whole page.
    static func expectListed(_ text: String, _ row: String, _ what: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        let listed = text.contains(row)
        #expect(listed, "\(what): no \(row) in docs/plugin-reference.md", sourceLocation: sourceLocation)
    }

    @Test func everyCodeOfTheAPIAndTheLoader_isListedWithItsSwiftName() throws {
        let text = try Self.reference
        let api = try Self.codes(in: "Sources/PlugboardAPI/Sources/PlugboardAPI/Errors/PlugboardError+Codes.swift")
        let loader = try Self.codes(in: "Sources/PlugboardHost/Loader/PlugboardError+Loader.swift")
        #expect(api.count >= 27 && loader.count >= 20, "the parser found \(api.count) and \(loader.count) codes")
        for (swift, code) in api + loader {
            Self.expectListed(text, "| `.\(swift)` | `\(code)` |", "error code .\(swift)")
        }
        // And the code behind the name, at run time, for the API's own.
        #expect(PlugboardError.Code.configInvalid.rawValue == "plugin.config_invalid")
        Self.expectListed(text, "| `.configInvalid` | `\(PlugboardError.Code.configInvalid)` |", "the configInvalid row")
    }

    /// The areas a plugin may not remap are exactly those of the codes docs/ERRORS.md
    /// lists (and `s3`, kept for the S3 endpoint); the allowed statuses are the ones both
    /// pages name.
    @Test func theErrorMappingsRules_agreeWithERRORSAndThisPage() throws {
        let errors = try Self.read("docs/ERRORS.md")
        // The area of each code a table row of the page starts with.
        let areas = Set(errors.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            let area = line.dropFirst(3).prefix { $0 != "." && $0 != "`" }
            return line.dropFirst(3 + area.count).hasPrefix(".") ? String(area) : nil
        })
        #expect(areas.count >= 12, "\(areas.sorted())")
        #expect(PlugboardError.Mapping.reservedAreas == areas.union(["s3"]), "\(areas.sorted())")
        let statuses = PlugboardError.Mapping.allowedStatuses.map(String.init)
        let listed = statuses.dropLast().joined(separator: ", ") + " and " + statuses.last!
        #expect(errors.replacingOccurrences(of: "\n  ", with: " ").contains(listed), "ERRORS.md: \(listed)")
        Self.expectListed(try Self.reference, "`[\(statuses.joined(separator: ", "))]`", "allowedStatuses")
    }

    @Test func everyConfigValueCase_isListedWithItsPayload() throws {
        let text = try Self.reference
        let source = try Self.read("Sources/PlugboardAPI/Sources/PlugboardAPI/Plugin/ConfigValue.swift")
        let body = source[source.range(of: "public enum ConfigValue")!.upperBound...].prefix { $0 != "/" }
        let cases = body.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("case ") }.map { String($0.dropFirst(5)) }
        #expect(cases.count == 7, "\(cases)")
        for item in cases {
            Self.expectListed(text, "| `.\(item)` |", "ConfigValue case .\(item)")
        }
        // What the table says of integers holds for the real value.
        let value = ConfigValue.integer(9000)
        #expect(value.kindName == "integer" && value.description == "9000")
    }

    @Test func everyPublicMemberOfPluginConfig_isListed() throws {
        let text = try Self.reference
        let members = Self.publicMembers(in: try Self.read("Sources/PlugboardAPI/Sources/PlugboardAPI/Plugin/PluginConfig.swift"))
        #expect(members.functions.contains("int(_:default:)") && members.functions.count >= 9, "\(members.functions)")
        for function in members.functions {
            Self.expectListed(text, "| `\(function)` |", "PluginConfig.\(function)")
        }
        for property in members.properties {
            Self.expectListed(text, "| `\(property)` |", "PluginConfig.\(property)")
        }
        Self.expectListed(text, "`PluginConfig(_:plugin:path:baseDirectory:)`", "PluginConfig's initializer")
    }

    @Test func everyPublicMemberOfPluginUnderTestAndLoadedPlugin_isListed() throws {
        let text = try Self.reference
        let members = Self.publicMembers(in: try Self.read("Sources/PlugboardTesting/PluginUnderTest.swift"))
        #expect(members.functions.contains("load(products:configs:environment:baseDirectory:)"), "\(members.functions)")
        for function in members.functions {
            // LoadedPlugin's methods are listed by name with their labels, `storage()` too.
            Self.expectListed(text, "| `\(function)` |", "\(function)")
        }
        for property in members.properties {
            Self.expectListed(text, "| `\(property)` |", "\(property)")
        }
        #expect(members.properties.contains("container"))
    }

    /// Every option is listed with its type and the default `Options()` really has.
    @Test func everyConformanceOption_isListedWithItsDefault() throws {
        let text = try Self.reference
        let options = ObjectStorageConformance.Options()
        let defaults: [String: (type: String, value: String)] = [
            "includeLargeObjects": ("Bool", "\(options.includeLargeObjects)"),
            "largeObjectByteCount": ("Int", "\(options.largeObjectByteCount)"),
            "concurrentTasks": ("Int", "\(options.concurrentTasks)"),
            "ruleTimeout": ("Duration", ".seconds(\(options.ruleTimeout.components.seconds))"),
            "clockSkewTolerance": ("Duration", ".seconds(\(options.clockSkewTolerance.components.seconds))"),
            "keyPrefix": ("String", "\"\(options.keyPrefix)\""),
            "only": ("Set<String>?", options.only == nil ? "nil" : "?"),
            "skip": ("[String: String]", options.skip.isEmpty ? "[:]" : "?"),
        ]
        let declared = Self.publicMembers(in: try Self.read("Sources/PlugboardTesting/ObjectStorageConformance+Options.swift")).properties
        #expect(Set(declared) == Set(defaults.keys), "an option was added or removed: update the reference and this test")
        for (name, expected) in defaults {
            Self.expectListed(text, "| `\(name)` | `\(expected.type)` | `\(expected.value)` |", "option \(name) differs")
        }
    }
}
