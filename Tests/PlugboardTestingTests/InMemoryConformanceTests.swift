import PlugboardAPI
import PlugboardTesting
import Testing

@Suite("ObjectStorageConformance against InMemoryObjectStorage")
struct InMemoryConformanceTests {
    @Test func inMemoryStorage_passesEveryRule_including64MiB() async throws {
        let report = await ObjectStorageConformance(makeStorage: { InMemoryObjectStorage() }).run()
        #expect(report.results.count == ObjectStorageConformance.rules.count)
        #expect(report.result(named: "large_object_64mib")?.outcome == .passed)
        #expect(report.failures.isEmpty, "\(report)")
        try report.requireAllPassed()
    }

    @Test func sharedStorageWithOtherData_passesAndIsLeftAsItWas() async throws {
        let shared = InMemoryObjectStorage()
        let unrelated = ["app/config.json", "..", "z", "plugboard-conformance-0000000000000000-put_overwrites/object"]
        for key in unrelated { try await shared.put(key, data: Array(key.utf8)) }
        let options = ObjectStorageConformance.Options(includeLargeObjects: false)
        let report = await ObjectStorageConformance(makeStorage: { shared }, options: options).run()
        #expect(report.failures.isEmpty, "\(report)")
        let left = try await shared.list(prefix: "").map(\.key)
        #expect(Set(left) == Set(unrelated))
        // key_dotdot_ok overwrites the exact key ".." and then puts the old object back.
        #expect(try await shared.data(for: "..") == Array("..".utf8))
    }

    @Test func ruleNames_areUniqueAndCoverTheRequiredRules() {
        let names = ObjectStorageConformance.rules.map(\.name)
        #expect(Set(names).count == names.count)
        let required = [
            "put_overwrites", "delete_is_idempotent", "get_missing_is_not_found", "head_missing_is_not_found",
            "key_empty_refused", "key_1025_bytes_refused", "key_nul_refused", "key_1024_bytes_no_slash_ok",
            "key_dotdot_ok", "key_leading_slash_ok", "key_a_and_a_slash_b_coexist", "metadata_roundtrip",
            "metadata_bad_key_refused", "metadata_bad_value_refused", "metadata_over_2kb_refused", "etag_is_md5_hex",
            "content_type_roundtrip_and_default", "list_utf8_byte_order", "list_prefix",
            "list_pagination_all_pages_no_dups", "list_limit_bounds_refused", "list_bad_token_refused",
            "large_object_64mib", "concurrent_writers", "unicode_keys",
        ]
        for name in required {
            #expect(names.contains(name), "missing rule \(name)")
        }
        for rule in ObjectStorageConformance.rules {
            #expect(rule.summary.hasSuffix("."), "summary of \(rule.name) is not a sentence")
        }
        #expect(ObjectStorageConformance.rules.filter(\.isOptional).map(\.name) == ["large_object_64mib"])
    }

    @Test func largeObjects_canBeSkipped() async {
        let options = ObjectStorageConformance.Options(includeLargeObjects: false, only: ["large_object_64mib", "put_overwrites"])
        let report = await ObjectStorageConformance(makeStorage: { InMemoryObjectStorage() }, options: options).run()
        #expect(report.results.map(\.name) == ["put_overwrites", "large_object_64mib"])
        #expect(report.result(named: "large_object_64mib")?.outcome == .skipped(reason: "Options.includeLargeObjects is false"))
        #expect(report.allPassed)
    }

    @Test func skippedRules_areReportedWithTheirReason_andUnknownNamesFail() async {
        let options = ObjectStorageConformance.Options(
            includeLargeObjects: false, only: ["put_overwrites", "put_absent_concurrent_one_wins"],
            skip: ["put_absent_concurrent_one_wins": "the test server checks the condition in a second step", "no_such_rule": "x"])
        let report = await ObjectStorageConformance(makeStorage: { InMemoryObjectStorage() }, options: options).run()
        #expect(report.result(named: "put_absent_concurrent_one_wins")?.outcome
                == .skipped(reason: "the test server checks the condition in a second step"))
        #expect(report.result(named: "put_overwrites")?.outcome == .passed)
        #expect(report.failedRuleNames == ["no_such_rule"])
        #expect(report.description.contains("SKIP put_absent_concurrent_one_wins: the test server checks the condition in a second step"))
    }
}
