import Foundation
import PlugboardConcurrency

/// A process's resident memory, from /proc/<process>/status: the baseline when made, the
/// largest VmRSS sampled since, and the kernel's own peak (VmHWM, reset at the start by
/// /proc/<process>/clear_refs where the kernel allows it) to catch what falls between
/// samples.
public final class MemoryWatch: Sendable {
    private let process: String
    private let baseline: Int
    private let peak: LockedValueBox<Int>
    private let hwmReset: Bool

    /// - Parameter process: `self`, or a process id.
    public init(_ process: String) {
        self.process = process
        hwmReset = (try? "5".write(toFile: "/proc/\(process)/clear_refs", atomically: false, encoding: .utf8)) != nil
        baseline = Self.read("VmRSS", process) ?? 0
        peak = LockedValueBox(baseline)
    }

    public func sample() {
        guard let rss = Self.read("VmRSS", process) else { return }
        peak.withLock { $0 = max($0, rss) }
    }

    /// How far above the baseline the memory went.
    public var peakGrowth: Int {
        sample()
        var top = peak.withLock { $0 }
        if hwmReset, let hwm = Self.read("VmHWM", process) { top = max(top, hwm) }
        return top - baseline
    }

    public var peakText: String {
        "\(peak.withLock { $0 } >> 20) MiB sampled, VmHWM \(((Self.read("VmHWM", process) ?? 0) >> 20)) MiB\(hwmReset ? "" : " (not reset)"), baseline \(baseline >> 20) MiB"
    }

    /// A `/proc/<process>/status` field in bytes.
    private static func read(_ field: String, _ process: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.dropFirst(field.count + 1).filter(\.isNumber)
            return Int(digits).map { $0 * 1024 }
        }
        return nil
    }
}
