import PlugboardAPI
import PlugboardBytes

/// A plugin file in a store, as a manifest's `source` names it: `s3://bucket/key` (a
/// SigV4-signed GET, path-style, against the endpoint the AWS settings name), or an
/// `http://` or `https://` URL. Which bytes are wanted is the entry's `sha256`, not the
/// URL: the store only says where to look.
public struct RemoteSource: Sendable, Hashable, CustomStringConvertible {
    public enum Location: Sendable, Hashable {
        case s3(bucket: String, key: String)
        /// An absolute `http://` URL, as written.
        case http(String)
        /// An absolute `https://` URL, as written.
        case https(String)
    }

    /// The URL as the manifest wrote it.
    public let url: String
    public let location: Location

    /// The URL as messages and logs show it: without its query, which may carry a token
    /// (a presigned URL's signature), written `?…` when there was one.
    public var shown: String {
        guard let query = url.firstIndex(of: "?") else { return url }
        return "\(url[..<query])?…"
    }

    public var description: String { shown }

    /// The schemes a source may have, for messages.
    static let schemes = "s3://, http:// or https://"

    /// Reads `text`; the error is why it is not a source, for the manifest's message.
    public static func parse(_ text: String) -> Result<RemoteSource, Refusal> {
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else {
            return .failure(Refusal("a URL with a space or a control character", hint: "Percent-encode the URL (a space is %20)."))
        }
        if text.hasPrefix("s3://") {
            let rest = text.dropFirst("s3://".count)
            guard let slash = rest.firstIndex(of: "/") else {
                return .failure(Refusal("an s3:// URL without a key", hint: "Write s3://bucket/key, such as the source plugboard publish prints."))
            }
            let bucket = String(rest[..<slash])
            let key = String(rest[rest.index(after: slash)...])
            guard isBucketName(bucket) else {
                return .failure(Refusal("bucket \(PlugboardError.quoted(bucket)), which is not an S3 bucket name",
                                        hint: "Write s3://bucket/key with a bucket of 3 to 255 letters, digits, \".\", \"-\" and \"_\"."))
            }
            let segments = key.split(separator: "/", omittingEmptySubsequences: false)
            guard !key.isEmpty, !segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
                return .failure(Refusal("key \(PlugboardError.quoted(key)), which is empty or has an empty, \".\" or \"..\" segment",
                                        hint: "Write the object's key after the bucket, such as plugins/S3Storage/<sha256>.so."))
            }
            return .success(RemoteSource(url: text, location: .s3(bucket: bucket, key: key)))
        }
        for (scheme, make) in [("http://", Location.http), ("https://", Location.https)] where text.lowercased().hasPrefix(scheme) {
            let rest = text.dropFirst(scheme.count)
            let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
            guard !authority.isEmpty, !authority.hasPrefix(":") else {
                return .failure(Refusal("a URL without a host", hint: "Write \(scheme)host[:port]/path."))
            }
            guard !authority.contains("@") else {
                // The text may hold a password: say what it is, never echo it.
                return .failure(Refusal("a URL with a user name or password", hint: "Remove them: the store is reached without credentials in the URL."))
            }
            guard !rest.contains("#") else {
                return .failure(Refusal("a URL with a fragment (#)", hint: "Remove the fragment."))
            }
            return .success(RemoteSource(url: text, location: make(text)))
        }
        return .failure(Refusal("a value not starting with \(schemes)",
                                hint: "Write s3://bucket/key or an http(s):// URL; a local file is \"path\", a product is \"product\"."))
    }

    /// Why a text is not a source: what was found, and what to write instead.
    public struct Refusal: Error, Sendable, Equatable {
        public var found: String
        public var hint: String

        init(_ found: String, hint: String) {
            self.found = found
            self.hint = hint
        }
    }

    /// S3's bucket names, with the legacy capitals and underscores a path-style request
    /// can still name.
    private static func isBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...255).contains(bytes.count) else { return false }
        return bytes.allSatisfy { PercentEncoding.isUnreserved($0) && $0 != UInt8(ascii: "~") }
    }
}
