import PlugboardAPI

/// `--waves`: cumulative host counts and percentages (`1,50%,100%`), turned into waves of
/// hosts. Hosts are taken sorted by id, so the same fleet gives the same waves; a
/// percentage is of the hosts live at the start, rounded up; a count or percentage beyond
/// the hosts means all of them; a wave that adds no host is left out; and a last wave of
/// every host left is implied.
public struct WavePlan: Sendable, Equatable {
    public enum Step: Sendable, Equatable {
        case count(Int)
        case percent(Int)
    }

    public static let defaultText = "1,50%,100%"

    public let steps: [Step]
    /// As given.
    public let text: String

    /// - Throws: `fleet.waves_invalid` for an element that is neither a count from 1 nor a
    ///   percentage from 1% to 100%.
    public init(_ text: String) throws(PlugboardError) {
        var steps: [Step] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let p = part.trimmingPrefix(while: { $0 == " " })
            if p.hasSuffix("%"), let n = Int(p.dropLast()), (1...100).contains(n) {
                steps.append(.percent(n))
            } else if let n = Int(p), n >= 1 {
                steps.append(.count(n))
            } else {
                throw PlugboardError(.fleetWavesInvalid, "invalid --waves \"\(text)\": \"\(part)\" is not a host count or a percentage",
                    detail: "Each wave is a cumulative count of hosts (1 or more) or a percentage of the fleet (1% to 100%), separated by commas.",
                    hint: "Write --waves \(Self.defaultText).")
            }
        }
        self.steps = steps
        self.text = text
    }

    /// The waves for `hosts`: each wave holds the hosts it adds.
    public func waves(_ hosts: [String]) -> [[String]] {
        let sorted = hosts.sorted()
        let n = sorted.count
        var out: [[String]] = []
        var reached = 0
        for step in steps {
            let upTo: Int
            switch step {
            case .count(let c): upTo = min(c, n)
            case .percent(let p): upTo = min(n, (p * n + 99) / 100)
            }
            if upTo > reached {
                out.append(Array(sorted[reached..<upTo]))
                reached = upTo
            }
        }
        if reached < n { out.append(Array(sorted[reached...])) }
        return out
    }
}
