/// The request documents S3 clients send (`<Delete>`, `<CompleteMultipartUpload>`,
/// `<CreateBucketConfiguration>`), read by a small strict parser written here rather than
/// through FoundationXML: those bodies come from anyone who can reach the endpoint, and
/// libxml2 through `XMLParser` traps on some inputs (the S3 client's fuzzing found two).
///
/// It reads elements, attributes (skipped), text with the five predefined entities and
/// character references, comments, CDATA and an XML declaration. A document type, a
/// processing instruction after the start, an entity it does not know, mismatched tags,
/// more than ``maxDepth`` levels or more than ``maxElements`` elements are refused with
/// the offset where the reading stopped. Namespaces are not resolved; prefixes are kept
/// off names (`s3:Part` is `Part`), which is how S3 itself reads them.
public struct S3XMLElement: Sendable, Equatable {
    public var name: String
    public var text: String
    public var children: [S3XMLElement]

    public func child(_ name: String) -> S3XMLElement? { children.first { $0.name == name } }
    public func children(_ name: String) -> [S3XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child named `name`, trimmed of surrounding white space.
    public func text(_ name: String) -> String? { child(name).map { S3XMLReader.trimmed($0.text) } }
}

public enum S3XMLReader {
    public static let maxDepth = 16
    public static let maxElements = 100_000

    /// The root element of `bytes`; a `MalformedXML` S3Error saying where and why otherwise.
    public static func parse(_ bytes: [UInt8]) throws(S3Error) -> S3XMLElement {
        var reader = Reader(bytes: bytes)
        do throws(Reader.Failure) {
            return try reader.document()
        } catch {
            throw S3Error.malformedXML("The XML you provided was not well-formed or did not validate against our published schema: \(error.reason) at byte \(error.offset).")
        }
    }

