/// A range of an object's bytes to read, in the three forms of HTTP's `Range: bytes=`
/// (RFC 9110 section 14.1.2): what a ranged `get` takes.
///
/// Offsets count from 0 and `last` is inclusive, as in the header: `.closed(first: 0,
/// last: 499)` is the first 500 bytes, `.from(500)` everything from offset 500,
/// `.suffix(500)` the last 500 bytes. Which bytes that is depends on the object's size,
/// known only to the backend: ``resolve(size:)`` turns a range into offsets.
///
/// ```swift
/// let stream = try await storage.get("video.mp4", range: .closed(first: 0, last: 1023))
/// // stream.range == 0..<1024 (or fewer when the object is smaller)
/// ```
///
/// `@frozen`: RFC 9110 has exactly these three forms, and a frozen enum lets plugins
/// switch over them without an `@unknown default` (its layout is part of the plugin ABI).
@frozen
public enum ByteRange: Sendable, Hashable {
    /// Bytes `first` through `last`, both included (`bytes=first-last`).
    case closed(first: Int, last: Int)
    /// Bytes from `first` to the end (`bytes=first-`).
    case from(Int)
    /// The last `count` bytes (`bytes=-count`).
    case suffix(Int)

    /// The offsets this range selects in an object of `size` bytes, or `nil` when it
    /// selects none (the range is unsatisfiable, HTTP's 416).
    ///
    /// Follows RFC 9110 section 14.1.2, as S3 and nginx do, so that a ranged read means
    /// the same on every backend and through the HTTP API:
    /// - a `first` at or past the end is unsatisfiable, whatever `last` says;
    /// - a `last` past the end is cut to the last byte (asking for more than there is is
    ///   not an error: a client reading in fixed blocks does it at the end of every file);
    /// - `.suffix(0)` is unsatisfiable; a suffix longer than the object selects it whole;
    /// - a range that is not well formed (a negative offset, `last` before `first`) is
    ///   unsatisfiable here; `get` refuses it with `storage.invalid_argument` first.
    ///
    /// The one empty result is a suffix of an empty object (`0..<0`): it selects the
    /// whole object, which has no bytes. No `Content-Range` can name zero bytes, so an
    /// HTTP server answers it with the whole, empty object (200).
    public func resolve(size: Int) -> Range<Int>? {
        guard problem == nil, size >= 0 else { return nil }
        switch self {
        case .closed(let first, let last):
            guard first < size else { return nil }
            return first..<(min(last, size - 1) + 1)
        case .from(let first):
            guard first < size else { return nil }
            return first..<size
        case .suffix(let count):
            guard count > 0 else { return nil }
            return max(0, size - count)..<size
        }
    }

    /// Refuses a range that is not well formed: a negative offset or count, or `last`
    /// before `first`. Backends call it before anything else in a ranged `get`, so that a
    /// malformed range fails the same way everywhere rather than as "unsatisfiable".
    ///
    /// - Throws: `storage.invalid_argument` saying which bound is wrong.
    public func validate() throws(PlugboardError) {
        if let problem {
            throw PlugboardError(
                .storageInvalidArgument, "invalid byte range \(self)",
                detail: problem,
                hint: "Write .closed(first:last:) with 0 <= first <= last, .from(first) with first >= 0, or .suffix(count) with count >= 0.")
        }
    }

    private var problem: String? {
        switch self {
        case .closed(let first, let last):
            if first < 0 { return "Expected a first offset of 0 or more, found \(first)." }
            if last < first { return "Expected a last offset of at least the first (\(first)), found \(last)." }
        case .from(let first):
            if first < 0 { return "Expected a first offset of 0 or more, found \(first)." }
        case .suffix(let count):
            if count < 0 { return "Expected a suffix length of 0 or more, found \(count)." }
        }
        return nil
    }

    /// Reads the value of an HTTP `Range` header.
    ///
    /// Accepts the `bytes` unit (in any case) and a comma-separated list of
    /// `first-last`, `first-` and `-count` (spaces and tabs around the items allowed,
    /// empty items skipped, as RFC 9110's list rule says). Numbers too large for `Int`
    /// are taken as `Int.max`, which selects to the end (or nothing, for a first offset).
    ///
    /// - Returns: ``ParsedRange/single(_:)`` for one range, ``ParsedRange/multiple(_:)``
    ///   for several (a server answers those with the whole object, as S3 does, rather
    ///   than a multipart body), ``ParsedRange/invalid`` for anything else: another unit,
    ///   a malformed item, `last` before `first`. RFC 9110 says to ignore an invalid
    ///   `Range` header and answer with the whole object, so invalid is not an error.
    public static func parse(header: String) -> ParsedRange {
        let bytes = Array(header.utf8)
        guard let equals = bytes.firstIndex(of: UInt8(ascii: "=")),
              String(decoding: bytes[..<equals], as: UTF8.self).lowercased() == "bytes" else { return .invalid }
        var ranges: [ByteRange] = []
        for item in bytes[(equals + 1)...].split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false) {
            let spec = trimmed(item)
            if spec.isEmpty { continue }
            guard let range = parseSpec(spec) else { return .invalid }
            ranges.append(range)
        }
        switch ranges.count {
        case 0: return .invalid
        case 1: return .single(ranges[0])
        default: return .multiple(ranges)
        }
    }

    /// One `first-last`, `first-` or `-count`, or nil.
    private static func parseSpec(_ spec: ArraySlice<UInt8>) -> ByteRange? {
        guard let dash = spec.firstIndex(of: UInt8(ascii: "-")) else { return nil }
        let before = spec[..<dash], after = spec[(dash + 1)...]
        if before.isEmpty {
            guard let count = number(after) else { return nil }
            return .suffix(count)
        }
        guard let first = number(before) else { return nil }
        if after.isEmpty { return .from(first) }
        guard let last = number(after), last >= first else { return nil }
        return .closed(first: first, last: last)
    }

    /// Decimal digits only (no sign, no space); `Int.max` when they overflow.
    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        guard !digits.isEmpty else { return nil }
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = times.addingReportingOverflow(Int(digit - UInt8(ascii: "0")))
            value = overflowA || overflowB ? Int.max : sum
        }
        return value
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let space = { (b: UInt8) in b == UInt8(ascii: " ") || b == UInt8(ascii: "\t") }
        guard let start = bytes.firstIndex(where: { !space($0) }),
              let end = bytes.lastIndex(where: { !space($0) }) else { return [] }
        return bytes[start...end]
    }
}
