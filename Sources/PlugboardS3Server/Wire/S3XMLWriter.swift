/// S3's response documents, written as bytes: an XML declaration, one root in S3's
/// namespace, elements with escaped text. No attributes but the root's `xmlns`, which is
/// all S3's answers use.
///
/// ```swift
/// var xml = S3XMLWriter(root: "ListAllMyBucketsResult")
/// xml.open("Buckets"); xml.element("Name", "photos"); xml.close("Buckets")
/// let body = xml.finish()
/// ```
public struct S3XMLWriter: Sendable {
    public static let namespace = "http://s3.amazonaws.com/doc/2006-03-01/"
    private var bytes: [UInt8]
    private let root: String

    /// `namespaced: false` for `<Error>`, which S3 writes without one.
    public init(root: String, namespaced: Bool = true) {
        self.root = root
        bytes = []
        bytes.reserveCapacity(512)
        bytes.append(contentsOf: "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n".utf8)
        bytes.append(contentsOf: "<\(root)".utf8)
        if namespaced { bytes.append(contentsOf: " xmlns=\"\(Self.namespace)\"".utf8) }
        bytes.append(UInt8(ascii: ">"))
    }

    public mutating func open(_ name: String) {
        bytes.append(UInt8(ascii: "<"))
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: ">"))
    }

    public mutating func close(_ name: String) {
        bytes.append(contentsOf: "</".utf8)
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: ">"))
    }

    /// `<name>text</name>`, the text escaped.
    public mutating func element(_ name: String, _ text: String) {
        open(name)
        Self.escape(text, into: &bytes)
        close(name)
    }

    public mutating func element(_ name: String, _ value: Int) { element(name, String(value)) }
    public mutating func element(_ name: String, _ value: Bool) { element(name, value ? "true" : "false") }

    /// The element only when `text` is not nil.
    public mutating func element(_ name: String, ifPresent text: String?) {
        if let text { element(name, text) }
    }

    public consuming func finish() -> [UInt8] {
        close(root)
        return bytes
    }

    /// `&`, `<`, `>`, `"` and `'` as entities, CR as a character reference (a parser
    /// would fold a literal one into LF).
    ///
    /// XML 1.0 cannot carry the other C0 control characters, U+FFFE or U+FFFF at all:
    /// not raw, and not as character references either (its well-formedness constraint
    /// "Legal Character"). AWS writes them as references (`&#x1;`), which XML 1.0 parsers
    /// refuse: Python's expat, which botocore parses with, reports "reference to invalid
    /// character number", so boto3 could not read a DeleteObjects answer for a delete that
    /// succeeded. Each becomes U+FFFD instead, so the document parses everywhere; a client
    /// that needs such keys exactly lists with `encoding-type=url`, as AWS recommends
    /// (docs/S3_API.md, "Deliberate differences").
    static func escape(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            var i = 0
            while i < utf8.count {
                let byte = utf8[i]
                switch byte {
                case UInt8(ascii: "&"): bytes.append(contentsOf: "&amp;".utf8)
                case UInt8(ascii: "<"): bytes.append(contentsOf: "&lt;".utf8)
                case UInt8(ascii: ">"): bytes.append(contentsOf: "&gt;".utf8)
                case UInt8(ascii: "\""): bytes.append(contentsOf: "&quot;".utf8)
                case UInt8(ascii: "'"): bytes.append(contentsOf: "&apos;".utf8)
                case 0x09, 0x0A: bytes.append(byte)
                case 0x0D: bytes.append(contentsOf: "&#13;".utf8)
                case 0..<0x20: bytes.append(contentsOf: replacement)
                // U+FFFE and U+FFFF, EF BF BE and EF BF BF in UTF-8.
                case 0xEF where i + 2 < utf8.count && utf8[i + 1] == 0xBF && utf8[i + 2] >= 0xBE:
                    bytes.append(contentsOf: replacement)
                    i += 2
                default: bytes.append(byte)
                }
                i += 1
            }
        }
    }

    /// U+FFFD in UTF-8.
    private static let replacement: [UInt8] = [0xEF, 0xBF, 0xBD]
}
