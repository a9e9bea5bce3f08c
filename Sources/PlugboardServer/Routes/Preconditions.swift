import PlugboardAPI
import PlugboardHTTP

/// A request's conditional headers (RFC 9110 section 13): `If-Match`, `If-None-Match`,
/// `If-Modified-Since` and `If-Unmodified-Since`, evaluated in the order section 13.2.2
/// gives. ETags are compared as the strings the API sends (quoted hex MD5); a weak
/// `W/` tag never matches `If-Match` (strong comparison) and matches `If-None-Match`
/// (weak comparison). A date that does not parse is ignored, as the RFC says. HTTP dates
/// have whole seconds, so times are compared by their whole seconds.
struct Preconditions {
    private enum Tags { case any, list([Substring]) }

    private let ifMatch: Tags?
    private let ifNoneMatch: Tags?
    private let ifModifiedSince: Timestamp?
    private let ifUnmodifiedSince: Timestamp?

    init(_ headers: HTTPHeaders) {
        // Most requests carry no condition: counted first, no array made for an absent one.
        ifMatch = headers.count(of: "if-match") == 0 ? nil : Self.tags(headers.values("if-match"))
        ifNoneMatch = headers.count(of: "if-none-match") == 0 ? nil : Self.tags(headers.values("if-none-match"))
        ifModifiedSince = headers["if-modified-since"].flatMap { Timestamp(httpDate: $0) }
        ifUnmodifiedSince = headers["if-unmodified-since"].flatMap { Timestamp(httpDate: $0) }
    }

    /// The storage's own atomic condition when the headers are exactly one it has:
    /// none at all, `If-None-Match: *` alone, or one strong ETag in `If-Match` alone. Nil
    /// when the conditions must be evaluated against the current object first.
    var directWriteCondition: WriteCondition? {
        guard ifModifiedSince == nil, ifUnmodifiedSince == nil else { return nil }
        switch (ifMatch, ifNoneMatch) {
        case (nil, nil): return WriteCondition.none
        case (nil, .any?): return .absent
        case (.list(let tags)?, nil):
            guard tags.count == 1, let etag = Self.strong(tags[0]) else { return nil }
            return .matches(etag: etag)
        default: return nil
        }
    }

    /// The answer when a condition fails for the object `current` (nil: none under the
    /// key): 412, or 304 for a read whose `If-None-Match` or `If-Modified-Since` says the
    /// client's copy is current. Nil when the request goes ahead.
    func refusal(for current: ObjectInfo?, reading: Bool) -> HTTPResponse? {
        if let ifMatch {
            guard let current, Self.matches(ifMatch, current.etag, weak: false) else { return failed("If-Match", current) }
        } else if let ifUnmodifiedSince, let current, current.lastModified.seconds > ifUnmodifiedSince.seconds {
            return failed("If-Unmodified-Since", current)
        }
        if let ifNoneMatch {
            if let current, Self.matches(ifNoneMatch, current.etag, weak: true) {
                return reading ? notModified(current) : failed("If-None-Match", current)
            }
        } else if reading, let ifModifiedSince, let current, current.lastModified.seconds <= ifModifiedSince.seconds {
            return notModified(current)
        }
        return nil
    }

    private func failed(_ header: String, _ current: ObjectInfo?) -> HTTPResponse {
        let found = current.map { "the object's ETag is \"\($0.etag)\", last modified \($0.lastModified.httpDate)" }
            ?? "no object is under the key"
        return ErrorResponses.response(PlugboardError(.storagePreconditionFailed, "the request's \(header) condition does not hold",
            detail: "Found: \(found).", hint: "Read the object again (HEAD) and retry with its current ETag."))
    }

    /// 304 carries the validators the 200 would have (RFC 9110 section 15.4.5).
    private func notModified(_ current: ObjectInfo) -> HTTPResponse {
        HTTPResponse(status: 304, headers: ObjectRoutes.validators(current))
    }

    private static func tags(_ values: [String]) -> Tags? {
        guard !values.isEmpty else { return nil }
        var list: [Substring] = []
        for value in values {
            for item in value.split(separator: ",") {
                let tag = item.trimmingSpaces
                if tag == "*" { return .any }
                if !tag.isEmpty { list.append(tag) }
            }
        }
        return .list(list)
    }

    private static func matches(_ tags: Tags, _ etag: String, weak: Bool) -> Bool {
        switch tags {
        case .any: return true
        case .list(let list):
            return list.contains { tag in
                if tag.hasPrefix("W/") { return weak && unquoted(tag.dropFirst(2)) == etag[...] }
                return unquoted(tag) == etag[...]
            }
        }
    }

    /// The opaque part of a strong tag (`"abc"` → `abc`), or nil for a weak or malformed one.
    private static func strong(_ tag: Substring) -> String? {
        guard !tag.hasPrefix("W/"), let inner = unquoted(tag) else { return nil }
        return String(inner)
    }

    private static func unquoted(_ tag: Substring) -> Substring? {
        guard tag.count >= 2, tag.first == "\"", tag.last == "\"" else { return nil }
        return tag.dropFirst().dropLast()
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var view = self
        while let c = view.first, c == " " || c == "\t" { view.removeFirst() }
        while let c = view.last, c == " " || c == "\t" { view.removeLast() }
        return view
    }
}
