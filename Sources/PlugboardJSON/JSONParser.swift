import PlugboardAPI

/// A strict RFC 8259 JSON parser whose errors say where: `plugins.json:4:19: ...`.
///
/// Foundation's parsers report only a character offset and silently keep one of two
/// duplicate keys, so the manifest has its own parser. It accepts exactly RFC 8259 JSON:
/// no comments, no trailing commas, no single quotes, no leading zeros, no `NaN`; string
/// escapes are checked (a lone UTF-16 surrogate is refused), control characters must be
/// escaped, and the input must be valid UTF-8. A UTF-8 byte order mark at the start is
/// skipped. Any whitespace may follow the value, nothing else.
///
/// Numbers written without fraction or exponent that fit in an `Int64` are kept exactly
/// (``JSONValue/Kind/integer(_:)``); every other number is a `Double`, and one too large
/// for a `Double` (`1e400`) is refused.
///
/// Every failure is a ``PlugboardError`` whose message starts with `source:line:column:`:
/// `manifest.syntax`, `manifest.duplicate_key`, `manifest.too_large` or
/// `manifest.too_deep`. No input makes the parser trap, and its recursion is bounded by
/// ``Limits/maxDepth``. Errors quote a few characters of what they found (`found 'True'`),
/// except inside the value of a secret-looking key (see ``ConfigSecrets``), where they
/// only say what kind of thing was found.
///
/// ```swift
/// let value = try JSONParser.parse(bytes, source: "plugins.json")
/// ```
public struct JSONParser {
    /// Bounds on what the parser accepts.
    public struct Limits: Sendable, Hashable {
        /// The largest input, in bytes.
        public var maxBytes: Int
        /// The deepest nesting of arrays and objects; a top-level object is depth 1.
        /// Values above 1024 are treated as 1024, which keeps the recursion well inside
        /// a thread's stack.
        public var maxDepth: Int

        /// Creates limits; the defaults are 1 MiB and 64 levels.
        public init(maxBytes: Int = 1 << 20, maxDepth: Int = 64) {
            self.maxBytes = maxBytes
            self.maxDepth = maxDepth
        }
    }

    /// Parses one JSON document.
    ///
    /// - Parameters:
    ///   - bytes: the document, UTF-8.
    ///   - source: the file name that starts every error message.
    ///   - limits: the largest input and deepest nesting accepted.
    /// - Returns: the root value, with locations and paths.
    /// - Throws: `manifest.syntax`, `manifest.duplicate_key`, `manifest.too_large`,
    ///   `manifest.too_deep`.
    public static func parse(_ bytes: [UInt8], source: String,
                             limits: Limits = .init(maxBytes: 1 << 20, maxDepth: 64)) throws(PlugboardError) -> JSONValue {
        guard bytes.count <= limits.maxBytes else {
            throw PlugboardError(.manifestTooLarge, "\(source): file too large",
                detail: "The file is \(bytes.count) bytes; the limit is \(limits.maxBytes) bytes.",
                hint: "Shorten the file; a manifest lists plugins and their settings, not data.")
        }
        var parser = JSONParser(bytes: bytes, source: source, limits: limits)
        return try parser.parseDocument()
    }

    let bytes: [UInt8]
    let source: String
    let maxDepth: Int
    /// The next byte to read.
    var index = 0
    /// The current line, from 1, and the offset where it starts.
    var line = 1
    var lineStart = 0
    /// A known column on the current line, so that columns are counted once.
    var cursorOffset = 0
    var cursorColumn = 1
    /// True while reading the value of a secret-looking key (``ConfigSecrets``): errors
    /// then never quote the text they stop at.
    var inSecret = false

    private init(bytes: [UInt8], source: String, limits: Limits) {
        self.bytes = bytes
        self.source = source
        self.maxDepth = min(max(limits.maxDepth, 0), 1024)
    }

