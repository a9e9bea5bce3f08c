import Foundation
import PlugboardAPI
import PlugboardTesting
import Testing

/// The suite must name the rule a backend breaks, and only that rule's neighbours.
@Suite("ObjectStorageConformance against broken storages")
struct BrokenStorageTests {
    private static let quick = ObjectStorageConformance.Options(includeLargeObjects: false)

    private func report(_ flaw: BrokenStorage.Flaw,
                        options: ObjectStorageConformance.Options = quick) async -> ObjectStorageConformance.Report {
        await ObjectStorageConformance(makeStorage: { BrokenStorage(flaw) }, options: options).run()
    }

    @Test func deleteOfMissingKeyThrowing_failsDeleteIsIdempotent_withExpectedAndFound() async throws {
        let report = await report(.deleteOfMissingKeyThrows)
        #expect(report.failedRuleNames == ["delete_is_idempotent"])
        guard case .failed(let reason) = report.result(named: "delete_is_idempotent")?.outcome else {
            Issue.record("delete_is_idempotent did not fail: \(report)")
            return
        }
        #expect(reason.contains(#"delete of missing key "<prefix>/never-written""#))
        #expect(reason.contains("expected success"))
        #expect(reason.contains("found storage.not_found"))
        #expect(report.result(named: "put_overwrites")?.outcome == .passed)
    }

    @Test func readAtOnceIgnoringTheRange_failsGetWithoutWaitingMatchesGet() async throws {
        let report = await report(.readyIgnoresRange)
        #expect(report.failedRuleNames == ["get_without_waiting_matches_get"])
        guard case .failed(let reason) = report.result(named: "get_without_waiting_matches_get")?.outcome else {
            Issue.record("get_without_waiting_matches_get did not fail: \(report)")
            return
        }
        #expect(reason.contains(#"getWithoutWaiting of key "<prefix>/ready" with range"#), "\(reason)")
        #expect(reason.contains("compared with get(_:range:)") || reason.contains("but get(_:range:) of the same failed"), "\(reason)")
        #expect(report.result(named: "get_without_waiting_sees_whole_versions")?.outcome == .passed)
    }

    @Test func aStorageThatReadsNothingAtOnce_hasTheTwoRulesSkipped_sayingWhy() async throws {
        let options = ObjectStorageConformance.Options(
            includeLargeObjects: false, only: ["get_without_waiting_matches_get", "get_without_waiting_sees_whole_versions"])
        let report = await report(.listedTypesUnknown, options: options)
        #expect(report.failedRuleNames.isEmpty, "\(report)")
        for name in ["get_without_waiting_matches_get", "get_without_waiting_sees_whole_versions"] {
            guard case .skipped(let reason) = report.result(named: name)?.outcome else {
                Issue.record("\(name) was not skipped: \(report)")
                continue
            }
            #expect(reason.contains("the storage reads nothing at once"), "\(reason)")
        }
    }

    @Test func listingInStringOrder_failsListUTF8ByteOrder() async throws {
        let report = await report(.listsInStringOrder)
        #expect(report.failedRuleNames == ["list_utf8_byte_order"])
        guard case .failed(let reason) = report.result(named: "list_utf8_byte_order")?.outcome else {
            Issue.record("list_utf8_byte_order did not fail: \(report)")
            return
        }
        // The reason shows both orders, keys written after the rule's prefix.
        #expect(reason.contains(#"expected keys "<prefix>/" + ["B", "a", "e\u{301}", "f", "z", "\u{E9}""#))
        #expect(reason.contains(#"found "<prefix>/" + ["B", "a", "f", "z", "e\u{301}", "\u{E9}""#))
        #expect(report.result(named: "put_get_roundtrip")?.outcome == .passed)
        #expect(report.result(named: "delete_is_idempotent")?.outcome == .passed)
    }

    @Test func keysComparedAsStrings_failTheUnicodeKeyAndListingRules() async throws {
        let report = await report(.keysCompareAsStrings)
        #expect(Set(report.failedRuleNames) == ["key_unicode_equivalents_distinct", "unicode_keys", "list_utf8_byte_order", "list_prefix"])
        #expect(report.result(named: "key_case_sensitive")?.outcome == .passed)
        #expect(report.result(named: "put_overwrites")?.outcome == .passed)
    }

    @Test func quotedUppercaseETag_failsETagIsMD5Hex_showingBothValues() async throws {
        let report = await report(.quotedUppercaseETag)
        // Only the rule about the ETag's form fails; the rules that merely compare ETags with
        // the data accept any quoting and case.
        #expect(report.failedRuleNames == ["etag_is_md5_hex"])
        guard case .failed(let reason) = report.result(named: "etag_is_md5_hex")?.outcome else {
            Issue.record("etag_is_md5_hex did not fail: \(report)")
            return
        }
        #expect(reason.contains("expected d41d8cd98f00b204e9800998ecf8427e, found \"D41D8CD98F00B204E9800998ECF8427E\""))
    }

    @Test func lowercasingMetadataKeys_failsMetadataBadKeyRefused() async throws {
        let report = await report(.lowercasesMetadataKeys)
        #expect(report.failedRuleNames == ["metadata_bad_key_refused"])
        guard case .failed(let reason) = report.result(named: "metadata_bad_key_refused")?.outcome else { return }
        #expect(reason.contains("expected storage.invalid_metadata, found success"))
    }

    @Test func tokenOnLastPage_failsListLastPageHasNoToken() async throws {
        let report = await report(.tokenOnLastPage)
        #expect(report.failedRuleNames == ["list_last_page_has_no_token"])
        #expect(report.result(named: "list_utf8_byte_order")?.outcome == .passed)
    }

