import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// Malformed manifests: each refused with its code, at its line:column, naming the JSON
/// path or what is wrong.
@Suite struct ManifestValidationTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let situation: String
        let text: String
        let code: PlugboardError.Code
        let location: String
        let contains: String
        var testDescription: String { situation }
    }

    /// A manifest whose plugins are written one per line from line 4, each indented by
    /// four spaces: a character at position j of a plugin's text is at column 4 + j.
    static func plugins(_ lines: String...) -> String {
        "{\n  \"schemaVersion\": 1,\n  \"plugins\": [\n"
            + lines.map { "    " + $0 }.joined(separator: ",\n") + "\n  ]\n}\n"
    }

    static let cases: [Case] = [
        Case(situation: "top level is an array", text: "[]",
             code: .manifestWrongType, location: "1:1", contains: "the top level: expected an object, found an array"),
        Case(situation: "schemaVersion missing", text: #"{"plugins": []}"#,
             code: .manifestMissingKey, location: "1:1", contains: #"missing key "schemaVersion" in the top level"#),
        Case(situation: "schemaVersion 2", text: #"{"schemaVersion": 2, "plugins": []}"#,
             code: .manifestUnsupportedVersion, location: "1:19", contains: "unsupported schemaVersion 2"),
        Case(situation: "schemaVersion a string", text: #"{"schemaVersion": "1", "plugins": []}"#,
             code: .manifestWrongType, location: "1:19", contains: "schemaVersion: expected an integer, found a string"),
        Case(situation: "plugins missing", text: #"{"schemaVersion": 1}"#,
             code: .manifestMissingKey, location: "1:1", contains: #"missing key "plugins""#),
        Case(situation: "top-level key misspelled", text: #"{"schemaVersion": 1, "plugin": []}"#,
             code: .manifestUnknownKey, location: "1:22", contains: #"unknown key "plugin" in the top level"#),
        Case(situation: "$schema not a string", text: #"{"$schema": 1, "schemaVersion": 1, "plugins": []}"#,
             code: .manifestWrongType, location: "1:13", contains: "$schema: expected a string, found an integer"),
        Case(situation: "plugins an object", text: #"{"schemaVersion": 1, "plugins": {}}"#,
             code: .manifestWrongType, location: "1:33", contains: "plugins: expected an array, found an object"),
        Case(situation: "default environment misspelled", text: #"{"schemaVersion": 1, "environment": "prod", "plugins": []}"#,
             code: .manifestInvalidValue, location: "1:37", contains: #"environment: "prod" is not an environment"#),
        Case(situation: "plugin a string", text: plugins(#""a""#),
             code: .manifestWrongType, location: "4:5", contains: "plugins[0]: expected an object, found a string"),
        Case(situation: "plugin name missing", text: plugins(#"{"product": "A"}"#),
             code: .manifestMissingKey, location: "4:5", contains: #"missing key "name" in plugins[0]"#),
        Case(situation: "plugin name empty", text: plugins(#"{"name": "", "product": "A"}"#),
             code: .manifestInvalidValue, location: "4:14", contains: "plugins[0].name: plugin name is empty"),
        Case(situation: "plugin name a number", text: plugins(#"{"name": 7, "product": "A"}"#),
             code: .manifestWrongType, location: "4:14", contains: "plugins[0].name: expected a string, found an integer"),
        Case(situation: "plugin name with a control character", text: plugins(#"{"name": "a\u0001", "product": "A"}"#),
             code: .manifestInvalidValue, location: "4:14", contains: "control character"),
        Case(situation: "neither path nor product", text: plugins(#"{"name": "a"}"#),
             code: .manifestMissingKey, location: "4:5", contains: #"missing key "path" or "product" in plugins[0]"#),
        Case(situation: "both path and product", text: plugins(#"{"name": "a", "path": "x.so", "product": "A"}"#),
             code: .manifestConflictingKeys, location: "4:35", contains: #"plugins[0] has both "path" and "product""#),
        Case(situation: "plugin key misspelled in the second plugin",
             text: plugins(#"{"name": "a", "product": "A"}"#, #"{"name": "b", "product": "B", "enviroments": ["testing"]}"#),
             code: .manifestUnknownKey, location: "5:35", contains: #"unknown key "enviroments" in plugins[1]"#),
        Case(situation: "rank a string", text: plugins(#"{"name": "a", "product": "A", "rank": "high"}"#),
             code: .manifestWrongType, location: "4:43", contains: "plugins[0].rank: expected an integer, found a string"),
        Case(situation: "rank with a fraction", text: plugins(#"{"name": "a", "product": "A", "rank": 1.5}"#),
             code: .manifestInvalidValue, location: "4:43", contains: "plugins[0].rank: expected an integer"),
        Case(situation: "enabled a string", text: plugins(#"{"name": "a", "product": "A", "enabled": "yes"}"#),
             code: .manifestWrongType, location: "4:46", contains: "plugins[0].enabled: expected true or false, found a string"),
        Case(situation: "environment name misspelled",
             text: plugins(#"{"name": "a", "product": "A", "environments": ["testing", "prod"]}"#),
             code: .manifestInvalidValue, location: "4:63", contains: #"plugins[0].environments[1]: "prod" is not an environment"#),
        Case(situation: "environments empty", text: plugins(#"{"name": "a", "product": "A", "environments": []}"#),
             code: .manifestInvalidValue, location: "4:51", contains: "no environments listed"),
        Case(situation: "environments a string", text: plugins(#"{"name": "a", "product": "A", "environments": "testing"}"#),
             code: .manifestWrongType, location: "4:51", contains: "plugins[0].environments: expected an array"),
        Case(situation: "environment listed twice",
             text: plugins(#"{"name": "a", "product": "A", "environments": ["testing", "testing"]}"#),
             code: .manifestInvalidValue, location: "4:63", contains: "listed twice"),
        Case(situation: "sha256 too short", text: plugins(#"{"name": "a", "product": "A", "sha256": "abc"}"#),
             code: .manifestInvalidValue, location: "4:45", contains: "plugins[0].sha256: sha256 is not a SHA-256 digest"),
        Case(situation: "sha256 not hex",
             text: plugins(#"{"name": "a", "product": "A", "sha256": ""# + String(repeating: "g", count: 64) + #""}"#),
             code: .manifestInvalidValue, location: "4:45", contains: "sha256 is not a SHA-256 digest"),
        Case(situation: "product is a path", text: plugins(#"{"name": "a", "product": "lib/A"}"#),
             code: .manifestInvalidValue, location: "4:30", contains: #"product name "lib/A" is a path"#),
        Case(situation: "product is a file name", text: plugins(#"{"name": "a", "product": "libA.so"}"#),
             code: .manifestInvalidValue, location: "4:30", contains: #"product name "libA.so" is a file name"#),
        Case(situation: "path empty", text: plugins(#"{"name": "a", "path": ""}"#),
             code: .manifestInvalidValue, location: "4:27", contains: "plugins[0].path: path is empty"),
        Case(situation: "duplicate plugin names",
             text: plugins(#"{"name": "a", "product": "A"}"#, #"{"name": "a", "product": "B"}"#),
             code: .manifestDuplicatePlugin, location: "5:14", contains: #"duplicate plugin name "a""#),
        Case(situation: "requirement not in the manifest",
             text: plugins(#"{"name": "a", "product": "A", "requires": ["b"]}"#),
             code: .manifestUnknownRequirement, location: "4:48", contains: #"plugin "a" requires "b", which is not in the manifest"#),
        Case(situation: "requirement a number", text: plugins(#"{"name": "a", "product": "A", "requires": [1]}"#),
             code: .manifestWrongType, location: "4:48", contains: "plugins[0].requires[0]: expected a string, found an integer"),
        Case(situation: "requirement listed twice",
             text: plugins(#"{"name": "a", "product": "A", "requires": ["b", "b"]}"#, #"{"name": "b", "product": "B"}"#),
             code: .manifestInvalidValue, location: "4:53", contains: #"plugin "b" is required twice"#),
        Case(situation: "two plugins require each other",
             text: plugins(#"{"name": "a", "product": "A", "requires": ["b"]}"#, #"{"name": "b", "product": "B", "requires": ["a"]}"#),
             code: .manifestRequirementCycle, location: "4:48", contains: "requirement cycle: a -> b -> a"),
        Case(situation: "plugin requires itself", text: plugins(#"{"name": "a", "product": "A", "requires": ["a"]}"#),
             code: .manifestRequirementCycle, location: "4:48", contains: "requirement cycle: a -> a"),
        Case(situation: "config an array", text: plugins(#"{"name": "a", "product": "A", "config": []}"#),
             code: .manifestWrongType, location: "4:45", contains: "plugins[0].config: expected an object, found an array"),
        Case(situation: "unclosed variable reference", text: plugins(#"{"name": "a", "product": "A", "config": {"root": "${ROOT"}}"#),
             code: .manifestInvalidValue, location: "4:54", contains: "plugins[0].config.root: malformed variable reference"),
        Case(situation: "secret wrapper holding a number", text: plugins(#"{"name": "a", "product": "A", "config": {"key": {"secret": 42}}}"#),
             code: .manifestWrongType, location: "4:64", contains: "plugins[0].config.key.secret: expected a string, found an integer"),
        Case(situation: "hotSwap not an object", text: #"{"schemaVersion": 1, "plugins": [], "hotSwap": true}"#,
             code: .manifestWrongType, location: "1:48", contains: "hotSwap: expected an object, found a boolean"),
        Case(situation: "hotSwap negative drain timeout", text: #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"drainTimeoutSeconds": -1}}"#,
             code: .manifestInvalidValue, location: "1:72", contains: "hotSwap.drainTimeoutSeconds: expected a non-negative number, found -1"),
        Case(situation: "hotSwap fractional debounce", text: #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"debounceMilliseconds": 2.5}}"#,
             code: .manifestInvalidValue, location: "1:73", contains: "hotSwap.debounceMilliseconds: expected an integer"),
        Case(situation: "hotSwap key misspelled", text: #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"enable": true}}"#,
             code: .manifestUnknownKey, location: "1:49", contains: #"unknown key "enable" in hotSwap"#),
        Case(situation: "hotSwap zero preflight timeout", text: #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"preflightTimeoutSeconds": 0}}"#,
             code: .manifestInvalidValue, location: "1:76", contains: "expected more than 0 seconds"),
        Case(situation: "hotSwap enabled a string", text: #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"enabled": "true"}}"#,
             code: .manifestWrongType, location: "1:60", contains: "hotSwap.enabled: expected true or false, found a string"),
        Case(situation: "hotSwap huge retained images", text: #"{"schemaVersion": 1, "plugins": [], "hotSwap": {"maxRetainedImages": 5000}}"#,
             code: .manifestInvalidValue, location: "1:70", contains: "expected at most 1024 images, found 5000"),
        Case(situation: "trailing comma in the plugins array", text: plugins(#"{"name": "a", "product": "A"},"#),
             code: .manifestSyntax, location: "5:3", contains: "expected a value after ',' in array, found ']'"),
        Case(situation: "duplicate key in a plugin", text: plugins(#"{"name": "a", "name": "b", "product": "A"}"#),
             code: .manifestDuplicateKey, location: "4:19", contains: #"duplicate key "name" in object plugins[0]"#),
    ]

    @Test(arguments: cases)
    func malformedManifest_isRefusedWithCodeLocationAndPath(_ c: Case) {
        let error = ManifestTestSupport.manifestError(c.text)
        #expect(error?.code == c.code, "\(error?.description ?? "no error")")
        #expect(ManifestTestSupport.location(of: error, source: "plugins.json") == c.location, "\(error?.message ?? "no error")")
        #expect(error?.message.contains(c.contains) == true, "\(error?.message ?? "no error")")
        #expect(error?.code.area == "manifest")
    }

    @Test func wrongType_message_hasFileLineColumnPathExpectedAndFound() {
        let error = ManifestTestSupport.manifestError(Self.plugins(#"{"name": "a", "product": "A", "rank": "high"}"#))
        #expect(error?.message == "plugins.json:4:43: plugins[0].rank: expected an integer, found a string")
        #expect(error?.hint == "Write the number without quotes.")
    }

    @Test func unknownKey_listsKnownKeys_andSuggestsTheClosest() {
        let error = ManifestTestSupport.manifestError(
            Self.plugins(#"{"name": "a", "product": "A"}"#, #"{"name": "b", "product": "B", "enviroments": ["testing"]}"#))
        #expect(error?.message == #"plugins.json:5:35: unknown key "enviroments" in plugins[1]"#)
        #expect(error?.detail?.hasPrefix("Known keys: name, path, product, sha256") == true)
        #expect(error?.hint == #"Did you mean "environments"?"#)
        let top = ManifestTestSupport.manifestError(#"{"schemaVersion": 1, "plugin": []}"#)
        #expect(top?.hint == #"Did you mean "plugins"?"#)
        let far = ManifestTestSupport.manifestError(#"{"schemaVersion": 1, "plugins": [], "zzzz": 1}"#)
        #expect(far?.hint?.contains("Remove the key") == true)
    }

    @Test func environmentMisspelling_suggestsTheEnvironment() {
        for (written, meant) in [("prod", "production"), ("dev", "development"), ("stage", "staging"), ("test", "testing"),
                                 ("Production", "production")] {
            let error = ManifestTestSupport.manifestError(
                #"{"schemaVersion": 1, "environment": ""# + written + #"", "plugins": []}"#)
            #expect(error?.hint == "Did you mean \"\(meant)\"?", "\(written)")
            #expect(error?.detail?.contains("\"testing\", \"development\", \"staging\", \"production\"") == true)
        }
    }

    @Test func unsupportedSchemaVersion_saysWhichVersionsAreSupported() {
        let error = ManifestTestSupport.manifestError(#"{"schemaVersion": 2, "plugins": [], "newKey": 1}"#)
        // The version is checked before the keys: a newer format may have other keys.
        #expect(error?.code == .manifestUnsupportedVersion)
        #expect(error?.detail == "This host reads schemaVersion 1; the manifest declares 2.")
    }

    @Test func duplicatePluginNames_giveBothLocations() {
        let error = ManifestTestSupport.manifestError(
            Self.plugins(#"{"name": "a", "product": "A"}"#, #"{"name": "a", "product": "B"}"#))
        #expect(error?.detail?.contains("plugins[0] (at 4:14) and plugins[1] (at 5:14)") == true)
    }

    @Test func unknownRequirement_suggestsAClosePluginName() {
        let error = ManifestTestSupport.manifestError(
            Self.plugins(#"{"name": "Cache", "product": "A"}"#, #"{"name": "Web", "product": "W", "requires": ["Cahce"]}"#))
        #expect(error?.code == .manifestUnknownRequirement)
        #expect(ManifestTestSupport.location(of: error, source: "plugins.json") == "5:50")
        #expect(error?.hint == #"Did you mean "Cache"?"#)
    }

    @Test func longCycle_isReportedWithItsFullPath_fromTheFirstPluginInIt() {
        let error = ManifestTestSupport.manifestError(Self.plugins(
            #"{"name": "free", "product": "F"}"#,
            #"{"name": "a", "product": "A", "requires": ["free", "b"]}"#,
            #"{"name": "b", "product": "B", "requires": ["c"]}"#,
            #"{"name": "c", "product": "C", "requires": ["a"]}"#))
        #expect(error?.code == .manifestRequirementCycle)
        #expect(error?.message.hasSuffix("requirement cycle: a -> b -> c -> a") == true)
        // Points at "b" in a's requires: 4 + 52.
        #expect(ManifestTestSupport.location(of: error, source: "plugins.json") == "5:56")
    }

    @Test func longChainOfRequirements_doesNotExhaustTheStack() throws {
        let count = 10_000
        var lines = [#"{"name": "p0", "product": "P"}"#]
        for i in 1..<count { lines.append(#"{"name": "p\#(i)", "product": "P", "requires": ["p\#(i - 1)"]}"#) }
        let text = "{\"schemaVersion\": 1, \"plugins\": [" + lines.joined(separator: ",") + "]}"
        let manifest = try ManifestTestSupport.manifest(text)
        let order = manifest.selectedPlugins(for: .development)
        #expect(order.count == count)
        #expect(order.first?.name == "p0")
        #expect(order.last?.name == "p\(count - 1)")

        let cyclic = text.replacing(#"{"name": "p0", "product": "P"}"#,
                                               with: #"{"name": "p0", "product": "P", "requires": ["p\#(count - 1)"]}"#)
        let error = ManifestTestSupport.manifestError(cyclic)
        #expect(error?.code == .manifestRequirementCycle)
    }
}
