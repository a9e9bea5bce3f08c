import PlugboardAPI
import PlugboardHost
import PlugboardJSON
import Testing

/// Malformed JSON: each error's code, exact line:column and what it says was found.
@Suite struct JSONParserErrorTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let input: [UInt8]
        let location: String
        let contains: String
        let code: PlugboardError.Code
        var testDescription: String { "\(String(decoding: input, as: UTF8.self).debugDescription) -> \(location)" }

        init(_ text: String, _ location: String, _ contains: String, _ code: PlugboardError.Code = .manifestSyntax) {
            self.init(bytes: Array(text.utf8), location, contains, code)
        }

        init(bytes: [UInt8], _ location: String, _ contains: String, _ code: PlugboardError.Code = .manifestSyntax) {
            self.input = bytes
            self.location = location
            self.contains = contains
            self.code = code
        }
    }

    static let cases: [Case] = [
        Case("", "1:1", "expected a value, found end of file"),
        Case("  \n  ", "2:3", "expected a value, found end of file"),
        Case(#"{"a": 1,}"#, "1:9", "after ',', found '}'"),
        Case("[1,]", "1:4", "expected a value after ',' in array, found ']'"),
        Case(#"{"a" 1}"#, "1:6", "expected ':' after object key, found '1'"),
        Case(#"{"a": 1 "b": 2}"#, "1:9", #"expected ',' or '}' after object member, found '"'"#),
        Case("[1 2]", "1:4", "expected ',' or ']' after array element, found '2'"),
        Case("{a: 1}", "1:2", "expected a string as object key, found 'a'"),
        Case("{'a': 1}", "1:2", #"found "'""#),
        Case("// comment\n{}", "1:1", "expected a value, found '/'"),
        Case("{\n  \"a\": 1,\n  \"b\" 2\n}", "3:7", "expected ':' after object key"),
        Case(#"{"é": 1 x}"#, "1:9", "found 'x'"),
        Case("[01]", "1:2", "leading zeros"),
        Case("-01", "1:1", "leading zeros"),
        Case("1.", "1:3", "expected a digit after '.' in number, found end of file"),
        Case(".5", "1:1", "expected a value, found '.'"),
        Case("1e", "1:3", "expected a digit in the number's exponent"),
        Case("[1e+]", "1:5", "expected a digit in the number's exponent, found ']'"),
        Case("-", "1:2", "expected a digit after '-', found end of file"),
        Case("-Infinity", "1:2", "expected a digit after '-', found 'Infinity'"),
        Case("+1", "1:1", "expected a value, found '+'"),
        Case("1e400", "1:1", "out of range"),
        Case("[tru]", "1:2", "expected a value, found 'tru'"),
        Case("True", "1:1", "found 'True'"),
        Case("nulls", "1:1", "found 'nulls'"),
        Case("NaN", "1:1", "found 'NaN'"),
        Case(#"["abc"#, "1:6", "expected '\"' to close the string started at 1:2, found end of file"),
        Case("[\"ab\ncd\"]", "1:5", "unescaped line break in string"),
        Case("\"a\tb\"", "1:3", "unescaped control character U+0009"),
        Case(#""\x""#, "1:2", "invalid escape sequence"),
        Case(#""\u12G4""#, "1:6", "expected four hex digits after '\\u', found 'G4'"),
        Case(#""\u12"#, "1:6", "found end of file"),
        Case(#""\ud800""#, "1:2", "lone surrogate \\uD800"),
        Case(#""\ud800\u0041""#, "1:2", "lone surrogate \\uD800"),
        Case(#""\udc00x""#, "1:2", "lone surrogate \\uDC00"),
        Case("{} x", "1:4", "expected end of file after the top-level value, found 'x'"),
        Case("{}}", "1:3", "found '}'"),
        Case("[1]\u{0C}", "1:4", "found control character U+000C"),
        Case("[\"é\", é]", "1:7", "found 'é' (U+00E9)"),
        Case(bytes: [0x22, 0xFF, 0x22], "1:2", "invalid UTF-8 byte 0xFF"),
        Case(bytes: [0x22, 0x61, 0xC0, 0xAF, 0x22], "1:3", "invalid UTF-8 byte 0xC0"),
        Case(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], "1:2", "invalid UTF-8 byte 0xED"),
        Case(bytes: [0x22, 0xE2, 0x82], "1:2", "invalid UTF-8 byte 0xE2"),
        Case(bytes: [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], "1:2", "invalid UTF-8 byte 0xF4"),
        Case(bytes: [0x5B, 0x80, 0x5D], "1:2", "invalid UTF-8 byte 0x80"),
        Case(bytes: Array("{\n\"é\": \"".utf8) + [0xFE], "2:7", "invalid UTF-8 byte 0xFE"),
        Case(#"{"a": 1, "a": 2}"#, "1:10", #"duplicate key "a" at the top level"#, .manifestDuplicateKey),
    ]

    @Test(arguments: cases)
    func malformedJSON_isRefusedWithCodeAndLocation(_ c: Case) {
        let error = ManifestTestSupport.jsonError(c.input)
        #expect(error?.code == c.code)
        #expect(ManifestTestSupport.location(of: error, source: "t.json") == c.location, "\(error?.message ?? "no error")")
        #expect(error?.message.contains(c.contains) == true, "\(error?.message ?? "no error")")
    }

    @Test func syntaxError_quotesTheFoundCharacter_asInTheSpec() {
        let error = ManifestTestSupport.jsonError("{\n  \"plugins\": [],\n  \"x\": 1\n  \"y\": 2}")
        #expect(error?.message == #"t.json:4:3: expected ',' or '}' after object member, found '"'"#)
    }

    @Test func trailingComma_andComments_explainWhatJSONAllows() {
        let comma = ManifestTestSupport.jsonError(#"{"a": 1,}"#)
        #expect(comma?.detail?.contains("comma") == true)
        #expect(comma?.hint == "Remove the trailing comma.")
        let comment = ManifestTestSupport.jsonError("{\"a\": /* x */ 1}")
        #expect(comment?.detail == "JSON does not allow comments.")
    }

    @Test func duplicateKey_namesTheKeyAndBothLocations_evenWhenNested() {
        let error = ManifestTestSupport.jsonError("{\"plugins\": [{\"name\": \"a\",\n  \"name\": \"b\"}]}")
        #expect(error?.code == .manifestDuplicateKey)
        #expect(error?.message == #"t.json:2:3: duplicate key "name" in object plugins[0]"#)
        #expect(error?.detail?.contains("1:15") == true)
        #expect(error?.detail?.contains("2:3") == true)
    }

    @Test func duplicateKey_comparesCanonicalEquivalentKeysAsEqual() {
        // "é" precomposed and decomposed are the same Swift String, so the same key.
        let error = ManifestTestSupport.jsonError("{\"\u{E9}\": 1, \"e\u{301}\": 2}")
        #expect(error?.code == .manifestDuplicateKey)
    }
}
