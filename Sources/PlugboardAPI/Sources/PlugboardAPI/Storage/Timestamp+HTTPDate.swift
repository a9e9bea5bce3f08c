/// HTTP dates (RFC 9110 section 5.6.7), written and read without Foundation.
///
/// The two obsolete grammars (RFC 850, asctime) stay here rather than in PlugboardHTTP:
/// `init(httpDate:)` is public and not inlinable, so a plugin built against 1.0 runs this
/// library's copy and relies on it accepting all three formats (docs/ARCHITECTURE.md,
/// "What stays in PlugboardAPI"). Being private they are no part of the frozen ABI.
extension Timestamp {
    /// The HTTP date (RFC 9110 section 5.6.7, IMF-fixdate) of this instant, whole seconds:
    /// `Sun, 06 Nov 1994 08:49:37 GMT`, as `Last-Modified`, `Date` and `If-Modified-Since`
    /// headers carry it.
    ///
    /// Sub-second parts are dropped (truncated, so the text never names a later second).
    /// An IMF-fixdate has a four-digit year: an instant outside the years 0000 to 9999 is
    /// written with its year as ``iso8601`` writes it (`+10000`, `-0001`), which no HTTP
    /// recipient accepts, ``init(httpDate:)`` included.
    public var httpDate: String {
        let civil = CivilTime(self)
        var out = TextBuilder()
        out.append(CivilTime.shortDayNames[civil.weekday])
        out.append(", ")
        out.appendDigits(civil.day, width: 2)
        out.append(" ")
        out.append(CivilTime.monthNames[civil.month - 1])
        out.append(" ")
        out.appendYear(civil.year)
        out.append(" ")
        out.appendTimeOfDay(civil)
        out.append(" GMT")
        return out.text
    }

    /// Reads an HTTP date in any of the three formats RFC 9110 section 5.6.7 says a
    /// recipient must accept:
    ///
    /// - IMF-fixdate, what every sender should write: `Sun, 06 Nov 1994 08:49:37 GMT`;
    /// - RFC 850, obsolete: `Sunday, 06-Nov-94 08:49:37 GMT`. Its two-digit year is the
    ///   one in the current century, or, when that is more than 50 years ahead of the
    ///   current year, the one a century earlier (RFC 9110's rule);
    /// - ANSI C `asctime()`, obsolete: `Sun Nov  6 08:49:37 1994`.
    ///
    /// The text must match exactly, case included (HTTP-date is case-sensitive), with
    /// single spaces and no surrounding whitespace: trim a header's optional whitespace
    /// first. The day name must be one of the seven but is not checked against the date
    /// (RFC 9110 calls it redundant). Seconds may be 60, a leap second, which is read as
    /// the first second of the next minute (POSIX time has no leap seconds).
    ///
    /// - Returns: `nil` for any other text, or a date that does not exist (`31 Apr`).
    public init?(httpDate text: String) {
        let bytes = Array(text.utf8)
        guard let value = Self.parseIMFFixdate(bytes) ?? Self.parseRFC850Date(bytes) ?? Self.parseAsctimeDate(bytes) else {
            return nil
        }
        self = value
    }

    // MARK: HTTP-date formats

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func parseIMFFixdate(_ bytes: [UInt8]) -> Timestamp? {
        var scan = TextScanner(bytes)
        guard scan.take(oneOf: CivilTime.shortDayNames) != nil, scan.take(", "),
              let day = scan.digits(2), scan.take(" "),
              let month = scan.take(oneOf: CivilTime.monthNames), scan.take(" "),
              let year = scan.digits(4), scan.take(" "),
              let (hour, minute, second) = scan.timeOfDay(), scan.take(" GMT"), scan.isAtEnd
        else { return nil }
        return make(year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private static func parseRFC850Date(_ bytes: [UInt8]) -> Timestamp? {
        var scan = TextScanner(bytes)
        guard scan.take(oneOf: CivilTime.longDayNames) != nil, scan.take(", "),
              let day = scan.digits(2), scan.take("-"),
              let month = scan.take(oneOf: CivilTime.monthNames), scan.take("-"),
              let twoDigitYear = scan.digits(2), scan.take(" "),
              let (hour, minute, second) = scan.timeOfDay(), scan.take(" GMT"), scan.isAtEnd
        else { return nil }
        let currentYear = CivilTime(now()).year
        var year = currentYear - currentYear % 100 + twoDigitYear
        if year - currentYear > 50 { year -= 100 }
        return make(year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second)
    }

    /// `Sun Nov  6 08:49:37 1994`
    private static func parseAsctimeDate(_ bytes: [UInt8]) -> Timestamp? {
        var scan = TextScanner(bytes)
        guard scan.take(oneOf: CivilTime.shortDayNames) != nil, scan.take(" "),
              let month = scan.take(oneOf: CivilTime.monthNames), scan.take(" ")
        else { return nil }
        let day: Int64
        if scan.take(" ") {
            guard let digit = scan.digit() else { return nil }
            day = digit
        } else {
            guard let digits = scan.digits(2) else { return nil }
            day = digits
        }
        guard scan.take(" "), let (hour, minute, second) = scan.timeOfDay(), scan.take(" "),
              let year = scan.digits(4), scan.isAtEnd
        else { return nil }
        return make(year: year, month: Int64(month + 1), day: day, hour: hour, minute: minute, second: second)
    }
}
