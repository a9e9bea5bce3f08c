#if canImport(Glibc)
import Glibc
#endif
import PlugboardAPI
import PlugboardHTTPCodec

/// Parses one complete header block (request line, fields, final empty line already
/// found by ``RequestReader``) into a ``RequestHead``, deciding the body's framing by
/// RFC 9112 section 6: every message whose length could be read two ways is refused, so
/// that no proxy in front can see different request boundaries (request smuggling).
enum RequestHeadParser {
    /// `bytes[range]` holds the request line and the fields, each ending in CRLF, and the
    /// empty line's CRLF; `lineEnd` is where the request line's CR is.
    static func parse(_ bytes: [UInt8], _ range: Range<Int>, requestLineEnd lineEnd: Int,
                      limits: HTTPLimits) throws(HTTPError) -> RequestHead {
        let (method, target, version) = try requestLine(bytes, range.lowerBound..<lineEnd)
        // The fields' lines with their CRLFs, without the empty line that ends the block:
        // the head's one copy of them, which its fields point into.
        let headers = try fields(Array(bytes[(lineEnd + 2)..<(range.upperBound - 2)]), limits: limits)
        return try frame(method: method, target: target, version: version, headers: headers, limits: limits)
    }

    /// The header fields of `section`, lines that each end in CRLF.
    static func fields(_ section: [UInt8], limits: HTTPLimits) throws(HTTPError) -> HTTPHeaders {
        var lines: [HTTPFieldLine] = []
        // Room for what clients usually send, so that the array is not regrown field by field.
        lines.reserveCapacity(8)
        var i = 0
        while i < section.count {
            let j = lineEnd(section, from: i)
            lines.append(try field(section, i..<j))
            guard lines.count <= limits.maxHeaderCount else {
                throw HTTPError.make(431, .httpHeadersTooLarge, "too many header fields",
                                     detail: "The limit is \(limits.maxHeaderCount) fields.",
                                     hint: "Send fewer header fields.")
            }
            i = j + 2
        }
        return HTTPHeaders(bytes: section, lines: lines)
    }

    /// Where the first CR at or after `i` is, or the end: found with `memchr`, not a
    /// checked step a byte.
    private static func lineEnd(_ b: [UInt8], from i: Int) -> Int {
        b.withUnsafeBufferPointer { raw in
            guard let hit = memchr(raw.baseAddress! + i, Int32(HTTPByte.cr), raw.count - i) else { return raw.count }
            return UnsafeRawPointer(hit) - UnsafeRawPointer(raw.baseAddress!)
        }
    }

