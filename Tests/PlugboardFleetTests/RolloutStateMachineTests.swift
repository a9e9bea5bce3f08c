import PlugboardFleet
import Testing

/// The rollout's decisions alone: no store, no clock, no host. Each test plays the
/// fleet's part (what the hosts report, and when) and checks the actions answered.
@Suite struct RolloutStateMachineTests {
    typealias Machine = RolloutStateMachine
    let c = Hosts.candidate, p = Hosts.previous

    func machine(_ waves: [[String]], bake: Double = 10, maxErrorRate: Double = 0.01, waveTimeout: Double = 60) -> Machine {
        Machine(id: "r1", candidate: c, previous: p, waves: waves,
                settings: .init(bakeSeconds: bake, maxErrorRate: maxErrorRate, waveTimeoutSeconds: waveTimeout, rollbackTimeoutSeconds: 30))
    }

    func reason(_ action: Machine.Action) -> String? {
        if case .rollBack(_, let reason) = action { return reason }
        return nil
    }

    @Test func goodCandidate_goesWaveByWave_thenIsPromoted() {
        var m = machine([["a"], ["b", "c"]])
        #expect(m.start(now: 0) == .setTargets(wave: 0, hosts: ["a"]))
        // a still reloading: nothing yet.
        #expect(m.observed(Hosts.all([Hosts.on("a", p), Hosts.on("b", p), Hosts.on("c", p)]), now: 1) == .none)
        // a applied: baking starts; no next wave before the bake ends.
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", p), Hosts.on("c", p)]), now: 2) == .none)
        #expect(m.waveStates == ["baking", "pending"])
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", p), Hosts.on("c", p)]), now: 11) == .none)
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", p), Hosts.on("c", p)]), now: 12) == .setTargets(wave: 1, hosts: ["b", "c"]))
        let all = Hosts.all([Hosts.on("a", c), Hosts.on("b", c), Hosts.on("c", c)])
        #expect(m.observed(all, now: 13) == .none)
        #expect(m.observed(all, now: 23) == .promote(hosts: ["a", "b", "c"]))
        #expect(m.promoted() == .finish(.succeeded))
        #expect(m.phase == "succeeded")
        #expect(m.waveStates == ["done", "done"])
    }

    @Test func noBake_movesOnAsSoonAsAWaveApplied() {
        var m = machine([["a"], ["b"]], bake: 0)
        _ = m.start(now: 0)
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", p)]), now: 1) == .setTargets(wave: 1, hosts: ["b"]))
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", c)]), now: 2) == .promote(hosts: ["a", "b"]))
    }

    @Test func refusal_rollsBackEveryHostReached_namingTheHostAndItsError() {
        var m = machine([["a"], ["b"]])
        _ = m.start(now: 0)
        let action = m.observed(Hosts.all([Hosts.refused("a", c, running: p), Hosts.on("b", p)]), now: 1)
        #expect(action == .rollBack(hosts: ["a"], reason: reason(action) ?? ""))
        #expect(reason(action)?.contains("\"a\"") == true)
        #expect(reason(action)?.contains("reload.preflight_failed") == true)
        #expect(reason(action)?.contains("crashed") == true)
        // a never left p: the rollback is done at once; b was never touched.
        guard case .finish(.rolledBack(let why, let stragglers)) = m.observed(Hosts.all([Hosts.on("a", p), Hosts.on("b", p)]), now: 2) else {
            Issue.record("expected the rollout to end")
            return
        }
        #expect(why == reason(action))
        #expect(stragglers.isEmpty)
        #expect(m.phase == "rolled back")
        #expect(m.waveStates == ["rolled back", "pending"])
    }

    @Test func anOlderRefusal_ofAnotherDigest_isNotTheCandidates() {
        var m = machine([["a"]])
        _ = m.start(now: 0)
        #expect(m.observed(Hosts.all([Hosts.refused("a", "other", running: p)]), now: 1) == .none)
    }

    @Test func aRefusalLeftByAnEarlierRolloutOfTheSameCandidate_doesNotCount() {
        var m = machine([["a"]])
        _ = m.start(now: 0)
        #expect(m.observed(Hosts.all([Hosts.refused("a", c, running: p, rollout: "r0")]), now: 1) == .none)
        #expect(m.waveStates == ["applying"])
    }

