import PlugboardAPI
import Testing

@Suite struct PluginConfigTests {
    let config = PluginConfig([
        "bucket": .string("photos"), "port": .integer(9000), "ratio": .number(0.5),
        "whole": .number(3), "tls": .object(["verify": .bool(false)]), "none": .null,
    ], plugin: "S3Storage")

    @Test func typedAccessors_returnValuesAndDefaults() throws {
        #expect(try config.string("bucket") == "photos")
        #expect(try config.int("port") == 9000)
        #expect(try config.int("whole") == 3)
        #expect(try config.int("missing", default: 7) == 7)
        #expect(try config.int("none", default: 7) == 7)
        #expect(try config.double("ratio", default: 0) == 0.5)
        #expect(try config.double("port", default: 0) == 9000)
        #expect(try config.bool("missing", default: true))
        #expect(try config.object("tls").bool("verify", default: true) == false)
        #expect(try config.string("none", default: "d") == "d")
    }

    @Test func missingKey_namesThePathAndTheExpectedType() {
        let error = #expect(throws: PlugboardError.self) { try config.string("region") }
        #expect(error?.code == .configInvalid)
        #expect(error?.message.contains("\"S3Storage\"") == true)
        #expect(error?.message.contains("config.region") == true)
        #expect(error?.detail == "Expected a string at config.region, found nothing.")
    }

    @Test func wrongType_namesExpectedAndFound_includingNestedPaths() {
        let e1 = #expect(throws: PlugboardError.self) { try config.int("bucket") }
        #expect(e1?.detail?.contains("Expected an integer at config.bucket, found a value of type string") == true)
        let e2 = #expect(throws: PlugboardError.self) { try config.int("ratio") }
        #expect(e2?.code == .configInvalid)
        let e3 = #expect(throws: PlugboardError.self) { try config.object("tls").string("verify") }
        #expect(e3?.message.contains("config.tls.verify") == true)
    }

    @Test func unknownKey_isRefused_withTheClosestKnownKey() {
        let error = #expect(throws: PlugboardError.self) {
            try PluginConfig(["bukket": .string("x")], plugin: "S3Storage").requireOnly(["bucket", "region"])
        }
        #expect(error?.code == .configInvalid)
        #expect(error?.detail?.contains("Did you mean \"bucket\"?") == true)
    }

    /// A key close to none of the known ones gets the list, and no suggestion: "bogus" is
    /// not a misspelt "seed".
    @Test func unknownKey_farFromEveryKnownKey_isRefusedWithoutASuggestion() {
        let error = #expect(throws: PlugboardError.self) {
            try PluginConfig(["bogus": .integer(1)], plugin: "MemoryStorage").requireOnly(["seed", "maxObjects"])
        }
        #expect(error?.message.contains("unknown configuration key \"config.bogus\"") == true, "\(String(describing: error))")
        #expect(error?.detail == "Known keys: maxObjects, seed.", "\(String(describing: error))")
    }

    @Test func configValue_printsAsJSON() {
        let v: ConfigValue = .object(["a": .array([.integer(1), .bool(true), .null]), "b": .string("q\"\n")])
        #expect(v.description == #"{"a":[1,true,null],"b":"q\"\n"}"#)
    }
}

@Suite struct PluginConfigPathTests {
    @Test func relativePaths_areResolvedAgainstTheManifestFolder() throws {
        let config = PluginConfig(["root": .string("data"), "abs": .string("/srv/x"), "empty": .string(""),
                                   "nested": .object(["dir": .string("sub/dir")])],
                                  plugin: "FileStorage", baseDirectory: "/etc/plugboard")
        #expect(try config.filePath("root") == "/etc/plugboard/data")
        #expect(try config.filePath("abs") == "/srv/x")
        #expect(try config.object("nested").filePath("dir") == "/etc/plugboard/sub/dir")
        let error = #expect(throws: PlugboardError.self) { try config.filePath("empty") }
        #expect(error?.code == .configInvalid)
    }

    @Test func withoutABaseDirectory_relativePathsStayAsWritten() throws {
        #expect(try PluginConfig(["root": .string("data")], plugin: "p").filePath("root") == "data")
    }
}
