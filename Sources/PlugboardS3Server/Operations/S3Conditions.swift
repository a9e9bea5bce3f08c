import PlugboardAPI
import PlugboardBytes
import PlugboardHTTP

/// The conditional headers of an S3 request, evaluated against an object in the order
/// RFC 9110 section 13.2.2 gives (the order S3 documents for GetObject and HeadObject):
/// `If-Match`, else `If-Unmodified-Since`; then `If-None-Match`, else `If-Modified-Since`.
///
/// The same four conditions come as `x-amz-copy-source-if-*` on CopyObject and
/// UploadPartCopy (``copySource(_:)``); there a "not modified" outcome is a 412 too.
///
/// ETags are compared with the object's S3 ETag (the multipart one for an object completed
/// from parts), quoted or not, as S3 accepts both; a weak `W/` tag never matches
/// `If-Match` and matches `If-None-Match`. A date that does not parse is ignored (RFC
/// 9110); HTTP dates have whole seconds, so times are compared by whole seconds.
/// (Copied in spirit from PlugboardServer's `Preconditions`, which this module cannot
/// import.)
struct S3Conditions: Sendable {
    enum Tags: Sendable, Equatable { case any, list([String]) }

    /// What the conditions say about an object.
    enum Outcome: Sendable, Equatable {
        case proceed
        /// The client's copy is current (`If-None-Match` matched or `If-Modified-Since`
        /// says unchanged): a 304 for GET and HEAD, a 412 elsewhere.
        case notModified(header: String)
        /// A condition does not hold: 412, naming the header.
        case failed(header: String)
    }

    let ifMatch: Tags?
    let ifNoneMatch: Tags?
    let ifModifiedSince: Timestamp?
    let ifUnmodifiedSince: Timestamp?
    /// The header names, for the refusals (`If-Match` or `x-amz-copy-source-if-match`).
    let names: (match: String, noneMatch: String, modified: String, unmodified: String)

    /// GET and HEAD's `If-*` headers.
    init(_ headers: HTTPHeaders) {
        self.init(headers, prefix: "if-", names: ("If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"))
    }

    /// CopyObject's and UploadPartCopy's `x-amz-copy-source-if-*` headers.
    static func copySource(_ headers: HTTPHeaders) -> S3Conditions {
        S3Conditions(headers, prefix: "x-amz-copy-source-if-",
                     names: ("x-amz-copy-source-if-match", "x-amz-copy-source-if-none-match",
                             "x-amz-copy-source-if-modified-since", "x-amz-copy-source-if-unmodified-since"))
    }

    private init(_ headers: HTTPHeaders, prefix: String,
                 names: (match: String, noneMatch: String, modified: String, unmodified: String)) {
        ifMatch = Self.tags(headers.values(prefix + "match"))
        ifNoneMatch = Self.tags(headers.values(prefix + "none-match"))
        ifModifiedSince = headers[prefix + "modified-since"].flatMap { Timestamp(httpDate: $0) }
        ifUnmodifiedSince = headers[prefix + "unmodified-since"].flatMap { Timestamp(httpDate: $0) }
        self.names = names
    }

    var isEmpty: Bool { ifMatch == nil && ifNoneMatch == nil && ifModifiedSince == nil && ifUnmodifiedSince == nil }

    /// The outcome for the object `info` (which exists).
    func evaluate(_ info: ObjectInfo) -> Outcome {
        // Most reads carry no condition: no ETag to quote for them.
        if isEmpty { return .proceed }
        let etag = S3Objects.etag(info)
        if let ifMatch {
            if !Self.matches(ifMatch, etag, weak: false) { return .failed(header: names.match) }
        } else if let ifUnmodifiedSince, info.lastModified.seconds > ifUnmodifiedSince.seconds {
            return .failed(header: names.unmodified)
        }
        if let ifNoneMatch {
            if Self.matches(ifNoneMatch, etag, weak: true) { return .notModified(header: names.noneMatch) }
        } else if let ifModifiedSince, info.lastModified.seconds <= ifModifiedSince.seconds {
            return .notModified(header: names.modified)
        }
        return .proceed
    }

    /// For GET and HEAD: nil to go ahead, a 304 answer (with the validators the 200 would
    /// have, RFC 9110 section 15.4.5), or a thrown `PreconditionFailed`.
    func readRefusal(_ info: ObjectInfo) throws(S3Error) -> HTTPResponse? {
        switch evaluate(info) {
        case .proceed: return nil
        case .notModified:
            return HTTPResponse(status: 304, headers: [("ETag", S3Objects.etag(info)), ("Last-Modified", info.lastModified.httpDate)])
        case .failed(let header): throw Self.failure(header, info)
        }
    }

    /// For a copy's source: throws `PreconditionFailed` unless the conditions hold.
    func requireCopySource(_ info: ObjectInfo) throws(S3Error) {
        switch evaluate(info) {
        case .proceed: return
        case .notModified(let header), .failed(let header): throw Self.failure(header, info)
        }
    }

    static func failure(_ header: String, _ info: ObjectInfo) -> S3Error {
        var error = S3Error.preconditionFailed(header)
        error.message += " Expected the \(header) condition to hold, found the object's ETag \(S3Objects.etag(info)), last modified \(info.lastModified.httpDate)."
        return error
    }

    /// Whether `tags` names `etag` (quoted, as S3 answers it).
    static func matches(_ tags: Tags, _ etag: String, weak: Bool) -> Bool {
        switch tags {
        case .any: return true
        case .list(let list):
            return list.contains { tag in
                if tag.hasPrefix("W/") { return weak && quoted(String(tag.dropFirst(2))) == etag }
                return quoted(tag) == etag
            }
        }
    }

    /// `"abc"` as it is, `abc` quoted: S3 takes an ETag either way.
    static func quoted(_ tag: String) -> String {
        if tag.utf8.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { return tag }
        return "\"" + tag + "\""
    }

    /// A tag without its quotes.
    static func unquoted(_ tag: String) -> String {
        let q = quoted(tag)
        return String(q.dropFirst().dropLast())
    }

    static func tags(_ values: [String]) -> Tags? {
        guard !values.isEmpty else { return nil }
        var list: [String] = []
        for value in values {
            for item in value.split(separator: ",") {
                let tag = ASCIIText.trimmed(Substring(item))
                if tag == "*" { return .any }
                if !tag.isEmpty { list.append(String(tag)) }
            }
        }
        return .list(list)
    }
}
