import Foundation
import PlugboardAPI
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Timestamp")
struct TimestampTests {
    /// Instants whose text is known from RFC 9110, POSIX `timegm` and the calendar.
    private static let known: [(seconds: Int64, http: String, iso: String)] = [
        (0, "Thu, 01 Jan 1970 00:00:00 GMT", "1970-01-01T00:00:00.000Z"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37.000Z"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT", "2000-02-29T00:00:00.000Z"),
        (4_107_542_400, "Mon, 01 Mar 2100 00:00:00 GMT", "2100-03-01T00:00:00.000Z"),
        (4_107_542_399, "Sun, 28 Feb 2100 23:59:59 GMT", "2100-02-28T23:59:59.000Z"),
        (1_795_984_928, "Sun, 29 Nov 2026 20:42:08 GMT", "2026-11-29T20:42:08.000Z"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT", "1969-12-31T23:59:59.000Z"),
        (-2_208_988_800, "Mon, 01 Jan 1900 00:00:00 GMT", "1900-01-01T00:00:00.000Z"),
        (-62_135_596_800, "Mon, 01 Jan 0001 00:00:00 GMT", "0001-01-01T00:00:00.000Z"),
        (-62_167_219_200, "Sat, 01 Jan 0000 00:00:00 GMT", "0000-01-01T00:00:00.000Z"),
        (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT", "9999-12-31T23:59:59.000Z"),
    ]

    @Test func knownInstants_formatAndParse() {
        for (seconds, http, iso) in Self.known {
            let t = Timestamp(secondsSince1970: seconds)
            #expect(t.httpDate == http)
            #expect(t.iso8601 == iso)
            #expect(t.description == iso)
            #expect(Timestamp(httpDate: http) == t, "\(http)")
            #expect(Timestamp(iso8601: iso) == t, "\(iso)")
        }
    }

    @Test func integerLiteral_picksTheNonFailableInitializer() {
        // Compiles only because the Int overload exists: no optional here.
        let t: Timestamp = Timestamp(secondsSince1970: 1_700_000_000)
        #expect(t.seconds == 1_700_000_000 && t.nanoseconds == 0)
        let double: Timestamp? = Timestamp(secondsSince1970: 1.5)
        #expect(double == Timestamp(secondsSince1970: 1, nanoseconds: 500_000_000))
    }

    @Test func milliseconds_areTruncatedInIso8601_andKeptInDescription() {
        let t = Timestamp(secondsSince1970: 1_795_984_928, nanoseconds: 123_999_999)
        #expect(t.iso8601 == "2026-11-29T20:42:08.123Z")
        #expect(t.httpDate == "Sun, 29 Nov 2026 20:42:08 GMT")
        #expect(t.description == "2026-11-29T20:42:08.123999999Z")
        #expect(Timestamp(secondsSince1970: 0, nanoseconds: 120_000).description == "1970-01-01T00:00:00.000120Z")
        #expect(Timestamp(secondsSince1970: 0, nanoseconds: 5_000_000).description == "1970-01-01T00:00:00.005Z")
        #expect(Timestamp(secondsSince1970: -1, nanoseconds: 999_999_999).iso8601 == "1969-12-31T23:59:59.999Z")
    }

    @Test func nanosecondsOutOfRange_carryIntoSeconds_andSaturateAtTheEnds() {
        #expect(Timestamp(secondsSince1970: 5, nanoseconds: -1) == Timestamp(secondsSince1970: 4, nanoseconds: 999_999_999))
        #expect(Timestamp(secondsSince1970: 0, nanoseconds: Int32.max) == Timestamp(secondsSince1970: 2, nanoseconds: 147_483_647))
        #expect(Timestamp(secondsSince1970: 0, nanoseconds: Int32.min) == Timestamp(secondsSince1970: -3, nanoseconds: 852_516_352))
        let latest = Timestamp(secondsSince1970: Int64.max, nanoseconds: 1_000_000_000)
        #expect(latest.seconds == .max && latest.nanoseconds == 999_999_999)
        let earliest = Timestamp(secondsSince1970: Int64.min, nanoseconds: -1)
        #expect(earliest.seconds == .min && earliest.nanoseconds == 0)
    }

    @Test func doubleSeconds_convertBothWays() {
        #expect(Timestamp(secondsSince1970: -0.5) == Timestamp(secondsSince1970: -1, nanoseconds: 500_000_000))
        #expect(Timestamp(secondsSince1970: -1, nanoseconds: 500_000_000).secondsSince1970 == -0.5)
        #expect(Timestamp(secondsSince1970: 784_111_777.25)?.iso8601 == "1994-11-06T08:49:37.250Z")
        #expect(Timestamp(secondsSince1970: 0.999_999_999_9) == Timestamp(secondsSince1970: 1))
        #expect(Timestamp(secondsSince1970: Double.nan) == nil)
        #expect(Timestamp(secondsSince1970: Double.infinity) == nil)
        #expect(Timestamp(secondsSince1970: -Double.infinity) == nil)
        #expect(Timestamp(secondsSince1970: 1e19) == nil)
        #expect(Timestamp(secondsSince1970: 9_223_372_036_854_775_808.0) == nil) // 2^63
        #expect(Timestamp(secondsSince1970: -9_223_372_036_854_775_808.0)?.seconds == .min)
        #expect(Timestamp(secondsSince1970: 1_700_000_000).secondsSince1970 == 1_700_000_000)
    }

    @Test func ordering_followsTheInstant() {
        let sorted = [
            Timestamp(secondsSince1970: Int64.min),
            Timestamp(secondsSince1970: -2, nanoseconds: 999_999_999),
            Timestamp(secondsSince1970: -1),
            Timestamp(secondsSince1970: -1, nanoseconds: 1),
            Timestamp(secondsSince1970: 0),
            Timestamp(secondsSince1970: 0, nanoseconds: 1),
            Timestamp(secondsSince1970: Int64.max, nanoseconds: 999_999_999),
        ]
        for (index, t) in sorted.enumerated() {
            for (other, u) in sorted.enumerated() {
                #expect((t < u) == (index < other))
                #expect((t == u) == (index == other))
            }
        }
        #expect(Set(sorted + sorted).count == sorted.count)
    }

    @Test func now_agreesWithTheSystemClock() {
        let before = Date().timeIntervalSince1970
        let now = Timestamp.now()
        let after = Date().timeIntervalSince1970
        #expect(now.secondsSince1970 >= before - 0.001 && now.secondsSince1970 <= after + 0.001)
        #expect((0..<1_000_000_000).contains(now.nanoseconds))
    }

    // MARK: The calendar

    /// Every day of one 400-year cycle around the epoch, and of the years after 0000 and
    /// before 10000: each formats to a date that parses back to it, and the dates strictly increase
    /// (ISO dates with four-digit years sort as text), so no day is skipped or repeated.
    @Test func everyDay_roundTripsInOrder() {
        let ranges: [ClosedRange<Int64>] = [
            (-73_048)...73_049,                  // 1770-01-01 to 2170-01-01
            (-719_528)...(-719_528 + 1_600),     // from 0000-01-01 (negative years sort otherwise as text)
            2_932_896 - 1_600...2_932_896,       // up to 9999-12-31
        ]
        var february29 = 0
        for range in ranges {
            var previous = ""
            for day in range {
                let t = Timestamp(secondsSince1970: day * 86_400 + 43_200)
                let iso = t.iso8601
                #expect(iso > previous, "day \(day): \(iso) after \(previous)")
                previous = iso
                if Timestamp(iso8601: iso) != t || Timestamp(httpDate: t.httpDate) != t {
                    Issue.record("day \(day) (\(iso), \(t.httpDate)) does not round-trip")
                    return
                }
                if iso.contains("-02-29T") { february29 += 1 }
            }
        }
        // 97 leap years per 400-year cycle; then 0000, 0004 and 9996.
        #expect(february29 == 97 + 3)
    }

    @Test func calendarFields_matchGlibcGmtime_forRandomInstants() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            // About ±30 000 years around the epoch.
            let seconds = Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &generator)
            var time = time_t(seconds)
            var fields = tm()
            guard gmtime_r(&time, &fields) != nil else {
                Issue.record("gmtime_r refused \(seconds)")
                return
            }
            let year = Int64(fields.tm_year) + 1900
            let yearText = (0...9999).contains(year)
                ? pad(year, 4)
                : (year < 0 ? "-" : "+") + pad(year.magnitude, 4)
            let expected = "\(yearText)-\(pad(fields.tm_mon + 1, 2))-\(pad(fields.tm_mday, 2))T\(pad(fields.tm_hour, 2)):\(pad(fields.tm_min, 2)):\(pad(fields.tm_sec, 2)).000Z"
            let t = Timestamp(secondsSince1970: seconds)
            if t.iso8601 != expected {
                Issue.record("\(seconds): iso8601 \(t.iso8601), gmtime \(expected)")
                return
            }
            let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
            if !t.httpDate.hasPrefix(days[Int(fields.tm_wday)] + ", ") {
                Issue.record("\(seconds): httpDate \(t.httpDate), gmtime weekday \(fields.tm_wday)")
                return
            }
        }
    }

    @Test func httpDate_matchesFoundationsFormatter_forRandomInstants() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            // 1601 to 9999: Foundation's calendar is Julian before 1582.
            let seconds = Int64.random(in: -11_644_473_600...253_402_300_799, using: &generator)
            let t = Timestamp(secondsSince1970: seconds)
            let foundation = formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds)))
            if t.httpDate != foundation {
                Issue.record("\(seconds): \(t.httpDate), Foundation \(foundation)")
                return
            }
        }
    }

    @Test func randomValues_roundTripThroughEveryForm() throws {
        var generator = SystemRandomNumberGenerator()
        for index in 0..<20_000 {
            let seconds: Int64 = index < 10
                ? [Int64.min, .max, 0, -1, 1, -62_167_219_201, 253_402_300_800, .min + 1, .max - 1, 86_399][index]
                : Int64.random(in: -400_000_000_000...400_000_000_000, using: &generator)
            let t = Timestamp(secondsSince1970: seconds, nanoseconds: Int32.random(in: 0..<1_000_000_000, using: &generator))
            let milliseconds = Timestamp(secondsSince1970: t.seconds, nanoseconds: t.nanoseconds / 1_000_000 * 1_000_000)
            let wholeSeconds = Timestamp(secondsSince1970: t.seconds)
            if Timestamp(iso8601: t.description) != t || Timestamp(iso8601: t.iso8601) != milliseconds {
                Issue.record("\(t.seconds), \(t.nanoseconds): \(t.description) / \(t.iso8601) does not round-trip")
                return
            }
            let inFourDigitYears = (-62_167_219_200...253_402_300_799).contains(t.seconds)
            if (Timestamp(httpDate: t.httpDate) == wholeSeconds) != inFourDigitYears {
                Issue.record("\(t.seconds): \(t.httpDate) parses \(inFourDigitYears ? "to another instant" : "although its year has no four digits")")
                return
            }
        }
    }

    // MARK: Parsing ISO 8601

    @Test func iso8601_acceptsTheRFC3339Forms() {
        let t = Timestamp(secondsSince1970: 1_795_984_928)
        let accepted: [(String, Timestamp)] = [
            ("2026-11-29T20:42:08Z", t),
            ("2026-11-29T20:42:08.000Z", t),
            ("2026-11-29t20:42:08z", t),
            ("2026-11-29T20:42:08+00:00", t),
            ("2026-11-29T20:42:08-00:00", t),
            ("2026-11-29T21:42:08+01:00", t),
            ("2026-11-29T15:12:08-05:30", t),
            ("2026-11-30T20:41:08+23:59", t),
            ("2026-11-29T20:42:08.1Z", Timestamp(secondsSince1970: 1_795_984_928, nanoseconds: 100_000_000)),
            ("2026-11-29T20:42:08.123456789Z", Timestamp(secondsSince1970: 1_795_984_928, nanoseconds: 123_456_789)),
            ("2026-11-29T20:42:08.1234567899999Z", Timestamp(secondsSince1970: 1_795_984_928, nanoseconds: 123_456_789)),
            ("1998-12-31T23:59:60Z", Timestamp(secondsSince1970: 915_148_800)),
            ("2000-02-29T00:00:00Z", Timestamp(secondsSince1970: 951_782_400)),
            ("+2026-11-29T20:42:08Z", t),
            ("+10000-01-01T00:00:00Z", Timestamp(secondsSince1970: 253_402_300_800)),
            ("-0001-12-31T23:59:59Z", Timestamp(secondsSince1970: -62_167_219_201)),
            ("1969-12-31T23:59:59.5Z", Timestamp(secondsSince1970: -1, nanoseconds: 500_000_000)),
        ]
        for (text, expected) in accepted {
            #expect(Timestamp(iso8601: text) == expected, "\(text)")
        }
    }

    @Test func iso8601_refusesOtherText() {
        let refused = [
            "", "2026-11-29", "2026-11-29T20:42:08", "2026-11-29 20:42:08Z", "2026-11-29T20:42Z",
            "20261129T204208Z", "2026-11-29T20:42:08.Z", "2026-11-29T20:42:08,123Z", " 2026-11-29T20:42:08Z",
            "2026-11-29T20:42:08Z ", "2026-11-29T20:42:08+0100", "2026-11-29T20:42:08+01", "2026-11-29T20:42:08+24:00",
            "2026-11-29T20:42:08UTC", "2026-02-30T00:00:00Z", "2100-02-29T00:00:00Z", "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-29T24:00:00Z",
            "2026-11-29T20:60:00Z", "2026-11-29T20:42:61Z", "10000-01-01T00:00:00Z", "+999-01-01T00:00:00Z",
            "+999999999999-12-31T23:59:59Z", "-999999999999-01-01T00:00:00Z", "+1000000000000-01-01T00:00:00Z",
            "２０２６-11-29T20:42:08Z", "2026-1-29T20:42:08Z", "Sun, 06 Nov 1994 08:49:37 GMT",
        ]
        for text in refused {
            #expect(Timestamp(iso8601: text) == nil, "\(text)")
        }
    }

    // MARK: Parsing HTTP dates

    @Test func httpDate_acceptsTheThreeFormatsOfRFC9110() {
        let t = Timestamp(secondsSince1970: 784_111_777)
        #expect(Timestamp(httpDate: "Sun, 06 Nov 1994 08:49:37 GMT") == t)
        #expect(Timestamp(httpDate: "Sunday, 06-Nov-94 08:49:37 GMT") == t)
        #expect(Timestamp(httpDate: "Sun Nov  6 08:49:37 1994") == t)
        #expect(Timestamp(httpDate: "Thu Jan 01 00:00:00 1970") == Timestamp(secondsSince1970: 0))
        // The day name is redundant and not checked against the date.
        #expect(Timestamp(httpDate: "Mon, 06 Nov 1994 08:49:37 GMT") == t)
        // A leap second is the next minute's first second.
        #expect(Timestamp(httpDate: "Thu, 31 Dec 1998 23:59:60 GMT") == Timestamp(secondsSince1970: 915_148_800))
    }

    @Test func httpDate_rfc850TwoDigitYear_isAtMost50YearsAhead() throws {
        let currentYear = try #require(Int(Timestamp.now().iso8601.prefix(4)))
        for ahead in [-49, -1, 0, 1, 49, 50, 51, 99] {
            let year = currentYear + ahead
            let text = "Friday, 01-Jan-\(String(year % 100 < 10 ? "0" : ""))\(year % 100) 00:00:00 GMT"
            let expectedYear = ahead > 50 ? year - 100 : year
            let parsed = try #require(Timestamp(httpDate: text), "\(text)")
            #expect(parsed.iso8601.hasPrefix("\(expectedYear)-01-01T"), "\(text) -> \(parsed)")
        }
    }

    @Test func httpDate_refusesOtherText() {
        let refused = [
            "", "sun, 06 nov 1994 08:49:37 gmt", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Nov 1994 08:49:37 +0000",
            "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT",
            " Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT ", "Sun,  06 Nov 1994 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT", "Sun, 06-Nov-94 08:49:37 GMT", "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994", "Sun Nov 06 08:49:37 1994 GMT", "Sun, 31 Apr 2026 00:00:00 GMT",
            "Sun, 29 Feb 2100 00:00:00 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Now 1994 08:49:37 GMT",
            "Son, 06 Nov 1994 08:49:37 GMT", "1994-11-06T08:49:37Z",
        ]
        for text in refused {
            #expect(Timestamp(httpDate: text) == nil, "\(text)")
        }
    }

    @Test func yearsOutsideFourDigits_useTheExpandedForm() {
        let t = Timestamp(secondsSince1970: 253_402_300_800)
        #expect(t.iso8601 == "+10000-01-01T00:00:00.000Z")
        #expect(t.httpDate == "Sat, 01 Jan +10000 00:00:00 GMT")
        #expect(Timestamp(httpDate: t.httpDate) == nil)
        #expect(Timestamp(secondsSince1970: -62_167_219_201).iso8601 == "-0001-12-31T23:59:59.000Z")
        let latest = Timestamp(secondsSince1970: Int64.max, nanoseconds: 999_999_999)
        #expect(latest.description == "+292277026596-12-04T15:30:07.999999999Z")
        #expect(Timestamp(iso8601: latest.description) == latest)
        let earliest = Timestamp(secondsSince1970: Int64.min)
        #expect(earliest.description == "-292277022657-01-27T08:29:52.000Z")
        #expect(Timestamp(iso8601: earliest.description) == earliest)
    }

    // MARK: Codable

    @Test func codable_isTheExactISO8601String() throws {
        let t = Timestamp(secondsSince1970: 784_111_777, nanoseconds: 250_000_000)
        let json = String(decoding: try JSONEncoder().encode([t]), as: UTF8.self)
        #expect(json == #"["1994-11-06T08:49:37.250Z"]"#)
        #expect(try JSONDecoder().decode([Timestamp].self, from: Data(json.utf8)) == [t])
        let fine = Timestamp(secondsSince1970: -5, nanoseconds: 1)
        #expect(try JSONDecoder().decode([Timestamp].self, from: JSONEncoder().encode([fine])) == [fine])
        #expect(try JSONDecoder().decode([Timestamp].self, from: Data(#"["1994-11-06T09:49:37.25+01:00"]"#.utf8)) == [t])
    }

    @Test func decoding_refusesNumbersAndOtherText() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Timestamp].self, from: Data("[784111777]".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([Timestamp].self, from: Data(#"["yesterday"]"#.utf8)) }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Timestamp].self, from: Data(#"["Sun, 06 Nov 1994 08:49:37 GMT"]"#.utf8))
        }
    }

    @Test func objectInfo_roundTripsThroughJSON() throws {
        let info = ObjectInfo(key: "caf\u{E9}", size: 3, etag: "900150983cd24fb0d6963f7d28e17f72",
                              lastModified: Timestamp(secondsSince1970: 1_795_984_928, nanoseconds: 123_456_789),
                              metadata: ["owner": "me"])
        let data = try JSONEncoder().encode(info)
        #expect(String(decoding: data, as: UTF8.self).contains(#""lastModified":"2026-11-29T20:42:08.123456789Z""#))
        #expect(try JSONDecoder().decode(ObjectInfo.self, from: data) == info)
        let object = StoredObject(info: info, data: Array("abc".utf8))
        #expect(try JSONDecoder().decode(StoredObject.self, from: JSONEncoder().encode(object)) == object)
    }

    private func pad(_ value: some BinaryInteger, _ width: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(width - text.count, 0)) + text
    }
}
