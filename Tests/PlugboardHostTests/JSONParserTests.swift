import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// Valid JSON: values, numbers, strings, locations and paths.
@Suite struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue { try ManifestTestSupport.parseJSON(text) }

    @Test func scalars_parseAtTopLevel() throws {
        #expect(try parse("true").configValue == .bool(true))
        #expect(try parse("false").configValue == .bool(false))
        #expect(try parse(" null ").configValue == .null)
        #expect(try parse("\"x\"").configValue == .string("x"))
    }

    @Test func integers_stayExact_andOtherNumbersBecomeDoubles() throws {
        #expect(try parse("0").configValue == .integer(0))
        #expect(try parse("-0").configValue == .integer(0))
        #expect(try parse("9000").configValue == .integer(9000))
        #expect(try parse("9223372036854775807").configValue == .integer(Int64.max))
        #expect(try parse("-9223372036854775808").configValue == .integer(Int64.min))
        #expect(try parse("9223372036854775808").configValue == .number(9223372036854775808.0))
        #expect(try parse("1.5").configValue == .number(1.5))
        #expect(try parse("-0.25e2").configValue == .number(-25))
        #expect(try parse("1E3").configValue == .number(1000))
        #expect(try parse("1e-400").configValue == .number(0))
    }

    @Test func escapes_decodeIncludingSurrogatePairs() throws {
        let value = try parse(#""\"\\\/\b\f\n\r\t\u00e9\u00E9\ud83d\ude00\u0000""#)
        #expect(value.configValue == .string("\"\\/\u{8}\u{C}\n\r\té\u{E9}😀\u{0}"))
    }

    @Test func rawUTF8_andDELCharacter_areAcceptedInStrings() throws {
        #expect(try parse("\"é😀\u{7F}\"").configValue == .string("é😀\u{7F}"))
    }

    @Test func objects_keepMemberOrder_andConvertToConfigValue() throws {
        let value = try parse(#"{"b": 1, "a": [true, null, {"c": "d"}], "e": {}}"#)
        guard case .object(let members) = value.kind else {
            Issue.record("expected an object")
            return
        }
        #expect(members.map(\.key) == ["b", "a", "e"])
        #expect(value.configValue == .object(["b": .integer(1), "a": .array([.bool(true), .null, .object(["c": .string("d")])]),
                                             "e": .object([:])]))
        #expect(value["a"]?[2]?["c"]?.configValue == .string("d"))
        #expect(value["missing"] == nil)
        #expect(value["a"]?[9] == nil)
    }

    @Test func locations_areLineAndColumnOfEachValue_countingScalars() throws {
        let text = "{\n  \"é\": [1,\n    {\"k\": \"v\"}],\r\n\t\"n\": null\n}"
        let value = try parse(text)
        #expect(value.location.description == "1:1")
        let array = try #require(value["é"])
        #expect(array.location.description == "2:8")
        #expect(array[0]?.location.description == "2:9")
        #expect(array[1]?.location.description == "3:5")
        #expect(array[1]?["k"]?.location.description == "3:11")
        #expect(value.member(named: "n")?.keyLocation.description == "4:2")
        #expect(value["n"]?.location.description == "4:7")
    }

    @Test func paths_nameEachValueFromTheRoot() throws {
        let value = try parse(#"{"plugins": [{"config": {"log level": {"x": 1}}}]}"#)
        let inner = try #require(value["plugins"]?[0]?["config"]?["log level"]?["x"])
        #expect(inner.path.description == #"plugins[0].config["log level"].x"#)
        #expect(value.path.description == "$")
        #expect(value.path.spoken == "the top level")
    }

    @Test func byteOrderMark_isSkipped_andNotCounted() throws {
        let value = try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array(#"{"a": 1}"#.utf8), source: "t.json")
        #expect(value.location.description == "1:1")
        #expect(value["a"]?.location.description == "1:7")
        let error = ManifestTestSupport.jsonError([0xEF, 0xBB, 0xBF] + Array("{x}".utf8))
        #expect(ManifestTestSupport.location(of: error, source: "t.json") == "1:2")
    }

    @Test func depthAtTheLimit_isAccepted() throws {
        let value = try ManifestTestSupport.parseJSON("[[[1]]]", limits: .init(maxBytes: 100, maxDepth: 3))
        #expect(value.configValue == .array([.array([.array([.integer(1)])])]))
    }

    @Test func description_printsCompactJSON() throws {
        #expect(try parse(#"{"b": [1, 2.5], "a": "x"}"#).description == #"{"a":"x","b":[1,2.5]}"#)
    }
}
