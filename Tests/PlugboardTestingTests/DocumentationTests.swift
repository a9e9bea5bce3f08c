import Foundation
import PlugboardTesting
import Testing

@Suite("docs/OBJECT_STORAGE.md")
struct DocumentationTests {
    private var document: String? {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/OBJECT_STORAGE.md")
        return try? String(contentsOf: url, encoding: .utf8)
    }

    @Test func everyConformanceRule_isListedWithItsSummary() throws {
        let text = try #require(document)
        for rule in ObjectStorageConformance.rules {
            #expect(text.contains("| `\(rule.name)` | \(rule.summary) |"), "rule \(rule.name) is missing or differs in docs/OBJECT_STORAGE.md")
        }
    }

    @Test func theDocumentedFailureExample_countsTheRulesThereAre() throws {
        let text = try #require(document)
        #expect(text.contains("1 of \(ObjectStorageConformance.rules.count) ObjectStorage conformance rules failed:"))
    }
}
