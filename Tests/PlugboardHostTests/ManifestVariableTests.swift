import PlugboardAPI
import PlugboardHost
import Testing

/// `${VAR}`, `${VAR:-default}` and `$${` in configuration strings.
@Suite struct ManifestVariableTests {
    private func plugin(config: String) throws -> ManifestPlugin {
        let text = "{\"schemaVersion\": 1, \"plugins\": [\n  {\"name\": \"db\", \"product\": \"Postgres\", \"config\": " + config + "}]}"
        return try #require(try ManifestTestSupport.manifest(text, path: "plugins.json").plugins.first)
    }

    @Test func setVariable_isExpanded_insideText() throws {
        let p = try plugin(config: #"{"url": "postgres://${DB_HOST}:5432/app"}"#)
        #expect(try p.resolvedConfig(environment: ["DB_HOST": "db.local"]).string("url") == "postgres://db.local:5432/app")
    }

    @Test func default_isUsedWhenUnsetOrEmpty_andTheValueWhenSet() throws {
        let p = try plugin(config: #"{"region": "${REGION:-eu-west-1}", "empty": "${EMPTY}", "text": "${T:-a:b-c {x}"}"#)
        #expect(try p.resolvedConfig(environment: ["EMPTY": "e"]).string("region") == "eu-west-1")
        #expect(try p.resolvedConfig(environment: ["EMPTY": "e", "REGION": ""]).string("region") == "eu-west-1")
        #expect(try p.resolvedConfig(environment: ["EMPTY": "e", "REGION": "us-east-2"]).string("region") == "us-east-2")
        // Set but empty, without default: the empty string, not an error.
        #expect(try p.resolvedConfig(environment: ["EMPTY": ""]).string("empty") == "")
        // The default runs to the first "}".
        #expect(try p.resolvedConfig(environment: ["EMPTY": ""]).string("text") == "a:b-c {x")
    }

    @Test func nestedStrings_inObjectsAndArrays_areExpanded_keysAndOtherTypesAreNot() throws {
        let p = try plugin(config: #"{"tls": {"ca": "${DIR}/ca.pem", "hosts": ["${A}", "b", 3]}, "${KEY}": true, "n": null}"#)
        let config = try p.resolvedConfig(environment: ["DIR": "/etc/ssl", "A": "a.example", "KEY": "k"])
        #expect(config["tls"] == .object(["ca": .string("/etc/ssl/ca.pem"),
                                          "hosts": .array([.string("a.example"), .string("b"), .integer(3)])]))
        #expect(config["${KEY}"] == .bool(true))
        #expect(config["n"] == .null)
        #expect(config.plugin == "db")
        #expect(config.path == "config")
    }

