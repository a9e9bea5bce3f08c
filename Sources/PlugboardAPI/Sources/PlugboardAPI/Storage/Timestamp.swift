#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A point in time, UTC, to the nanosecond: whole seconds since 1970-01-01T00:00:00Z (the
/// Unix epoch) and the nanoseconds into that second. What ``ObjectInfo/lastModified`` holds.
///
/// PlugboardAPI does not import Foundation: Foundation is not built for library
/// evolution, so using its types would void the API library's binary compatibility. Hence
/// this type instead of `Date` (and `[UInt8]` instead of `Data`).
///
/// It counts POSIX time: every day has 86 400 seconds and leap seconds do not exist, as
/// with `time()`, `Date` and S3. Dates are in the proleptic Gregorian calendar, also
/// before 1582, and years are numbered astronomically (year 0 is 1 BC).
///
/// ```swift
/// let now = Timestamp.now()
/// let t = Timestamp(secondsSince1970: 784_111_777)   // 1994-11-06T08:49:37Z
/// t.httpDate                                         // "Sun, 06 Nov 1994 08:49:37 GMT"
/// t.iso8601                                          // "1994-11-06T08:49:37.000Z"
/// Timestamp(iso8601: "2026-11-29T20:42:08.123Z")     // Optional(2026-11-29T20:42:08.123Z)
/// Timestamp(httpDate: "Sun, 06 Nov 1994 08:49:37 GMT") == t   // true
/// ```
///
/// Ordering, equality and hashing compare the instant. ``description`` and the `Codable`
/// form are the exact ISO 8601 text; see ``encode(to:)``.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Whole seconds since 1970-01-01T00:00:00Z, rounded toward the past: -1 for any instant
    /// of the last second of 1969.
    public let seconds: Int64
    /// Nanoseconds after ``seconds``, always 0 to 999 999 999.
    public let nanoseconds: Int32

    /// The instant `secondsSince1970` seconds and `nanoseconds` nanoseconds after the epoch.
    ///
    /// Nanoseconds outside 0 to 999 999 999 carry into the seconds: `(5, -1)` is 4 seconds
    /// and 999 999 999 nanoseconds. A result beyond `Int64` seconds stops at the earliest or
    /// latest representable instant.
    public init(secondsSince1970: Int64, nanoseconds: Int32 = 0) {
        if (0..<Self.nanosecondsPerSecond).contains(nanoseconds) {
            self.seconds = secondsSince1970
            self.nanoseconds = nanoseconds
            return
        }
        var carry = Int64(nanoseconds / Self.nanosecondsPerSecond)
        var rest = nanoseconds % Self.nanosecondsPerSecond
        if rest < 0 {
            rest += Self.nanosecondsPerSecond
            carry -= 1
        }
        let (sum, overflow) = secondsSince1970.addingReportingOverflow(carry)
        if overflow {
            self = carry > 0 ? Self.latest : Self.earliest
        } else {
            self.seconds = sum
            self.nanoseconds = rest
        }
    }

    /// The same as the `Int64` initializer, for an `Int`. It also makes an integer literal
    /// pick a non-failable initializer rather than the failable `Double` one:
    /// `Timestamp(secondsSince1970: 1_700_000_000)` is not optional.
    public init(secondsSince1970: Int, nanoseconds: Int32 = 0) {
        self.init(secondsSince1970: Int64(secondsSince1970), nanoseconds: nanoseconds)
    }

    /// The instant `secondsSince1970` seconds after the epoch, to the nearest nanosecond
    /// of the `Double`'s value.
    ///
    /// A `Double` holds about 16 significant digits, so for present-day instants the
    /// value is only good to a few hundred nanoseconds.
    ///
    /// - Returns: `nil` for NaN, an infinity, or a value beyond `Int64` seconds.
    public init?(secondsSince1970: Double) {
        guard secondsSince1970.isFinite else { return nil }
        let whole = secondsSince1970.rounded(.down)
        guard var seconds = Int64(exactly: whole) else { return nil }
        // The fraction of a finite Double is exact, so only this product rounds.
        var nanoseconds = ((secondsSince1970 - whole) * 1e9).rounded()
        if nanoseconds >= 1e9 {
            let (next, overflow) = seconds.addingReportingOverflow(1)
            guard !overflow else { return nil }
            seconds = next
            nanoseconds = 0
        }
        self.seconds = seconds
        self.nanoseconds = Int32(nanoseconds)
    }

    /// Seconds since the epoch as a `Double`, negative before 1970; good to a few hundred
    /// nanoseconds for present-day instants.
    public var secondsSince1970: Double {
        Double(seconds) + Double(nanoseconds) / 1e9
    }

    /// The current time by the system's real-time clock (`clock_gettime(CLOCK_REALTIME)`),
    /// which can jump when the clock is set: measure durations with `ContinuousClock`.
    public static func now() -> Timestamp {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Timestamp(secondsSince1970: Int64(spec.tv_sec), nanoseconds: Int32(spec.tv_nsec))
    }

    /// Whether `lhs` is the earlier instant.
    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        (lhs.seconds, lhs.nanoseconds) < (rhs.seconds, rhs.nanoseconds)
    }

    /// The exact ISO 8601 text, with as many fractional digits as the value needs, but at
    /// least milliseconds: `1994-11-06T08:49:37.000Z`, `2026-11-29T20:42:08.123456Z`,
    /// `1969-12-31T23:59:59.999999999Z`. Equal to ``iso8601`` when the nanoseconds are
    /// whole milliseconds.
    public var description: String {
        iso8601(fractionalDigits: Self.exactFractionalDigits(nanoseconds))
    }

    /// Decodes the text ``encode(to:)`` writes, or any other text
    /// ``init(iso8601:)`` accepts.
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the value is a string that is not such
    ///   a timestamp; `DecodingError.typeMismatch` when it is not a string.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = Timestamp(iso8601: text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "Expected an ISO 8601 / RFC 3339 timestamp such as \"2026-11-29T20:42:08.123Z\", found \(StorageText.quote(text)).")
        }
        self = value
    }

    /// Encodes the instant as one string, its ``description``: ISO 8601 in UTC with
    /// milliseconds (`"2026-11-29T20:42:08.123Z"`), or 6 or 9 fractional digits when the
    /// value has finer parts, so that decoding gives back the same value. A string rather
    /// than a number keeps JSON readable and exact (a JSON number is a `Double`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    static let nanosecondsPerSecond: Int32 = 1_000_000_000
    static let earliest = Timestamp(uncheckedSeconds: .min, nanoseconds: 0)
    static let latest = Timestamp(uncheckedSeconds: .max, nanoseconds: nanosecondsPerSecond - 1)

    /// For values already known to be normalized.
    init(uncheckedSeconds seconds: Int64, nanoseconds: Int32) {
        self.seconds = seconds
        self.nanoseconds = nanoseconds
    }

    /// 3, 6 or 9: the fewest of those fractional digits that show `nanoseconds` exactly.
    static func exactFractionalDigits(_ nanoseconds: Int32) -> Int {
        if nanoseconds % 1_000_000 == 0 { return 3 }
        if nanoseconds % 1_000 == 0 { return 6 }
        return 9
    }
}
