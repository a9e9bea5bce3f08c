import PlugboardBytes
/// `multipart/form-data` (RFC 7578 over RFC 2046's framing) as a push parser: the body is
/// fed in whatever chunks the connection delivers, and each call answers what those bytes
/// completed (a part's headers, some of its content, its end). A delimiter may be split
/// across any number of chunks; the parser keeps at most a delimiter's length of bytes
/// back, so a part's content passes through without ever being held whole.
///
/// ```swift
/// var parser = try MultipartParser(boundary: "xYzZY")
/// for chunk in chunks { for event in try parser.feed(chunk) { ... } }
/// try parser.finish()
/// ```
///
/// Refusals are S3's `MalformedPOSTRequest` (or `MaxPostPreDataLengthExceededError` for a
/// preamble or part head over its limit), naming what was expected and what was found.
struct MultipartParser: Sendable {
    /// What the bytes fed so far completed, in order.
    enum Event: Sendable, Equatable {
        /// A part's head was read; its content follows.
        case partBegan(MultipartPartHeaders)
        /// Some of the current part's content (never empty).
        case content([UInt8])
        /// The current part ended (its delimiter was read).
        case partEnded
    }

    /// The longest head of one part, its blank line included: a form field's head is
    /// about 100 bytes, S3 allows the whole form 20 KB before the file.
    static let maxHeadBytes = 8 << 10
    /// The most bytes before the first delimiter (browsers send none).
    static let maxPreambleBytes = 8 << 10
    /// RFC 2046 section 5.1.1: 1 to 70 characters.
    static let maxBoundaryBytes = 70

    private enum State: Sendable {
        case preamble
        /// After a delimiter: `--` (the last one) or optional white space and CRLF.
        case afterDelimiter
        case head
        case content
        /// After the close delimiter: ignored to the end.
        case epilogue
    }

    /// `CRLF--boundary`: the CRLF before it belongs to the delimiter, not to the content.
    private let delimiter: [UInt8]
    /// Boyer-Moore-Horspool shifts for ``delimiter``, by byte value.
    private let shifts: [Int]
    private var buffer: [UInt8]
    private var state = State.preamble
    private var preambleBytes = 0
    private var inPart = false

    /// Whether the close delimiter was read (what follows it is ignored).
    var isComplete: Bool {
        if case .epilogue = state { return true }
        return false
    }

