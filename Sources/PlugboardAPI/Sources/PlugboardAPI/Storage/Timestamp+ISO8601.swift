/// ISO 8601 / RFC 3339 timestamps, as S3 listings and Plugboard's JSON carry them,
/// written and read without Foundation.
extension Timestamp {
    /// The ISO 8601 / RFC 3339 text of this instant in UTC with milliseconds, as S3 writes
    /// `LastModified` in listings: `2026-11-29T20:42:08.123Z`.
    ///
    /// Finer parts are dropped (truncated, so the text never names a later millisecond);
    /// ``description`` keeps them. The year has four digits from 0000 to 9999; outside
    /// that range it is ISO 8601's expanded form, a sign and at least four digits
    /// (`+10000-01-01T00:00:00.000Z`, `-0001-12-31T23:59:59.999Z` for 2 BC), which
    /// ``init(iso8601:)`` reads back.
    public var iso8601: String {
        iso8601(fractionalDigits: 3)
    }

    /// The ISO 8601 text with `fractionalDigits` (0 to 9, clamped) digits of the second,
    /// truncated; 0 writes no decimal point.
    func iso8601(fractionalDigits: Int) -> String {
        let civil = CivilTime(self)
        var out = TextBuilder()
        out.appendYear(civil.year)
        out.append("-")
        out.appendDigits(civil.month, width: 2)
        out.append("-")
        out.appendDigits(civil.day, width: 2)
        out.append("T")
        out.appendTimeOfDay(civil)
        let digits = min(max(fractionalDigits, 0), 9)
        if digits > 0 {
            var divisor: Int32 = 1
            for _ in digits..<9 { divisor *= 10 }
            out.append(".")
            out.appendDigits(Int64(nanoseconds / divisor), width: digits)
        }
        out.append("Z")
        return out.text
    }

    /// Reads an ISO 8601 timestamp in the RFC 3339 `date-time` form:
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)`.
    ///
    /// Accepted: everything ``iso8601`` and ``description`` write; a fraction of any
    /// number of digits or none (`2026-11-29T20:42:08Z`; digits after the ninth are
    /// dropped); `Z` or `z`, and `T` or `t`, as RFC 3339 allows; any numeric UTC offset,
    /// `+00:00` and `-00:00` included, which is subtracted to give UTC
    /// (`2026-11-29T21:42:08+01:00` is `20:42:08Z`); the expanded year form ``iso8601``
    /// writes outside 0000 to 9999, a `+` or `-` and 4 to 12 digits. Seconds may be 60, a
    /// leap second, read as the first second of the next minute.
    ///
    /// Refused: a missing offset (local time is ambiguous), basic format without
    /// separators (`20261129T204208Z`), a space instead of `T`, week or ordinal dates,
    /// surrounding whitespace, and dates that do not exist.
    ///
    /// - Returns: `nil` for text not of this form, or beyond `Int64` seconds.
    public init?(iso8601 text: String) {
        var scan = TextScanner(text)
        let year: Int64
        if let sign = scan.take(oneOf: [UInt8(ascii: "+"), UInt8(ascii: "-")]) {
            guard let magnitude = scan.digits(min: 4, max: 12) else { return nil }
            year = sign == UInt8(ascii: "-") ? -magnitude : magnitude
        } else {
            guard let plain = scan.digits(4) else { return nil }
            year = plain
        }
        guard scan.take("-"), let month = scan.digits(2), scan.take("-"), let day = scan.digits(2),
              scan.take(oneOf: [UInt8(ascii: "T"), UInt8(ascii: "t")]) != nil,
              let hour = scan.digits(2), scan.take(":"), let minute = scan.digits(2), scan.take(":"),
              let second = scan.digits(2)
        else { return nil }
        var nanoseconds: Int64 = 0
        if scan.take(".") {
            var count = 0
            while let digit = scan.digit() {
                if count < 9 { nanoseconds = nanoseconds * 10 + digit }
                count += 1
            }
            guard count > 0 else { return nil }
            for _ in min(count, 9)..<9 { nanoseconds *= 10 }
        }
        var offset: Int64 = 0
        if scan.take(oneOf: [UInt8(ascii: "Z"), UInt8(ascii: "z")]) == nil {
            guard let sign = scan.take(oneOf: [UInt8(ascii: "+"), UInt8(ascii: "-")]),
                  let offsetHours = scan.digits(2), scan.take(":"), let offsetMinutes = scan.digits(2),
                  offsetHours <= 23, offsetMinutes <= 59
            else { return nil }
            offset = (offsetHours * 60 + offsetMinutes) * 60 * (sign == UInt8(ascii: "-") ? -1 : 1)
        }
        guard scan.isAtEnd,
              let value = Self.make(year: year, month: month, day: day, hour: hour, minute: minute,
                                    second: second, nanoseconds: Int32(nanoseconds), utcOffset: offset)
        else { return nil }
        self = value
    }
}
