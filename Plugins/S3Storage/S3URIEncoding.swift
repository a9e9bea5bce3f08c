import PlugboardBytes

/// S3's `UriEncode`: every byte percent-encoded (upper-case hex) except the unreserved
/// `A-Z a-z 0-9 - _ . ~` (PercentEncoding's set, `.` kept), and except `/` in paths.
/// The same text is sent and signed, except for segments made only of dots (below).
enum S3URIEncoding {
    /// A query name or value: `/` is encoded too.
    static func encodeQueryComponent(_ text: String) -> String {
        PercentEncoding.encode(text)
    }

    /// An object key as a path on the wire: `/` kept, and each segment made only of dots
    /// (`.`, `..`) written as `%2E`s, so that no HTTP layer folds it away as a dot segment.
    /// Not what is signed: see ``canonicalPath(_:)``.
    static func encodePath(_ key: String) -> String {
        key.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { segment -> String in
            if !segment.isEmpty && segment.allSatisfy({ $0 == UInt8(ascii: ".") }) {
                return String(repeating: "%2E", count: segment.count)
            }
            return PercentEncoding.encode(segment)
        }.joined(separator: "/")
    }

    /// An object key as SigV4's canonical URI has it: `UriEncode` of every segment, dots
    /// kept as they are. S3 (AWS, and Ceph RGW, which decodes the path and encodes it
    /// again) signs the canonical form of what arrives, not the bytes on the wire, so a
    /// `%2E%2E` sent for `..` is signed as `..`; signing `%2E%2E` is SignatureDoesNotMatch.
    static func canonicalPath(_ key: String) -> String {
        key.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
            .map { PercentEncoding.encode($0) }.joined(separator: "/")
    }

    /// Decodes `%XX` (either case) and, as S3's `encoding-type=url` listings use it, `+`
    /// as a space. Nil when a `%` is not followed by two hex digits.
    static func decodeFormComponent(_ text: String) -> [UInt8]? {
        PercentEncoding.decode(text.utf8, plusAsSpace: true)
    }
}