    init(boundary: String) throws(S3Error) {
        let bytes = Array(boundary.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxBoundaryBytes, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F || $0 == 0x20 }),
              bytes.last != 0x20 else {
            throw Self.malformed("expected a boundary of 1 to 70 printable ASCII characters in the Content-Type, found \"\(boundary.prefix(80))\"")
        }
        delimiter = [0x0D, 0x0A, 0x2D, 0x2D] + bytes
        var shifts = [Int](repeating: delimiter.count, count: 256)
        for i in 0..<(delimiter.count - 1) { shifts[Int(delimiter[i])] = delimiter.count - 1 - i }
        self.shifts = shifts
        // The first delimiter may open the body, with no CRLF before it: one is assumed.
        buffer = [0x0D, 0x0A]
    }

    /// The events `chunk` completes.
    mutating func feed(_ chunk: [UInt8]) throws(S3Error) -> [Event] {
        if case .epilogue = state { return [] }
        if buffer.isEmpty { buffer = chunk } else { buffer += chunk }
        var events: [Event] = []
        var position = 0
        defer {
            if position >= buffer.count { buffer.removeAll(keepingCapacity: true) } else if position > 0 { buffer.removeFirst(position) }
        }
        scanning: while true {
            switch state {
            case .preamble:
                if let found = find(from: position) {
                    try countPreamble(found - position)
                    position = found + delimiter.count
                    state = .afterDelimiter
                } else {
                    let kept = max(position, buffer.count - (delimiter.count - 1))
                    try countPreamble(kept - position)
                    position = kept
                    break scanning
                }
            case .afterDelimiter:
                var i = position
                while i < buffer.count, buffer[i] == 0x20 || buffer[i] == 0x09 { i += 1 }
                guard i - position <= 64 else {
                    throw Self.malformed("expected CRLF after a boundary, found more than 64 spaces")
                }
                guard buffer.count - position >= 2, buffer.count - i >= 2 else { break scanning }
                if i == position, buffer[i] == 0x2D, buffer[i + 1] == 0x2D {
                    state = .epilogue
                    position = buffer.count
                    break scanning
                }
                guard buffer[i] == 0x0D, buffer[i + 1] == 0x0A else {
                    throw Self.malformed("expected CRLF or \"--\" after a boundary, found \(Self.quoted(buffer[i..<min(i + 16, buffer.count)]))")
                }
                position = i + 2
                state = .head
            case .head:
                guard let end = headEnd(from: position) else {
                    guard buffer.count - position <= Self.maxHeadBytes else { throw Self.headTooLong() }
                    break scanning
                }
                guard end - position <= Self.maxHeadBytes else { throw Self.headTooLong() }
                let headers = try MultipartPartHeaders(buffer[position..<end])
                events.append(.partBegan(headers))
                inPart = true
                // The blank line: the head either is empty (CRLF) or ends in CRLF CRLF.
                position = end + (end == position ? 2 : 4)
                state = .content
            case .content:
                if let found = find(from: position) {
                    if found > position { events.append(.content(Array(buffer[position..<found]))) }
                    events.append(.partEnded)
                    inPart = false
                    position = found + delimiter.count
                    state = .afterDelimiter
                } else {
                    let safe = buffer.count - (delimiter.count - 1)
                    if safe > position {
                        events.append(.content(Array(buffer[position..<safe])))
                        position = safe
                    }
                    break scanning
                }
            case .epilogue:
                position = buffer.count
                break scanning
            }
        }
        return events
    }

    /// The body ended: refused unless the close delimiter was read.
    func finish() throws(S3Error) {
        switch state {
        case .epilogue: return
        case .preamble: throw Self.malformed("expected a boundary line (\"--\" and the Content-Type's boundary), found none before the body ended")
        case .content: throw Self.malformed("expected the part to end with a boundary line, found the end of the body")
        case .head: throw Self.malformed("expected a part's headers to end with a blank line, found the end of the body")
        case .afterDelimiter: throw Self.malformed("expected the closing boundary (\"--\" after the last one), found the end of the body")
        }
    }

    // MARK: Pieces

    /// Where ``delimiter`` begins in ``buffer`` at or after `start`.
    private func find(from start: Int) -> Int? {
        let m = delimiter.count
        return buffer.withUnsafeBufferPointer { haystack -> Int? in
            delimiter.withUnsafeBufferPointer { needle -> Int? in
                var i = start
                while i + m <= haystack.count {
                    var j = m - 1
                    while haystack[i + j] == needle[j] {
                        if j == 0 { return i }
                        j -= 1
                    }
                    i += shifts[Int(haystack[i + m - 1])]
                }
                return nil
            }
        }
    }

    /// Where the head that starts at `start` ends: `start` itself for an empty head (the
    /// blank line at once), else the CRLF that precedes the blank line.
    private func headEnd(from start: Int) -> Int? {
        if buffer.count - start >= 2, buffer[start] == 0x0D, buffer[start + 1] == 0x0A { return start }
        var i = start
        while i + 4 <= buffer.count {
            if buffer[i] == 0x0D, buffer[i + 1] == 0x0A, buffer[i + 2] == 0x0D, buffer[i + 3] == 0x0A { return i }
            i += 1
        }
        return nil
    }

    private mutating func countPreamble(_ n: Int) throws(S3Error) {
        preambleBytes += n
        guard preambleBytes <= Self.maxPreambleBytes else {
            throw Self.malformed("expected the body to start with a boundary line, found more than \(Self.maxPreambleBytes) bytes before the first")
        }
    }

    static func malformed(_ detail: String) -> S3Error {
        S3Error("MalformedPOSTRequest", status: 400,
                "The body of your POST request is not well-formed multipart/form-data: \(detail).")
    }

    private static func headTooLong() -> S3Error {
        S3Error("MaxPostPreDataLengthExceededError", status: 400,
                "Your POST request fields preceding the upload file were too large: expected a part's headers within \(maxHeadBytes) bytes, found more.")
    }

    /// A few bytes of the body, quoted for a message (non-printable bytes as `\xNN`).
    static func quoted(_ bytes: ArraySlice<UInt8>) -> String {
        var out = "\""
        for b in bytes {
            if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "\\x" + String(decoding: [HexDigits.lower(b >> 4), HexDigits.lower(b & 0x0F)], as: UTF8.self)
            }
        }
        return out + "\""
    }
}

