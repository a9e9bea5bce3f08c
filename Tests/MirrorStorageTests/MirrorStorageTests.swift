import InMemoryStorage
import MirrorStorageCore
import PlugboardAPI
import PlugboardTesting
import Testing

/// The mirror's reads and writes over two in-memory backends, the copier not started.
@Suite struct MirrorStorageTests {
    @Test func passesTheWholeConformanceSuite_overTwoBackends() async throws {
        let report = await ObjectStorageConformance(makeStorage: { MirrorFixture().mirror() }).run()
        try report.requireAllPassed()
    }

    @Test func passesTheWholeConformanceSuite_withTheOldBackendHoldingOtherKeys() async throws {
        // Keys the suite never uses, only in the old backend: every rule then runs while
        // reads and listings fall back to the old backend.
        let report = await ObjectStorageConformance(makeStorage: {
            let fixture = MirrorFixture()
            for key in ["\u{7F}zz-old-only", "\u{7F}zz-old-only-2"] {
                _ = try await fixture.old.put(key, data: [1], contentType: nil, metadata: [:])
            }
            return fixture.mirror()
        }).run()
        try report.requireAllPassed()
    }

    @Test func reads_fallBackToTheOldBackend_forWhatIsNotCopied() async throws {
        let fixture = MirrorFixture()
        try await fixture.fill(fixture.old, count: 3)
        _ = try await fixture.new.put(MirrorFixture.key(1), data: Array("newer".utf8), contentType: nil, metadata: [:])
        let mirror = fixture.mirror()
        #expect(try await mirror.get(MirrorFixture.key(0)).data == MirrorFixture.bytes(0))
        #expect(try await mirror.head(MirrorFixture.key(0)).metadata == ["n": "0"])
        #expect(try await mirror.get(MirrorFixture.key(1)).data == Array("newer".utf8))
        let ranged = try await mirror.get(MirrorFixture.key(2), range: .closed(first: 0, last: 1))
        #expect(try await ranged.body.collect(upTo: 100) == Array(MirrorFixture.bytes(2)[0...1]))
        let listing = try await mirror.list(prefix: "obj/", limit: 2, continuationToken: nil)
        #expect(listing.objects.map(\.key) == [MirrorFixture.key(0), MirrorFixture.key(1)])
        #expect(listing.objects[1].size == 5, "the new backend's entry wins")
        let rest = try await mirror.list(prefix: "obj/", limit: 2, continuationToken: listing.nextContinuationToken)
        #expect(rest.objects.map(\.key) == [MirrorFixture.key(2)])
        #expect(rest.nextContinuationToken == nil)
        await #expect(throws: PlugboardError.self) { _ = try await mirror.get("missing") }
    }

    @Test func writes_reachBoth_andADeleteLeavesNothingToFallBackTo() async throws {
        let fixture = MirrorFixture()
        try await fixture.fill(fixture.old, count: 2)
        let mirror = fixture.mirror()
        _ = try await mirror.put("fresh", data: [1, 2], contentType: "text/x", metadata: ["a": "b"])
        _ = try await mirror.put("streamed", body: ObjectBody([3, 4, 5]), contentType: "text/y", metadata: [:], condition: .none)
        for backend in [fixture.old, fixture.new] {
            #expect(try await backend.get("fresh").data == [1, 2])
            #expect(try await backend.head("fresh").contentType == "text/x")
            #expect(try await backend.get("streamed").data == [3, 4, 5])
        }
        try await mirror.delete(MirrorFixture.key(0))
        await #expect(throws: PlugboardError.self) { _ = try await mirror.get(MirrorFixture.key(0)) }
        await #expect(throws: PlugboardError.self) { _ = try await fixture.old.head(MirrorFixture.key(0)) }
    }

    @Test func conditions_seeTheObjectOnlyTheOldBackendHolds() async throws {
        let fixture = MirrorFixture()
        try await fixture.fill(fixture.old, count: 1)
        let mirror = fixture.mirror()
        let key = MirrorFixture.key(0)
        let absent = await #expect(throws: PlugboardError.self) {
            _ = try await mirror.put(key, body: ObjectBody([9]), contentType: nil, metadata: [:], condition: .absent)
        }
        #expect(absent?.code == .storagePreconditionFailed)
        let etag = try await fixture.old.head(key).etag
        let stale = await #expect(throws: PlugboardError.self) {
            _ = try await mirror.put(key, body: ObjectBody([9]), contentType: nil, metadata: [:], condition: .matches(etag: "0123"))
        }
        #expect(stale?.code == .storagePreconditionFailed)
        _ = try await mirror.put(key, body: ObjectBody([9]), contentType: nil, metadata: [:], condition: .matches(etag: etag))
        #expect(try await fixture.new.get(key).data == [9])
        #expect(try await fixture.old.get(key).data == [9])
    }

    @Test func aTokenTheListingDidNotIssue_isRefused() async throws {
        let mirror = MirrorFixture().mirror()
        for token in ["", "m1.s.s", "m1.x.s.YQ", "abc"] {
            let error = await #expect(throws: PlugboardError.self) {
                _ = try await mirror.list(prefix: "", limit: 10, continuationToken: token)
            }
            #expect(error?.code == .storageInvalidArgument)
        }
    }
}
