import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A parsed XML element: name, text and children, enough for S3's small documents.
struct XMLElement: Sendable, Equatable {
    var name: String
    var text: String
    var children: [XMLElement]

    /// The first child named `name`.
    func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }
    /// Every child named `name`, in document order.
    func children(_ name: String) -> [XMLElement] { children.filter { $0.name == name } }
    /// The text of the first child named `name`.
    func text(_ name: String) -> String? { child(name)?.text }
}

/// Parses S3 response bodies with FoundationXML's `XMLParser` (libxml2). A body that is
/// not well-formed XML is an error value saying where, never a trap.
enum S3XML {
    struct ParseError: Error, Equatable, CustomStringConvertible {
        var description: String
    }

    /// The document's root element.
    static func parse(_ bytes: [UInt8]) throws(ParseError) -> XMLElement {
        guard !bytes.isEmpty else { throw ParseError(description: "an empty body") }
        if let reason = unsafeForXMLParser(bytes) { throw ParseError(description: "malformed XML: \(reason)") }
        let builder = TreeBuilder()
        let parser = XMLParser(data: Data(bytes))
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = builder
        let ok = parser.parse()
        if !ok || builder.failure != nil {
            let reason = builder.failure ?? parser.parserError.map { "\($0.localizedDescription)" } ?? "no reason given"
            throw ParseError(description: "malformed XML at line \(parser.lineNumber), column \(parser.columnNumber): \(reason)")
        }
        guard let root = builder.root else { throw ParseError(description: "XML without a root element") }
        return root
    }

    /// Why `bytes` must not reach FoundationXML's `XMLParser`, which traps or segfaults on
    /// inputs libxml2 accepts (found by Tests/Fuzz/s3-xml): an element name whose bytes are
    /// not UTF-8, and a processing instruction without data (`<?name?>`, a NULL it passes
    /// to strlen, also when libxml2 recovers from a broken declaration and reads one
    /// further on). S3 sends UTF-8 with at most an XML declaration, and no document type
    /// (whose declarations reach more of those callbacks, and entity expansion), so: UTF-8
    /// without NUL (which also rules out UTF-16 and UTF-32); `<?` only at the very start,
    /// as a declaration made of the characters a declaration has (so that it cannot end
    /// somewhere other than where libxml2 ends it) naming no encoding but UTF-8; and no `<!`
    /// but a comment or CDATA. nil when the body is fine.
    static func unsafeForXMLParser(_ bytes: [UInt8]) -> String? {
        guard String(validating: bytes, as: UTF8.self) != nil, !bytes.contains(0) else {
            return "the body is not UTF-8 text"
        }
        let lt = UInt8(ascii: "<"), question = UInt8(ascii: "?"), bang = UInt8(ascii: "!")
        // Bytes, not Characters: a combining mark after "<" must not hide a "?" or "!".
        for index in bytes.indices.dropLast() where bytes[index] == lt {
            let next = bytes[index + 1]
            if next == question {
                if index != 0 { return "a processing instruction (S3 sends none)" }
                if let reason = unsafeDeclaration(bytes) { return reason }
            } else if next == bang {
                let rest = bytes[(index + 2)...]
                if !rest.starts(with: "--".utf8), !rest.starts(with: "[CDATA[".utf8) {
                    return "a document type or markup declaration (S3 sends none)"
                }
            }
        }
        return nil
    }

    /// `bytes` starts with `<?`: nil when that is an XML declaration S3 could send.
    private static func unsafeDeclaration(_ bytes: [UInt8]) -> String? {
        let whitespace: [UInt8] = [0x20, 0x09, 0x0A, 0x0D]
        guard bytes.starts(with: "<?xml".utf8), bytes.count > 5, whitespace.contains(bytes[5]) else {
            return "a processing instruction (S3 sends none)"
        }
        guard let end = (5..<bytes.count - 1).first(where: { bytes[$0] == UInt8(ascii: "?") && bytes[$0 + 1] == UInt8(ascii: ">") }) else {
            return "an XML declaration without its end (?>)"
        }
        // version="1.0" encoding='utf-8' standalone="yes": letters, digits and these.
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=\"'.-_:".utf8).union(whitespace)
        guard bytes[5..<end].allSatisfy(allowed.contains) else {
            return "an XML declaration holding more than version, encoding and standalone"
        }
        let declaration = String(decoding: bytes[..<end], as: UTF8.self).lowercased()
        if declaration.contains("encoding"), !declaration.contains("\"utf-8\""), !declaration.contains("'utf-8'") {
            return "the XML declaration names an encoding other than UTF-8"
        }
        return nil
    }

    /// Builds the tree; used by one parser on one thread.
    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var stack: [XMLElement] = []
        var root: XMLElement?
        var failure: String?
        /// Bounds what a hostile or broken server can make the plugin hold.
        private let maxDepth = 32

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
            if stack.count >= maxDepth {
                failure = "elements nested deeper than \(maxDepth)"
                parser.abortParsing()
                return
            }
            stack.append(XMLElement(name: elementName, text: "", children: []))
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName qName: String?) {
            guard let done = stack.popLast() else { return }
            if stack.isEmpty {
                root = done
            } else {
                stack[stack.count - 1].children.append(done)
            }
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
            if failure == nil { failure = "\(parseError.localizedDescription)" }
        }
    }
}

