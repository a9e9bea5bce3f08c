import PlugboardAPI
import PlugboardFleet
import Testing

/// `--waves`: cumulative counts and percentages over the hosts sorted by id.
@Suite struct WavePlanTests {
    static func hosts(_ n: Int) -> [String] { (1...n).map { $0 < 10 ? "h0\($0)" : "h\($0)" }.shuffled() }

    @Test func defaultPlan_givesOneThenHalfThenTheRest() throws {
        let waves = try WavePlan(WavePlan.defaultText).waves(Self.hosts(10))
        #expect(waves == [["h01"], ["h02", "h03", "h04", "h05"], ["h06", "h07", "h08", "h09", "h10"]])
    }

    @Test func percentages_roundUp() throws {
        // 34% of 4 hosts is 1.36 hosts: 2.
        #expect(try WavePlan("34%").waves(Self.hosts(4)).map(\.count) == [2, 2])
        #expect(try WavePlan("1%,100%").waves(Self.hosts(3)).map(\.count) == [1, 2])
    }

    @Test func wavesThatAddNoHost_areLeftOut() throws {
        // 1, then 50% of 2 (1 again), then 100%.
        #expect(try WavePlan("1,50%,100%").waves(Self.hosts(2)) == [["h01"], ["h02"]])
        #expect(try WavePlan("5,100%").waves(Self.hosts(3)) == [["h01", "h02", "h03"]])
    }

    @Test func aLastWaveOfEveryHostLeft_isImplied() throws {
        #expect(try WavePlan("1,2").waves(Self.hosts(5)).map(\.count) == [1, 1, 3])
    }

    @Test func theSameHosts_giveTheSameWaves() throws {
        let plan = try WavePlan("2,50%")
        #expect(plan.waves(Self.hosts(9)) == plan.waves(Self.hosts(9)))
    }

    @Test(arguments: ["", "0", "1,,2", "0%", "101%", "half", "-1", "1.5"])
    func invalidElements_areRefused(text: String) {
        #expect(throws: PlugboardError.self) { try WavePlan(text) }
        do { _ = try WavePlan(text) } catch { #expect(error.code == .fleetWavesInvalid) }
    }
}