    static func trimmed(_ text: String) -> String {
        let bytes = Array(text.utf8)
        func space(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
        guard let first = bytes.firstIndex(where: { !space($0) }), let last = bytes.lastIndex(where: { !space($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    struct Reader {
        struct Failure: Error {
            var reason: String
            var offset: Int
        }

        let bytes: [UInt8]
        var at = 0
        var elements = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ reason: String) -> Failure { Failure(reason: reason, offset: at) }

        mutating func document() throws(Failure) -> S3XMLElement {
            guard String(validating: bytes, as: UTF8.self) != nil else { throw fail("the body is not UTF-8 text") }
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { at = 3 }
            if starts("<?xml") {
                guard let end = find("?>") else { throw fail("an XML declaration without its end") }
                at = end + 2
            }
            try misc()
            if starts("<!") || starts("<?") {
                throw fail("a document type or processing instruction, which S3 documents do not have")
            }
            guard at < bytes.count, bytes[at] == UInt8(ascii: "<") else { throw fail("expected the root element") }
            let root = try element(depth: 1)
            try misc()
            guard at == bytes.count else { throw fail("expected the end of the document after the root element") }
            return root
        }

        /// White space and comments between top-level parts.
        mutating func misc() throws(Failure) {
            while true {
                skipSpace()
                if starts("<!--") { try comment() } else { return }
            }
        }

        mutating func comment() throws(Failure) {
            guard let end = find("-->", from: at + 4) else { throw fail("a comment without its end") }
            at = end + 3
        }

        mutating func element(depth: Int) throws(Failure) -> S3XMLElement {
            guard depth <= maxDepth else { throw fail("elements nested deeper than \(maxDepth) levels") }
            elements += 1
            guard elements <= maxElements else { throw fail("more than \(maxElements) elements") }
            at += 1 // "<"
            let name = try self.name()
            // Attributes (xmlns and the like): skipped, but read to their end.
            while true {
                skipSpace()
                guard at < bytes.count else { throw fail("a start tag without its end") }
                if bytes[at] == UInt8(ascii: "/") {
                    guard at + 1 < bytes.count, bytes[at + 1] == UInt8(ascii: ">") else { throw fail("expected '>' after '/'") }
                    at += 2
                    return S3XMLElement(name: local(name), text: "", children: [])
                }
                if bytes[at] == UInt8(ascii: ">") { at += 1; break }
                _ = try self.name()
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "=") else { throw fail("expected '=' after an attribute's name") }
                at += 1
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") || bytes[at] == UInt8(ascii: "'") else {
                    throw fail("expected a quoted attribute value")
                }
                let quote = bytes[at]
                guard let end = bytes[(at + 1)...].firstIndex(of: quote) else { throw fail("an attribute value without its end") }
                if bytes[(at + 1)..<end].contains(UInt8(ascii: "<")) { throw fail("'<' in an attribute value") }
                at = end + 1
            }
            var text: [UInt8] = []
            var children: [S3XMLElement] = []
            while true {
                guard at < bytes.count else { throw fail("element <\(name)> without its end tag") }
                let b = bytes[at]
                if b == UInt8(ascii: "<") {
                    if starts("</") {
                        at += 2
                        let closing = try self.name()
                        skipSpace()
                        guard closing == name else { throw fail("expected </\(name)>, found </\(closing)>") }
                        guard at < bytes.count, bytes[at] == UInt8(ascii: ">") else { throw fail("expected '>' to end </\(name)>") }
                        at += 1
                        return S3XMLElement(name: local(name), text: String(decoding: text, as: UTF8.self), children: children)
                    } else if starts("<!--") {
                        try comment()
                    } else if starts("<![CDATA[") {
                        guard let end = find("]]>", from: at + 9) else { throw fail("a CDATA section without its end") }
                        text.append(contentsOf: bytes[(at + 9)..<end])
                        at = end + 3
                    } else if starts("<!") || starts("<?") {
                        throw fail("a document type or processing instruction, which S3 documents do not have")
                    } else {
                        children.append(try element(depth: depth + 1))
                    }
                } else if b == UInt8(ascii: "&") {
                    try reference(into: &text)
                } else {
                    text.append(b)
                    at += 1
                }
            }
        }

        mutating func reference(into text: inout [UInt8]) throws(Failure) {
            guard let end = bytes[at...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else { throw fail("'&' that starts no reference") }
            let entity = String(decoding: bytes[(at + 1)..<end], as: UTF8.self)
            switch entity {
            case "amp": text.append(UInt8(ascii: "&"))
            case "lt": text.append(UInt8(ascii: "<"))
            case "gt": text.append(UInt8(ascii: ">"))
            case "quot": text.append(UInt8(ascii: "\""))
            case "apos": text.append(UInt8(ascii: "'"))
            default:
                var digits = Substring(entity)
                var radix = 10
                guard digits.first == "#" else { throw fail("an unknown entity &\(entity.prefix(10));") }
                digits = digits.dropFirst()
                if digits.first == "x" { radix = 16; digits = digits.dropFirst() }
                guard let value = UInt32(digits, radix: radix), let scalar = Unicode.Scalar(value), value != 0 else {
                    throw fail("an invalid character reference &\(entity.prefix(10));")
                }
                text.append(contentsOf: Array(String(Character(scalar)).utf8))
            }
            at = end + 1
        }

        mutating func name() throws(Failure) -> String {
            let start = at
            while at < bytes.count {
                let b = bytes[at]
                let ok = (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39)
                    || b == UInt8(ascii: "_") || b == UInt8(ascii: ":") || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b >= 0x80
                if !ok { break }
                at += 1
            }
            guard at > start, at - start <= 256 else { throw fail("expected a name") }
            return String(decoding: bytes[start..<at], as: UTF8.self)
        }

        func local(_ name: String) -> String {
            guard let colon = name.utf8.lastIndex(of: UInt8(ascii: ":")) else { return name }
            return String(name[name.utf8.index(after: colon)...])
        }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
        }

        func starts(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard at + count <= bytes.count else { return false }
            return text.withUTF8Buffer { prefix in (0..<count).allSatisfy { bytes[at + $0] == prefix[$0] } }
        }

        func find(_ text: StaticString, from start: Int? = nil) -> Int? {
            let count = text.utf8CodeUnitCount
            return text.withUTF8Buffer { needle -> Int? in
                var i = start ?? at
                while i + count <= bytes.count {
                    if (0..<count).allSatisfy({ bytes[i + $0] == needle[$0] }) { return i }
                    i += 1
                }
                return nil
            }
        }
    }
}
