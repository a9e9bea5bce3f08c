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

    /// What a source file declares `public`: the selectors (`int(_:default:)`) of its
    /// functions and of its initializers (`init(_:plugin:)`), the names of its `let` and
    /// `var` members, and each function's parameters by selector (as a reference names
    /// them: the label, or the parameter's own name where the label is `_`).
    static func publicMembers(in text: String)
        -> (functions: [String], properties: [String], initializers: [String], parameters: [String: [String]]) {
        var functions: [String] = []
        var properties: [String] = []
        var initializers: [String] = []
        var parameters: [String: [String]] = [:]
        var rest = Substring(text)
        while let found = rest.range(of: "public ") {
            rest = rest[found.upperBound...]
            let words = rest.prefix { $0 != "(" && $0 != ":" && $0 != "=" && $0 != "{" && $0 != "\n" }
                .split(separator: " ")
            guard let last = words.last else { continue }
            // Generic parameters are no part of a selector: `register<T>(` is `register(`.
            let name = String(last.prefix { $0 != "<" })
            let kind = words.count >= 2 ? words[words.count - 2] : ""
            if kind == "func" || name == "init" {
                guard let open = rest.firstIndex(of: "(") else { continue }
                var depth = 0
                var close = open
                for index in rest[open...].indices {
                    if "([".contains(rest[index]) { depth += 1 }
                    if ")]".contains(rest[index]) { depth -= 1 }
                    if depth == 0 { close = index; break }
                }
                let list = rest[rest.index(after: open)..<close]
                let selector = name + "(" + labels(list) + ")"
                if name == "init" {
                    initializers.append(selector)
                } else {
                    functions.append(selector)
                    parameters[selector] = parameterNames(list)
                }
            } else if kind == "let" || kind == "var" {
                properties.append(name)
            }
        }
        return (functions, properties, initializers, parameters)
    }

    /// The words before the colon of each parameter: `_ key: String, default value: Int`
    /// -> `[_, key]`, `[default, value]`.
    static func parameterHeads(_ parameters: Substring) -> [[Substring]] {
        var heads: [[Substring]] = []
        var depth = 0
        var current = ""
        for character in parameters + "," {
            if "([<".contains(character) { depth += 1 }
            if ")]>".contains(character) && !current.hasSuffix("-") { depth -= 1 }
            if character == "," && depth == 0 {
                let head = current.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
                let words = head.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { Substring($0) }
                if !words.isEmpty { heads.append(words) }
                current = ""
            } else {
                current.append(character)
            }
        }
        return heads
    }

    /// `_ service: T.Type, name: String? = nil` -> `service`, `name`.
    static func parameterNames(_ parameters: Substring) -> [String] {
        parameterHeads(parameters).map { String($0[0] == "_" && $0.count > 1 ? $0[1] : $0[0]) }
    }

    /// `_ key: String, default value: Int` -> `_:default:`.
    static func labels(_ parameters: Substring) -> String {
        parameterHeads(parameters).map { "\($0[0]):" }.joined()
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
        #expect(members.initializers.contains("init(_:plugin:path:baseDirectory:)"), "\(members.initializers)")
        for initializer in members.initializers {
            Self.expectListed(text, "`PluginConfig\(initializer.dropFirst(4))`", "PluginConfig's \(initializer)")
        }
    }

    /// Every public member of the registrar, and every parameter of its `register`
    /// methods in the parameter table: what an author writes `register(into:)` with.
    @Test func everyPublicMemberOfPluginRegistrar_andEveryParameterOfRegister_isListed() throws {
        let text = try Self.reference
        let members = Self.publicMembers(in: try Self.read("Sources/PlugboardAPI/Sources/PlugboardAPI/Plugin/PluginRegistrar.swift"))
        let registerFactory = "register(_:name:rank:scope:managed:implementation:factory:)"
        #expect(members.functions.contains(registerFactory) && members.functions.contains("resolve(_:name:)"), "\(members.functions)")
        #expect(members.properties.contains("processEnvironment") && members.properties.contains("checkOnly"), "\(members.properties)")
        for function in members.functions {
            Self.expectListed(text, "| `\(function)` |", "PluginRegistrar.\(function)")
        }
        for property in members.properties {
            Self.expectListed(text, "| `\(property)` |", "PluginRegistrar.\(property)")
        }
        let table = try #require(text.range(of: "The parameters of `register`, in order:")).upperBound
        // The table is the paragraph after that line.
        let rows = text[table...].components(separatedBy: "\n\n").dropFirst().first ?? ""
        for function in members.functions where function.hasPrefix("register(") {
            let names = members.parameters[function] ?? []
            #expect(names.first == "service" && names.count >= 5, "\(function): \(names)")
            for name in names where name != "instance" {
                Self.expectListed(String(rows), "| `\(name)` |", "parameter \(name) of \(function)")
            }
        }
    }

    /// Each requirement of ManagedService with its whole signature: that `stop()` is
    /// async and does not throw is what an author gets wrong.
    @Test func everyRequirementOfManagedService_isListedWithItsSignature() throws {
        let text = try Self.reference
        let source = try Self.read("Sources/PlugboardAPI/Sources/PlugboardAPI/Container/ManagedService.swift")
        let start = try #require(source.range(of: "public protocol ManagedService")).lowerBound
        let body = source[start...]
        let requirements = body.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0.hasPrefix("func ") }
        #expect(requirements.contains("func stop() async"), "\(requirements)")
        for requirement in requirements {
            let name = requirement.dropFirst(5).prefix { $0 != "(" }
            Self.expectListed(text, "| `\(name)()` | `\(requirement)", "ManagedService.\(requirement)")
        }
    }

    /// Every public member of ObjectBody, its 1.6 extension included: what a layer that
    /// wraps a body reads.
    @Test func everyPublicMemberOfObjectBody_isListed() throws {
        let text = try Self.reference
        var functions: [String] = [], properties: [String] = [], initializers: [String] = []
        for file in ["ObjectBody.swift", "ObjectBody+Chunks.swift"] {
            let members = Self.publicMembers(in: try Self.read("Sources/PlugboardAPI/Sources/PlugboardAPI/Storage/\(file)"))
            functions += members.functions
            properties += members.properties
            initializers += members.initializers
        }
        #expect(functions.contains("mapChunks(_:)") && initializers.contains("init(length:next:)"), "\(functions) \(initializers)")
        for function in functions {
            Self.expectListed(text, "| `\(function)` |", "ObjectBody.\(function)")
        }
        for property in properties {
            Self.expectListed(text, "| `\(property)` |", "ObjectBody.\(property)")
        }
        for initializer in initializers {
            Self.expectListed(text, "| `ObjectBody\(initializer.dropFirst(4))` |", "ObjectBody.\(initializer)")
        }
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
            "declaredVersion": ("APIVersion?", options.declaredVersion == nil ? "nil" : "?"),
        ]
        let declared = Self.publicMembers(in: try Self.read("Sources/PlugboardTesting/ObjectStorageConformance+Options.swift")).properties
        #expect(Set(declared) == Set(defaults.keys), "an option was added or removed: update the reference and this test")
        for (name, expected) in defaults {
            Self.expectListed(text, "| `\(name)` | `\(expected.type)` | `\(expected.value)` |", "option \(name) differs")
        }
    }
}
