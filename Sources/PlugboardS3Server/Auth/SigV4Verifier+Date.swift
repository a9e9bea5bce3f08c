import PlugboardAPI

extension SigV4Verifier {
    /// The time a `Date` header names, for a request signed with `Date` rather than
    /// `x-amz-date`; nil when it names none.
    ///
    /// Beside HTTP's three forms (``Timestamp/init(httpDate:)``), the date-time of
    /// RFC 5322 (RFC 2822) section 3.3, since that is what S3 takes there and what
    /// Python's `email.utils.formatdate` writes: botocore, asked to sign with `Date`, sends
    /// `Thu, 03 Dec 2026 07:56:12 -0000`. That is: an optional day name and comma, a day
    /// of one or two digits, a month name, a four-digit year, `HH:MM` or `HH:MM:SS`, and a
    /// zone, either numeric (`+0130`, `-0800`; `-0000` is UTC) or one of the alphabetic
    /// `GMT`, `UT`, `UTC` and `Z`. Names are read in any case (RFC 5322's grammar is
    /// case-insensitive), and runs of spaces or tabs separate the parts. The obsolete US
    /// zones (`EST`, `PDT`, ...), the military letters and two-digit years are refused:
    /// no client sends them to S3, and RFC 5322 says the letters were never reliable.
    static func parseDateHeader(_ text: String) -> Timestamp? {
        Timestamp(httpDate: text) ?? parseRFC5322Date(text)
    }

    /// RFC 5322's date-time as ``parseDateHeader(_:)`` describes it.
    static func parseRFC5322Date(_ text: String) -> Timestamp? {
        var parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map { $0.uppercased() }
        guard !parts.isEmpty else { return nil }
        // The day name, which may touch the day ("Thu,03 Dec ...").
        if let comma = parts[0].firstIndex(of: ",") {
            guard dayNames.contains(String(parts[0][..<comma])) else { return nil }
            let rest = String(parts[0][parts[0].index(after: comma)...])
            if rest.isEmpty { parts.removeFirst() } else { parts[0] = rest }
        }
        guard parts.count == 5,
              let day = number(parts[0], digits: 1...2), (1...31).contains(day),
              let monthIndex = monthNames.firstIndex(of: parts[1]),
              let year = number(parts[2], digits: 4...4),
              let secondOfDay = timeOfDay(parts[3]),
              let offset = zoneOffset(parts[4]) else { return nil }
        let month = monthIndex + 1
        guard day <= daysIn(month: month, year: year) else { return nil }
        let seconds = daysSince1970(year: year, month: month, day: day) * 86_400 + secondOfDay - offset
        return Timestamp(secondsSince1970: seconds)
    }

    private static let dayNames = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
    private static let monthNames = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]

    /// `text` as a decimal number of `digits` digits, nothing else.
    private static func number(_ text: String, digits: ClosedRange<Int>) -> Int64? {
        guard digits.contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }

    /// `HH:MM` or `HH:MM:SS` as seconds since midnight. A second of 60 (a leap second) is
    /// the first second of the next minute, as ``Timestamp/init(httpDate:)`` reads it.
    private static func timeOfDay(_ text: String) -> Int64? {
        let fields = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 2 || fields.count == 3,
              let hour = number(fields[0], digits: 2...2), hour <= 23,
              let minute = number(fields[1], digits: 2...2), minute <= 59 else { return nil }
        var second: Int64 = 0
        if fields.count == 3 {
            guard let value = number(fields[2], digits: 2...2), value <= 60 else { return nil }
            second = value
        }
        return hour * 3600 + minute * 60 + second
    }

    /// The zone's offset east of UTC, in seconds (local time minus UTC).
    private static func zoneOffset(_ text: String) -> Int64? {
        switch text {
        case "GMT", "UT", "UTC", "Z": return 0
        default: break
        }
        guard let sign = text.first, sign == "+" || sign == "-",
              let digits = number(String(text.dropFirst()), digits: 4...4) else { return nil }
        let hours = digits / 100, minutes = digits % 100
        guard hours <= 23, minutes <= 59 else { return nil }
        let offset = hours * 3600 + minutes * 60
        return sign == "-" ? -offset : offset
    }

    private static func isLeapYear(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int, year: Int64) -> Int64 {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the date, proleptic Gregorian (Howard Hinnant's
    /// `days_from_civil`, which needs no table and no loop).
    private static func daysSince1970(year: Int64, month: Int, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
