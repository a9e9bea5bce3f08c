@testable import PlugboardHTTP
import Testing

/// The sliding window of the minimum transfer rate, on a clock the test sets.
@Suite struct TransferRateTests {
    /// A client that keeps the rate in one burst a second is never judged slow, wherever
    /// in the second the check falls.
    @Test func burstsAtTheRate_areNeverBelowIt() {
        var rate = TransferRate(now: 0)
        var t = 0.5
        while t < 40 {
            rate.add(1100, now: t)
            for step in stride(from: 0.05, to: 1, by: 0.1) {
                let slow = rate.isBelow(1024, now: t + step)
                #expect(!slow, "judged slow at \(t + step)")
            }
            t += 1
        }
    }

    @Test func aTrickleAfterAFastStart_isBelowOnceTheWindowHasPassed() {
        var rate = TransferRate(now: 0)
        rate.add(10 << 20, now: 0.1)
        var below: Double?
        var t = 1.0
        while t < 30 && below == nil {
            rate.add(10, now: t)
            if rate.isBelow(1024, now: t) { below = t }
            t += 0.25
        }
        let at = try! #require(below)
        #expect(at >= 11 && at <= 12.5, "below at \(at)")
    }

    @Test func aSteadyRateJustBelowTheMinimum_isBelow() {
        var rate = TransferRate(now: 0)
        var t = 0.0
        var below = false
        while t < 15 {
            rate.add(95, now: t)
            below = below || rate.isBelow(1000, now: t)
            t += 0.1
        }
        #expect(below)
    }
}

extension TransferRateTests {
    /// A window as long as the longest pause the server allows: a client that sent fast
    /// and then paused for less than that is not below the rate; with the 10 s window it
    /// was, 11 s into a pause that `--request-timeout 120` allows.
    @Test func aPauseShorterThanAWideWindow_isNotBelow_butATrickleStillIs() {
        var wide = TransferRate(now: 0, windowSeconds: 120)
        var narrow = TransferRate(now: 0)
        #expect(wide.window == 120 && narrow.window == 10)
        for t in stride(from: 0.0, to: 20, by: 0.5) {
            wide.add(1 << 20, now: t)
            narrow.add(1 << 20, now: t)
        }
        // 60 s of silence.
        let narrowBelow = narrow.isBelow(1024, now: 40)
        let wideBelow = wide.isBelow(1024, now: 80)
        #expect(narrowBelow)
        #expect(!wideBelow)
        // A trickle the whole window long is still too slow.
        var t = 80.0
        var below = false
        while t < 300 && !below {
            wide.add(10, now: t)
            below = wide.isBelow(1024, now: t)
            t += 1
        }
        #expect(below && t > 140, "below at \(t)")
        #expect(TransferRate(now: 0, windowSeconds: 2.5).window == 10)
        #expect(TransferRate(now: 0, windowSeconds: 30.2).window == 31)
    }
}