    @Test func hangingGet_failsTheRuleOnTimeout_andTheSuiteFinishes() async throws {
        let options = ObjectStorageConformance.Options(ruleTimeout: .milliseconds(300),
                                                       only: ["get_missing_is_not_found", "delete_is_idempotent"])
        let report = await report(.getHangs, options: options)
        #expect(report.failedRuleNames == ["get_missing_is_not_found"])
        guard case .failed(let reason) = report.result(named: "get_missing_is_not_found")?.outcome else { return }
        #expect(reason.contains("did not finish within"))
    }

    @Test func makeStorageThrowing_failsEveryRule_sayingSo() async throws {
        struct Unreachable: Error {}
        let report = await ObjectStorageConformance(makeStorage: { throw Unreachable() }, options: Self.quick).run()
        #expect(report.failures.count == report.results.count - 1) // large_object_64mib is skipped
        for failure in report.failures {
            guard case .failed(let reason) = failure.outcome else { continue }
            #expect(reason.contains("makeStorage threw Unreachable"))
        }
    }

    @Test func requireAllPassed_throwsAListOfTheFailedRulesByName() async throws {
        let report = await report(.deleteOfMissingKeyThrows)
        let failure = #expect(throws: ObjectStorageConformance.Failure.self) { try report.requireAllPassed() }
        let text = failure?.description ?? ""
        #expect(text.hasPrefix("1 of \(report.results.count) ObjectStorage conformance rules failed:"))
        #expect(text.contains("FAIL delete_is_idempotent: "))
        #expect(!text.contains("put_overwrites"))
        #expect(text.contains("(<prefix> stands for the rule's own key prefix"))
    }

    @Test func reportDescription_summarizesAndListsNonPassingRules() async {
        let report = await report(.deleteOfMissingKeyThrows)
        let lines = report.description.split(separator: "\n")
        #expect(lines.first?.hasPrefix("ObjectStorage conformance: \(report.results.count) rules, ") == true)
        #expect(lines.contains { $0.contains("FAIL delete_is_idempotent") })
        #expect(lines.contains { $0.contains("SKIP large_object_64mib") })
    }

    @Test func unusableOptions_areReportedNotTrapped() async {
        let badPrefix = ObjectStorageConformance.Options(keyPrefix: "has/slash")
        let badTasks = ObjectStorageConformance.Options(concurrentTasks: 0)
        let badSize = ObjectStorageConformance.Options(largeObjectByteCount: .max)
        for options in [badPrefix, badTasks, badSize] {
            let report = await ObjectStorageConformance(makeStorage: { InMemoryObjectStorage() }, options: options).run()
            #expect(report.failedRuleNames == ["options"])
        }
    }

    @Test func clockAnHourOff_failsPutReturnsInfo_showingTheTimes() async throws {
        let hourAgo: @Sendable () -> Timestamp = { Timestamp(secondsSince1970: Timestamp.now().seconds - 3600) }
        let report = await ObjectStorageConformance(makeStorage: { InMemoryObjectStorage(now: hourAgo) }, options: Self.quick).run()
        #expect(report.failedRuleNames == ["put_returns_info"])
        guard case .failed(let reason) = report.result(named: "put_returns_info")?.outcome else { return }
        #expect(reason.contains(#"lastModified from put of key "<prefix>/object": expected the local clock ("#))
        #expect(reason.contains("(Options.clockSkewTolerance), found "))
    }

    @Test func clockMinutesOff_passesWithinTheTolerance_andFailsBeyondIt() async throws {
        let tenMinutesAhead: @Sendable () -> Timestamp = { Timestamp(secondsSince1970: Timestamp.now().seconds + 600) }
        let makeStorage: @Sendable () async throws -> any ObjectStorage = { InMemoryObjectStorage(now: tenMinutesAhead) }
        let lenient = ObjectStorageConformance.Options(only: ["put_returns_info"])
        #expect(await ObjectStorageConformance(makeStorage: makeStorage, options: lenient).run().failures.isEmpty)
        let strict = ObjectStorageConformance.Options(clockSkewTolerance: .seconds(60), only: ["put_returns_info"])
        #expect(await ObjectStorageConformance(makeStorage: makeStorage, options: strict).run().failedRuleNames == ["put_returns_info"])
    }

    @Test func listedLastModifiedTwoSecondsFromHead_failsListEntriesMatchHead() async throws {
        let report = await report(.listedLastModifiedLater)
        #expect(report.failedRuleNames == ["list_entries_match_head"])
        guard case .failed(let reason) = report.result(named: "list_entries_match_head")?.outcome else { return }
        #expect(reason.contains("expected list and head within a second"))
    }

    @Test func listedDefaultsClaimedAsTheObjects_failListEntriesMatchHead_butUnknownOnesPass() async throws {
        let report = await report(.listedDefaultsAsKnown)
        #expect(report.failedRuleNames == ["list_entries_match_head"])
        if case .failed(let reason) = report.result(named: "list_entries_match_head")?.outcome {
            #expect(reason.contains("contentType of") && reason.contains("expected text/plain, found application/octet-stream"), "\(reason)")
        } else {
            Issue.record("list_entries_match_head did not fail")
        }
        #expect(await self.report(.listedTypesUnknown).failures.isEmpty)
    }

    @Test func unknownRuleNameInOnly_isReportedAsAFailure() async {
        let options = ObjectStorageConformance.Options(only: ["put_overwrites", "no_such_rule"])
        let report = await ObjectStorageConformance(makeStorage: { InMemoryObjectStorage() }, options: options).run()
        #expect(report.failedRuleNames == ["no_such_rule"])
        #expect(report.passedRuleNames == ["put_overwrites"])
    }
}