/// A part's head: the form field's name, a file's name and type.
struct MultipartPartHeaders: Sendable, Equatable {
    /// `Content-Disposition`'s `name`.
    var name: String
    /// `Content-Disposition`'s `filename`, as sent (browsers send the name without a path).
    var filename: String?
    var contentType: String?

    init(name: String, filename: String? = nil, contentType: String? = nil) {
        self.name = name
        self.filename = filename
        self.contentType = contentType
    }

    /// The head's lines (without the blank line). Header names are read without case; a
    /// line that starts with white space continues the one before (obsolete folding).
    init(_ head: ArraySlice<UInt8>) throws(S3Error) {
        var lines: [[UInt8]] = []
        var start = head.startIndex
        var i = head.startIndex
        while i <= head.endIndex {
            if i == head.endIndex || (head[i] == 0x0D && i + 1 < head.endIndex && head[i + 1] == 0x0A) {
                let line = Array(head[start..<i])
                if let first = line.first, first == 0x20 || first == 0x09, !lines.isEmpty {
                    lines[lines.count - 1] += [0x20] + line
                } else {
                    lines.append(line)
                }
                i += 2
                start = i
            } else {
                i += 1
            }
        }
        var disposition: String?
        var contentType: String?
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: 0x3A), colon > 0 else {
                throw MultipartParser.malformed("expected a part header \"Name: value\", found \(MultipartParser.quoted(line.prefix(64)[...]))")
            }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = ASCIIText.trimmed(String(decoding: line[(colon + 1)...], as: UTF8.self))
            switch name {
            case "content-disposition": disposition = value
            case "content-type": contentType = value
            default: continue
            }
        }
        guard let disposition else {
            throw MultipartParser.malformed("expected every part to have a Content-Disposition header, found a part without one")
        }
        let (type, parameters) = Self.parameters(disposition)
        guard type.lowercased() == "form-data" else {
            throw MultipartParser.malformed("expected Content-Disposition form-data, found \"\(type.prefix(40))\"")
        }
        guard let name = parameters.first(where: { $0.0 == "name" })?.1 else {
            throw MultipartParser.malformed("expected Content-Disposition to name the form field (name=\"...\"), found \"\(disposition.prefix(120))\"")
        }
        self.init(name: name, filename: parameters.first { $0.0 == "filename" }?.1, contentType: contentType)
    }

    /// `form-data; name="key"; filename="a.txt"` as its type and its parameters (names
    /// lower-cased). A quoted value keeps its backslashes but before `"` and `\`: old
    /// browsers send Windows paths unescaped, new ones escape `"` as `%22`.
    static func parameters(_ text: String) -> (String, [(String, String)]) {
        let scalars = Array(text.unicodeScalars)
        var i = 0
        func skipSpace() { while i < scalars.count, scalars[i] == " " || scalars[i] == "\t" { i += 1 } }
        func token() -> String {
            var out = String.UnicodeScalarView()
            while i < scalars.count, scalars[i] != ";", scalars[i] != "=" { out.append(scalars[i]); i += 1 }
            return ASCIIText.trimmed(String(out))
        }
        let type = token()
        var parameters: [(String, String)] = []
        while i < scalars.count {
            // At a ";" (or a stray "="): the next parameter.
            i += 1
            skipSpace()
            let name = token().lowercased()
            guard i < scalars.count, scalars[i] == "=" else {
                continue
            }
            i += 1
            skipSpace()
            var value = String.UnicodeScalarView()
            if i < scalars.count, scalars[i] == "\"" {
                i += 1
                while i < scalars.count, scalars[i] != "\"" {
                    if scalars[i] == "\\", i + 1 < scalars.count, scalars[i + 1] == "\"" || scalars[i + 1] == "\\" { i += 1 }
                    value.append(scalars[i])
                    i += 1
                }
                i += 1
                while i < scalars.count, scalars[i] != ";" { i += 1 }
                parameters.append((name, String(value)))
            } else {
                // Unquoted, to the next ";": a boundary such as `----=_Part_1` is sent
                // unquoted by some clients, though its "=" asks for quotes.
                var value = String.UnicodeScalarView()
                while i < scalars.count, scalars[i] != ";" { value.append(scalars[i]); i += 1 }
                parameters.append((name, ASCIIText.trimmed(String(value))))
            }
        }
        return (type, parameters)
    }
}