    @Test func escape_writesALiteralDollarBrace_andLoneDollarsStay() throws {
        let p = try plugin(config: #"{"a": "$${NOT_A_VAR}", "b": "cost $5, $HOME, a$$b", "c": "$$${X}"}"#)
        let config = try p.resolvedConfig(environment: ["X": "x", "NOT_A_VAR": "no"])
        #expect(try config.string("a") == "${NOT_A_VAR}")
        #expect(try config.string("b") == "cost $5, $HOME, a$$b")
        #expect(try config.string("c") == "$${X}")
    }

    @Test func expansion_isSinglePass() throws {
        let p = try plugin(config: #"{"a": "${A}"}"#)
        #expect(try p.resolvedConfig(environment: ["A": "${B}", "B": "no"]).string("a") == "${B}")
    }

    @Test func missingVariable_isAManifestError_namingVariablePluginAndPath() throws {
        let p = try plugin(config: #"{"tls": {"key": "${TLS_KEY}"}}"#)
        let error = #expect(throws: PlugboardError.self) { try p.resolvedConfig(environment: [:]) }
        #expect(error?.code == .manifestMissingVariable)
        #expect(error?.message == #"plugins.json:2:67: environment variable "TLS_KEY" is not set, needed by plugin "db""#)
        #expect(error?.detail?.contains("plugins[0].config.tls.key") == true)
        #expect(error?.hint?.contains("${TLS_KEY:-default}") == true)
    }

    @Test func missingVariable_inAPluginNotSelected_isNoErrorUntilResolved() throws {
        let text = #"{"schemaVersion": 1, "plugins": [{"name": "p", "product": "P", "environments": ["production"], "config": {"k": "${NOPE}"}}]}"#
        let manifest = try ManifestTestSupport.manifest(text)
        #expect(manifest.selectedPlugins(for: .development).isEmpty)
        #expect(manifest.plugins.first?.redactedConfig == .object(["k": .string("${NOPE}")]))
    }

    @Test func malformedReferences_areRefusedAtLoad_forEveryPlugin() {
        for bad in ["${}", "${1X}", "${X", "${X:}", "${X-y}", "${X:-y", "a ${ b}"] {
            let text = #"{"schemaVersion": 1, "plugins": [{"name": "p", "product": "P", "enabled": false, "config": {"k": ""# + bad + #""}}]}"#
            let error = ManifestTestSupport.manifestError(text)
            #expect(error?.code == .manifestInvalidValue, "\(bad)")
            #expect(error?.message.contains("plugins[0].config.k: malformed variable reference") == true, "\(bad)")
            // The string may be a secret: the message never quotes it.
            #expect(error?.description.contains(bad) == false, "\(bad)")
        }
    }

    @Test func secretWrapper_isExpandedToo() throws {
        let p = try plugin(config: #"{"password": {"secret": "${DB_PASSWORD}"}}"#)
        #expect(try p.resolvedConfig(environment: ["DB_PASSWORD": "hunter22"]).string("password") == "hunter22")
    }

    // MARK: - The expansion bound (16 MiB for the whole manifest)

    @Test func fiftyThousandReferencesToA100KBVariable_areRefusedQuickly_namingLimitAndSize() throws {
        // 200 KB of manifest text that would expand to 5 GB.
        let p = try plugin(config: #"{"big": ""# + String(repeating: "${A}", count: 50_000) + #""}"#)
        let value = String(repeating: "s3cr3t-", count: 100_000 / 7)
        let started = ContinuousClock.now
        let error = #expect(throws: PlugboardError.self) { try p.resolvedConfig(environment: ["A": value]) }
        // Expanded, it would be 5 GB: minutes of copying, if memory allowed it. The bound
        // is wide for a loaded two-core machine; the refusal comes after 16 MiB.
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(error?.code == .manifestExpansionTooLarge)
        #expect(error?.code.area == "manifest")
        #expect(error?.message.hasPrefix("plugins.json:2:") == true)
        #expect(error?.message.contains("plugin \"db\"") == true)
        #expect(error?.message.contains("16 MiB") == true)
        let expanded = 50_000 * value.utf8.count
        #expect(error?.detail?.contains("at most 16777216 bytes") == true)
        #expect(error?.detail?.contains("plugins[0].config.big alone expanding to \(expanded) bytes") == true)
        #expect(error?.hint?.contains("file") == true)
        // Sizes only: the variable's value (maybe a secret) is quoted nowhere.
        #expect(error?.description.contains("s3cr3t") == false)
    }

    @Test func anExpansionUnderTheLimit_isKept_whole() throws {
        let p = try plugin(config: #"{"big": ""# + String(repeating: "${A}", count: 150) + #"", "small": "x"}"#)
        let config = try p.resolvedConfig(environment: ["A": String(repeating: "a", count: 100_000)])
        #expect(try config.string("big").utf8.count == 15_000_000)
        #expect(try config.string("small") == "x")
    }

    @Test func theLimit_holdsForTheWholeManifest_notForEachPlugin() async throws {
        // Two plugins of 10 MB each: each is under 16 MiB, together they are not.
        let folder = LoaderFixtures.temporaryFolder("plugboard-expansion")
        let config = #"{"big": ""# + String(repeating: "${A}", count: 100) + #""}"#
        try LoaderFixtures.write(Array("""
            {"schemaVersion": 1, "plugins": [
              {"name": "first", "product": "MemoryStorage", "config": \(config)},
              {"name": "second", "product": "MemoryStorage", "config": \(config)}]}
            """.utf8), to: "\(folder)/plugins.json")
        let environment = ["A": String(repeating: "a", count: 100_000)]
        let error = await #expect(throws: PlugboardError.self) {
            _ = try await PluginHost.start(.init(manifestPath: "\(folder)/plugins.json", environment: .testing,
                                                 cacheDirectory: "\(folder)/cache", processEnvironment: environment))
        }
        #expect(error?.code == .manifestExpansionTooLarge)
        #expect(error?.message.contains("plugin \"second\"") == true)
        #expect(error?.detail?.contains("plugins[1].config.big alone expanding to 10000000 bytes, with \((16 << 20) - 10_000_000) bytes left") == true)
    }
}
