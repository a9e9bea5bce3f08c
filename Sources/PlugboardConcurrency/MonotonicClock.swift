#if canImport(Glibc)
import Glibc
#endif

/// Monotonic time in seconds, for deadlines and durations that a change of the wall clock
/// must not move (the server's timeouts, a reload's and a preflight's time).
public enum MonotonicClock {
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