    static func requestLine(_ b: [UInt8], _ r: Range<Int>) throws(HTTPError) -> (String, String, HTTPVersion) {
        precondition(r.lowerBound >= 0 && r.upperBound <= b.count, "a request line outside its buffer")
        // Both spaces found and method and target checked in one walk over the contiguous
        // bytes: the slices' generic searches checked every index of every request line.
        let (sp1, methodIsToken) = b.withUnsafeBufferPointer { run($0, r.lowerBound..<r.upperBound, of: HTTPByte.isToken) }
        guard let sp1 else {
            throw HTTPError.badRequest("malformed request line", detail: "Expected METHOD SP TARGET SP VERSION.")
        }
        guard sp1 > r.lowerBound, methodIsToken else {
            throw HTTPError.badRequest("invalid method", detail: "A method is a token (RFC 9110 section 9.1).")
        }
        let rest = (sp1 + 1)..<r.upperBound
        let (found, targetIsTarget) = b.withUnsafeBufferPointer { run($0, rest, of: HTTPByte.isTarget) }
        guard let sp2 = found, sp2 > rest.lowerBound else {
            throw HTTPError.badRequest("malformed request line", detail: "Expected METHOD SP TARGET SP VERSION.")
        }
        guard targetIsTarget else {
            throw HTTPError.badRequest("invalid request target",
                                       detail: "The target holds a byte outside visible ASCII, or a fragment.",
                                       hint: "Percent-encode spaces, controls and non-ASCII bytes.")
        }
        let targetBytes = b[rest.lowerBound..<sp2]
        guard b[rest.lowerBound] == UInt8(ascii: "/") else {
            throw HTTPError.badRequest("unsupported request target form",
                                       detail: "Only origin-form targets (starting with /) are served.")
        }
        let versionBytes = b[(sp2 + 1)..<r.upperBound]
        let version: HTTPVersion
        // Compared as one 8-byte word: elementsEqual over a String's view walked both.
        let word: UInt64? = versionBytes.count == 8
            ? b.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: sp2 + 1, as: UInt64.self) } : nil
        if word == Self.http11 {
            version = .http11
        } else if word == Self.http10 {
            version = .http10
        } else {
            throw HTTPError.badRequest("unsupported HTTP version \"\(String(decoding: versionBytes.prefix(16), as: UTF8.self))\"",
                                       detail: "This server speaks HTTP/1.1 and HTTP/1.0.")
        }
        return (method(b, r.lowerBound..<sp1), String(decoding: targetBytes, as: UTF8.self), version)
    }

    /// The first space in `b[r]`, and whether every byte before it passes `test`; nil when
    /// there is no space.
    @inline(__always)
    private static func run(_ b: UnsafeBufferPointer<UInt8>, _ r: Range<Int>,
                            of test: (UInt8) -> Bool) -> (Int?, Bool) {
        var i = r.lowerBound
        while i < r.upperBound && test(b[i]) { i += 1 }
        if i < r.upperBound && b[i] == HTTPByte.space { return (i, true) }
        // A byte that fails the test (the space fails both tests used here): the space,
        // if any, is further on.
        while i < r.upperBound && b[i] != HTTPByte.space { i += 1 }
        return (i < r.upperBound ? i : nil, false)
    }

    /// The method's string: the usual ones are constants, not decoded from the bytes.
    private static func method(_ b: [UInt8], _ r: Range<Int>) -> String {
        let first = b[r.lowerBound]
        if r.count == 3 && first == UInt8(ascii: "G") && b[r.lowerBound + 1] == UInt8(ascii: "E")
            && b[r.lowerBound + 2] == UInt8(ascii: "T") {
            return "GET"
        }
        if r.count == 4 && first == UInt8(ascii: "H") && b[r.lowerBound + 1] == UInt8(ascii: "E")
            && b[r.lowerBound + 2] == UInt8(ascii: "A") && b[r.lowerBound + 3] == UInt8(ascii: "D") {
            return "HEAD"
        }
        return String(decoding: b[r], as: UTF8.self)
    }

    private static let http11 = Array("HTTP/1.1".utf8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    private static let http10 = Array("HTTP/1.0".utf8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }

    /// One `name: value` line (without its CRLF).
    static func field(_ b: [UInt8], _ r: Range<Int>) throws(HTTPError) -> HTTPFieldLine {
        do throws(HTTPSyntaxError) {
            return try HTTPFieldLine.parse(b, r)
        } catch {
            throw HTTPError.badRequest(error)
        }
    }

    static func frame(method: String, target: String, version: HTTPVersion, headers: HTTPHeaders,
                      limits: HTTPLimits) throws(HTTPError) -> RequestHead {
        let hosts = headers.count(of: "host")
        if version == .http11 && hosts != 1 || hosts > 1 {
            throw HTTPError.badRequest(hosts == 0 ? "missing Host header" : "more than one Host header",
                                       detail: "An HTTP/1.1 request carries exactly one Host field (RFC 9112 section 3.2).")
        }
        let codings = headers.values("transfer-encoding")
        let lengths = headers.values("content-length")
        var framing = BodyFraming.none
        if !codings.isEmpty {
            guard lengths.isEmpty else {
                throw HTTPError.badRequest("both Content-Length and Transfer-Encoding",
                                           detail: "A request framed two ways is refused (RFC 9112 section 6.1).",
                                           hint: "Send one of them.")
            }
            guard version == .http11 else {
                throw HTTPError.badRequest("Transfer-Encoding in an HTTP/1.0 request",
                                           hint: "Send Content-Length, or use HTTP/1.1.")
            }
            let list = codings.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
                .map { $0.trimmingOWS().lowercased() }
            guard list == ["chunked"] else {
                throw HTTPError.notImplemented("unsupported transfer coding \"\(codings.joined(separator: ", "))\"",
                                               detail: "Only Transfer-Encoding: chunked is implemented.",
                                               hint: "Send the body with Content-Length, or chunked alone.")
            }
            framing = .chunked
        } else if !lengths.isEmpty {
            guard lengths.count == 1 else {
                throw HTTPError.badRequest("more than one Content-Length header",
                                           detail: "Found: \(lengths.joined(separator: ", ")).", hint: "Send one Content-Length.")
            }
            framing = .length(try contentLength(lengths[0], limits: limits))
        } else if method == "PUT" {
            throw HTTPError.lengthRequired(method)
        }
        // Most requests carry no Connection field: the version alone decides.
        let connection = headers.values("connection")
        let keepAlive = connection.isEmpty ? version == .http11
            : HTTPPersistence.keepAlive(minorVersion: version == .http11 ? 1 : 0, connection: connection)
        let expect = headers["expect"]?.lowercased()
        let expectsContinue = version == .http11 && expect == "100-continue" && framing != .none && framing != .length(0)
        return RequestHead(method: method, target: target, version: version, headers: headers, framing: framing,
                           keepAlive: keepAlive, expectsContinue: expectsContinue)
    }

    /// `1*DIGIT`, at most the body limit; no list, no sign, no overflow.
    static func contentLength(_ text: String, limits: HTTPLimits) throws(HTTPError) -> Int {
        do throws(HTTPSyntaxError) {
            return try HTTPNumber.contentLength(text.utf8, limit: limits.maxBodyBytes)
        } catch where error.kind == .numberTooLarge {
            throw HTTPError.payloadTooLarge(limit: limits.maxBodyBytes, found: "Content-Length \(text.prefix(40))")
        } catch {
            throw HTTPError.badRequest("invalid Content-Length \"\(text.prefix(40))\"", detail: error.detail)
        }
    }
}