    private mutating func parseDocument() throws(PlugboardError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            index = 3
            lineStart = 3
            cursorOffset = 3
        }
        skipWhitespace()
        if index >= bytes.count {
            throw syntaxError(at: index, "expected a value, found end of file",
                              detail: "The file holds no JSON value.",
                              hint: "Write the manifest as a JSON object; see docs/MANIFEST.md.")
        }
        let value = try parseValue(depth: 0, path: .root)
        skipWhitespace()
        guard index >= bytes.count else {
            throw syntaxError(at: index, "expected end of file after the top-level value, found \(found(at: index))",
                              detail: "A JSON document holds exactly one value.")
        }
        return value
    }

    // MARK: values

    private mutating func parseValue(depth: Int, path: JSONPath) throws(PlugboardError) -> JSONValue {
        let start = index
        guard index < bytes.count else {
            throw syntaxError(at: index, "expected a value, found end of file")
        }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            return try parseObject(depth: depth + 1, path: path)
        case UInt8(ascii: "["):
            return try parseArray(depth: depth + 1, path: path)
        case UInt8(ascii: "\""):
            let location = self.location(at: start)
            return JSONValue(.string(try parseString()), location: location, path: path)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let location = self.location(at: start)
            return JSONValue(try parseNumber(), location: location, path: path)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            let location = self.location(at: start)
            for (word, kind) in [("true", JSONValue.Kind.bool(true)), ("false", .bool(false)), ("null", .null)]
            where bytes[index...].starts(with: word.utf8) && !isWordByte(at: index + word.utf8.count) {
                index += word.utf8.count
                return JSONValue(kind, location: location, path: path)
            }
            throw syntaxError(at: start, "expected a value, found \(found(at: start))",
                              detail: "JSON's literals are true, false and null, in lower case.")
        default:
            throw unexpectedValueStart(at: start)
        }
    }

    private mutating func parseArray(depth: Int, path: JSONPath) throws(PlugboardError) -> JSONValue {
        let location = self.location(at: index)
        try checkDepth(depth)
        index += 1
        skipWhitespace()
        var elements: [JSONValue] = []
        if peek == UInt8(ascii: "]") {
            index += 1
            return JSONValue(.array(elements), location: location, path: path)
        }
        while true {
            elements.append(try parseValue(depth: depth, path: path.appending(index: elements.count)))
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
                if peek == UInt8(ascii: "]") {
                    throw syntaxError(at: index, "expected a value after ',' in array, found ']'",
                                      detail: "JSON does not allow a comma after the last element.",
                                      hint: "Remove the trailing comma.")
                }
            case UInt8(ascii: "]"):
                index += 1
                return JSONValue(.array(elements), location: location, path: path)
            default:
                throw syntaxError(at: index, "expected ',' or ']' after array element, found \(found(at: index))")
            }
        }
    }

    private mutating func parseObject(depth: Int, path: JSONPath) throws(PlugboardError) -> JSONValue {
        let location = self.location(at: index)
        try checkDepth(depth)
        index += 1
        skipWhitespace()
        var members: [JSONValue.Member] = []
        var seen: [String: SourceLocation] = [:]
        if peek == UInt8(ascii: "}") {
            index += 1
            return JSONValue(.object(members), location: location, path: path)
        }
        while true {
            guard peek == UInt8(ascii: "\"") else { throw unexpectedKeyStart(at: index, afterComma: !members.isEmpty) }
            let keyLocation = self.location(at: index)
            let key = try parseString()
            if let first = seen[key] {
                let shown = ConfigValue.string(key).description
                throw PlugboardError(.manifestDuplicateKey,
                    "\(source):\(keyLocation): duplicate key \(shown) \(path.isRoot ? "at the top level" : "in object \(path)")",
                    detail: "The key \(shown) is defined at \(first) and again at \(keyLocation).",
                    hint: "Keep one of the two members; a JSON object in the manifest defines each key once.")
            }
            seen[key] = keyLocation
            skipWhitespace()
            guard peek == UInt8(ascii: ":") else {
                throw syntaxError(at: index, "expected ':' after object key, found \(found(at: index))")
            }
            index += 1
            skipWhitespace()
            let outerSecret = inSecret
            inSecret = inSecret || ConfigSecrets.isSecretKey(key)
            let value = try parseValue(depth: depth, path: path.appending(key: key))
            inSecret = outerSecret
            members.append(JSONValue.Member(key: key, keyLocation: keyLocation, value: value))
            skipWhitespace()
            switch peek {
            case UInt8(ascii: ","):
                index += 1
                skipWhitespace()
            case UInt8(ascii: "}"):
                index += 1
                return JSONValue(.object(members), location: location, path: path)
            default:
                throw syntaxError(at: index, "expected ',' or '}' after object member, found \(found(at: index))")
            }
        }
    }

    private mutating func checkDepth(_ depth: Int) throws(PlugboardError) {
        guard depth > maxDepth else { return }
        let here = location(at: index)
        throw PlugboardError(.manifestTooDeep, "\(source):\(here): nesting too deep",
            detail: "Arrays and objects reach depth \(depth) here; the limit is \(maxDepth).",
            hint: "Flatten the structure; a manifest needs only a few levels.")
    }

    // MARK: reading

    /// The byte at `index`, or nil at the end.
    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    /// Skips JSON whitespace (space, tab, CR, LF), counting lines.
    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"):
                index += 1
            case UInt8(ascii: "\n"):
                index += 1
                line += 1
                lineStart = index
                cursorOffset = index
                cursorColumn = 1
            default:
                return
            }
        }
    }

    /// True when the byte at `offset` continues a word (a letter, digit or `_`).
    func isWordByte(at offset: Int) -> Bool {
        guard offset < bytes.count else { return false }
        let b = bytes[offset]
        return (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F
    }

    /// The line and column of `offset`, which is on the current line or after
    /// (anything earlier is counted from the start of the file).
    mutating func location(at offset: Int) -> SourceLocation {
        let offset = min(max(offset, 0), bytes.count)
        guard offset >= lineStart else { return Self.location(of: offset, in: bytes) }
        if offset < cursorOffset {
            cursorOffset = lineStart
            cursorColumn = 1
        }
        while cursorOffset < offset {
            if bytes[cursorOffset] & 0xC0 != 0x80 { cursorColumn += 1 }
            cursorOffset += 1
        }
        return SourceLocation(line: line, column: cursorColumn, offset: offset)
    }

    /// The line and column of `offset`, counted from the start of `bytes`.
    static func location(of offset: Int, in bytes: [UInt8]) -> SourceLocation {
        var line = 1, column = 1
        var i = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        let end = min(max(offset, 0), bytes.count)
        while i < end {
            if bytes[i] == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if bytes[i] & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return SourceLocation(line: line, column: column, offset: end)
    }
}