/// S3's `<Error>` document.
struct S3ErrorBody: Sendable, Equatable {
    var code: String
    var message: String
    var requestID: String?
    /// Other fields S3 adds to explain (BucketName, Region, ServerTime, RequestTime, ...).
    var fields: [String: String]

    init(code: String, message: String, requestID: String? = nil, fields: [String: String] = [:]) {
        self.code = code
        self.message = message
        self.requestID = requestID
        self.fields = fields
    }

    /// Reads an `<Error>` document.
    static func parse(_ bytes: [UInt8]) throws(S3XML.ParseError) -> S3ErrorBody {
        let root = try S3XML.parse(bytes)
        guard root.name == "Error" else {
            throw S3XML.ParseError(description: "expected an <Error> document, found <\(root.name)>")
        }
        guard let code = root.text("Code"), !code.isEmpty else {
            throw S3XML.ParseError(description: "expected <Code> in the <Error> document, found none")
        }
        var fields: [String: String] = [:]
        for child in root.children where !["Code", "Message", "RequestId"].contains(child.name) {
            fields[child.name] = child.text
        }
        return S3ErrorBody(code: code, message: root.text("Message") ?? "", requestID: root.text("RequestId"), fields: fields)
    }
}

/// One page of ListObjectsV2 (`<ListBucketResult>`), keys decoded.
struct S3ListPage: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var key: String
        var size: Int
        var etag: String
        var lastModified: String
    }

    var entries: [Entry]
    var isTruncated: Bool
    var nextContinuationToken: String?

    /// Reads a `<ListBucketResult>`; keys are URL-decoded when the document says
    /// `<EncodingType>url</EncodingType>`.
    static func parse(_ bytes: [UInt8]) throws(S3XML.ParseError) -> S3ListPage {
        let root = try S3XML.parse(bytes)
        guard root.name == "ListBucketResult" else {
            throw S3XML.ParseError(description: "expected a <ListBucketResult> document, found <\(root.name)>")
        }
        let urlEncoded = root.text("EncodingType")?.lowercased() == "url"
        var entries: [Entry] = []
        for (index, contents) in root.children("Contents").enumerated() {
            guard let rawKey = contents.text("Key") else {
                throw S3XML.ParseError(description: "expected <Key> in <Contents> number \(index + 1), found none")
            }
            let key: String
            if urlEncoded {
                guard let bytes = S3URIEncoding.decodeFormComponent(rawKey), let decoded = String(validating: bytes, as: UTF8.self) else {
                    throw S3XML.ParseError(description: "expected a URL-encoded UTF-8 <Key> in <Contents> number \(index + 1), found text that does not decode")
                }
                key = decoded
            } else {
                key = rawKey
            }
            guard let sizeText = contents.text("Size"), let size = Int(sizeText), size >= 0 else {
                throw S3XML.ParseError(description: "expected a non-negative integer <Size> in <Contents> number \(index + 1), found \(contents.text("Size").map { "\"\($0.prefix(40))\"" } ?? "none")")
            }
            guard let modified = contents.text("LastModified") else {
                throw S3XML.ParseError(description: "expected <LastModified> in <Contents> number \(index + 1), found none")
            }
            entries.append(Entry(key: key, size: size, etag: contents.text("ETag") ?? "", lastModified: modified))
        }
        let truncatedText = root.text("IsTruncated")
        guard let truncatedText, truncatedText == "true" || truncatedText == "false" else {
            throw S3XML.ParseError(description: "expected <IsTruncated> true or false, found \(truncatedText.map { "\"\($0.prefix(40))\"" } ?? "none")")
        }
        let isTruncated = truncatedText == "true"
        let next = root.text("NextContinuationToken").flatMap { $0.isEmpty ? nil : $0 }
        if isTruncated && next == nil {
            throw S3XML.ParseError(description: "expected <NextContinuationToken> in a truncated listing, found none")
        }
        return S3ListPage(entries: entries, isTruncated: isTruncated, nextContinuationToken: isTruncated ? next : nil)
    }
}