    @Test func waveTimeout_rollsBack_namingAHostThatDidNotApply() {
        var m = machine([["a", "b"]], waveTimeout: 5)
        _ = m.start(now: 0)
        let slow = Hosts.all([Hosts.on("a", c), Hosts.on("b", p)])
        #expect(m.observed(slow, now: 5) == .none)
        let action = m.observed(slow, now: 5.5)
        #expect(action == .rollBack(hosts: ["a", "b"], reason: reason(action) ?? ""))
        #expect(reason(action)?.contains("timed out") == true)
        #expect(reason(action)?.contains("\"b\"") == true)
        // a goes back; the rollout ends when it reports the previous manifest.
        #expect(m.observed(slow, now: 6) == .none)
        #expect(m.observed(Hosts.all([Hosts.on("a", p), Hosts.on("b", p)]), now: 7) == .finish(.rolledBack(reason: reason(action)!, stragglers: [])))
    }

    @Test func notReady_isNotApplied() {
        var m = machine([["a"]], waveTimeout: 5)
        _ = m.start(now: 0)
        #expect(m.observed(Hosts.all([Hosts.on("a", c, ready: false)]), now: 1) == .none)
        #expect(m.waveStates == ["applying"])
    }

    @Test func lostHost_whileApplying_orBaking_rollsBack() {
        var m = machine([["a"], ["b"]])
        _ = m.start(now: 0)
        let action = m.observed(Hosts.all([Hosts.on("b", p)]), now: 1)
        #expect(reason(action)?.contains("host \"a\" was lost") == true)

        var n = machine([["a", "b"]])
        _ = n.start(now: 0)
        #expect(n.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", c)]), now: 1) == .none)
        let baking = n.observed(Hosts.all([Hosts.on("a", c)]), now: 2)
        #expect(baking == .rollBack(hosts: ["a", "b"], reason: reason(baking) ?? ""))
        #expect(reason(baking)?.contains("host \"b\" was lost") == true)
        // A lost host counts as rolled back: it is gone.
        #expect(n.observed(Hosts.all([Hosts.on("a", p)]), now: 3) == .finish(.rolledBack(reason: reason(baking)!, stragglers: [])))
    }

    @Test func errorRateOverTheBound_whileBaking_rollsBack_namingTheWorstHost() {
        var m = machine([["a", "b"]], maxErrorRate: 0.05)
        _ = m.start(now: 0)
        #expect(m.observed(Hosts.all([Hosts.on("a", c, requests: 100, errors: 1), Hosts.on("b", c, requests: 100, errors: 3)]), now: 1) == .none)
        let action = m.observed(Hosts.all([Hosts.on("a", c, requests: 100, errors: 1), Hosts.on("b", c, requests: 100, errors: 20)]), now: 2)
        #expect(reason(action)?.contains("error rate") == true)
        #expect(reason(action)?.contains("host \"b\"") == true)
        #expect(reason(action)?.contains("20 of 100") == true)
    }

    @Test func hostJoiningMidRollout_getsNoTarget_andDoesNotHoldItUp() {
        var m = machine([["a"]], bake: 0)
        _ = m.start(now: 0)
        // "z" joined on the previous manifest: not part of the plan.
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("z", p)]), now: 1) == .promote(hosts: ["a"]))
    }

    @Test func hostGoneBeforeItsWave_isDroppedFromIt() {
        var m = machine([["a"], ["b", "c"]], bake: 0)
        _ = m.start(now: 0)
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("c", p)]), now: 1) == .setTargets(wave: 1, hosts: ["c"]))
        #expect(m.waves == [["a"], ["c"]])
    }

    @Test func abort_rollsBack_andEndsAborted() {
        var m = machine([["a"], ["b"]])
        _ = m.start(now: 0)
        _ = m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", p)]), now: 1)
        #expect(m.abort(reason: "aborted", now: 2) == .rollBack(hosts: ["a"], reason: "aborted"))
        #expect(m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", p)]), now: 3) == .none)
        #expect(m.observed(Hosts.all([Hosts.on("a", p), Hosts.on("b", p)]), now: 4) == .finish(.aborted(reason: "aborted", stragglers: [])))
        #expect(m.phase == "aborted")
        // Nothing more to do once it ended.
        #expect(m.abort(reason: "again", now: 5) == .none)
    }

    @Test func rollback_endsAtItsTimeout_namingTheStragglers() {
        var m = machine([["a", "b"]])
        _ = m.start(now: 0)
        _ = m.observed(Hosts.all([Hosts.on("a", c), Hosts.on("b", c)]), now: 1)
        _ = m.abort(reason: "aborted", now: 2)
        let stuck = Hosts.all([Hosts.on("a", p), Hosts.on("b", c)])
        #expect(m.observed(stuck, now: 31) == .none)
        #expect(m.observed(stuck, now: 32.5) == .finish(.aborted(reason: "aborted", stragglers: ["b"])))
    }
}
