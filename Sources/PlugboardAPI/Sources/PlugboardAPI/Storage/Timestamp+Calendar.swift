/// What the timestamp grammars share: fields to an instant and back, and ASCII text
/// built and scanned byte by byte.
extension Timestamp {
    /// The instant of a UTC date and time of day (minus `utcOffset` seconds), or `nil` when
    /// a field is out of range, the day is not in the month, or the result does not fit.
    static func make(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64,
                     nanoseconds: Int32 = 0, utcOffset: Int64 = 0) -> Timestamp? {
        guard (1...12).contains(month), day >= 1, day <= CivilTime.daysInMonth(Int(month), year: year),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        let days = CivilTime.daysSinceEpoch(year: year, month: month, day: day)
        // In 128 bits: the first day of the Int64 range starts before it.
        let total = Int128(days) * Int128(CivilTime.secondsPerDay) + Int128(hour * 3600 + minute * 60 + second - utcOffset)
        guard let seconds = Int64(exactly: total) else { return nil }
        return Timestamp(uncheckedSeconds: seconds, nanoseconds: nanoseconds)
    }
}

/// A UTC date in the proleptic Gregorian calendar and a time of day, converted to and from
/// days since 1970-01-01 with Howard Hinnant's `days_from_civil` and `civil_from_days`
/// (https://howardhinnant.github.io/date_algorithms.html), exact for every `Int64` second.
struct CivilTime {
    static let secondsPerDay: Int64 = 86_400
    static let shortDayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longDayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The year: 0 is 1 BC, -1 is 2 BC (astronomical numbering, as ISO 8601).
    var year: Int64
    /// 1 to 12.
    var month: Int
    /// 1 to 31.
    var day: Int
    /// 0 to 23, 0 to 59, 0 to 59.
    var hour: Int, minute: Int, second: Int
    /// 0 is Sunday, 6 is Saturday.
    var weekday: Int

    init(_ timestamp: Timestamp) {
        var days = timestamp.seconds / Self.secondsPerDay
        var secondOfDay = timestamp.seconds % Self.secondsPerDay
        if secondOfDay < 0 {
            secondOfDay += Self.secondsPerDay
            days -= 1
        }
        (year, month, day) = Self.date(daysSinceEpoch: days)
        weekday = Self.weekday(daysSinceEpoch: days)
        hour = Int(secondOfDay / 3600)
        minute = Int(secondOfDay / 60 % 60)
        second = Int(secondOfDay % 60)
    }

    /// Hinnant's `days_from_civil`: days from 1970-01-01 to the given date, negative
    /// before. `month` is 1 to 12 and `day` 1 to 31; the year may be any whose days fit.
    static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400                                          // [0, 399]
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1  // [0, 365]
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear  // [0, 146096]
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Hinnant's `civil_from_days`: the date `days` days after 1970-01-01.
    static func date(daysSinceEpoch days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097                                       // [0, 146096]
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365  // [0, 399]
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // [0, 365]
        let shiftedMonth = (5 * dayOfYear + 2) / 153                           // [0, 11], March first
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1                 // [1, 31]
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9    // [1, 12]
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, Int(month), Int(day))
    }

    /// Hinnant's `weekday_from_days`: 0 (Sunday) to 6; 1970-01-01 was a Thursday.
    static func weekday(daysSinceEpoch days: Int64) -> Int {
        Int(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6)
    }

    static func isLeapYear(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(_ month: Int, year: Int64) -> Int64 {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

/// ASCII text built byte by byte.
struct TextBuilder {
    private var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(32) }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// `value` (not negative) in decimal, zero-padded to at least `width` digits.
    mutating func appendDigits(_ value: some BinaryInteger, width: Int) {
        var rest = UInt64(value)
        var count = 1
        var scan = rest / 10
        while scan > 0 {
            count += 1
            scan /= 10
        }
        let end = bytes.count + max(count, width)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: max(count, width)))
        var index = end - 1
        while rest > 0 {
            bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
            index -= 1
        }
    }

    /// Four digits from 0000 to 9999, otherwise a sign and at least four digits.
    mutating func appendYear(_ year: Int64) {
        if (0...9999).contains(year) {
            appendDigits(year, width: 4)
        } else {
            append(year < 0 ? "-" : "+")
            appendDigits(year.magnitude, width: 4)
        }
    }

    /// `HH:MM:SS`
    mutating func appendTimeOfDay(_ civil: CivilTime) {
        appendDigits(civil.hour, width: 2)
        append(":")
        appendDigits(civil.minute, width: 2)
        append(":")
        appendDigits(civil.second, width: 2)
    }
}

/// Reads ASCII text front to back; every `take` consumes only on a match.
struct TextScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ text: String) { bytes = Array(text.utf8) }
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index == bytes.count }

    /// Consumes `literal` if the text continues with it.
    mutating func take(_ literal: String) -> Bool {
        let utf8 = literal.utf8
        guard bytes.count - index >= utf8.count, bytes[index..<(index + utf8.count)].elementsEqual(utf8) else {
            return false
        }
        index += utf8.count
        return true
    }

    /// Consumes and returns the next byte if it is one of `choices`.
    mutating func take(oneOf choices: [UInt8]) -> UInt8? {
        guard index < bytes.count, choices.contains(bytes[index]) else { return nil }
        index += 1
        return bytes[index - 1]
    }

    /// Consumes the first of `words` the text continues with; returns its position.
    mutating func take(oneOf words: [String]) -> Int? {
        for (position, word) in words.enumerated() where take(word) {
            return position
        }
        return nil
    }

    /// Consumes one decimal digit.
    mutating func digit() -> Int64? {
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { return nil }
        index += 1
        return Int64(bytes[index - 1] - UInt8(ascii: "0"))
    }

    /// Consumes exactly `count` digits, or nothing.
    mutating func digits(_ count: Int) -> Int64? {
        digits(min: count, max: count)
    }

    /// Consumes `min` to `max` digits (as many as there are, up to `max`), or nothing.
    mutating func digits(min: Int, max: Int) -> Int64? {
        let start = index
        var value: Int64 = 0
        var count = 0
        while count < max, let digit = digit() {
            value = value * 10 + digit
            count += 1
        }
        guard count >= min else {
            index = start
            return nil
        }
        return value
    }

    /// Consumes `HH:MM:SS`.
    mutating func timeOfDay() -> (Int64, Int64, Int64)? {
        let start = index
        guard let hour = digits(2), take(":"), let minute = digits(2), take(":"), let second = digits(2) else {
            index = start
            return nil
        }
        return (hour, minute, second)
    }
}
