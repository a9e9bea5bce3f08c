import Foundation
import PlugboardAPI
import Testing

/// `ObjectInfo.unknown` (PlugboardAPI 1.3) beside what code built against 1.0 sees.
@Suite struct ObjectInfoUnknownTests {
    static let time = Timestamp(secondsSince1970: 1_800_000_000)

    @Test func apiVersion_includesOnePointThree() {
        #expect(APIVersion.current >= APIVersion(major: 1, minor: 3, patch: 0))
    }

    @Test func theOneZeroInitializerKnowsEverything() {
        let info = ObjectInfo(key: "k", size: 1, etag: String(repeating: "a", count: 32), contentType: "text/csv",
                              lastModified: Self.time, metadata: ["a": "b"])
        #expect(info.unknown.isEmpty)
        #expect(info.knownContentType == "text/csv" && info.knownMetadata == ["a": "b"])
    }

    @Test func unknownFieldsHoldTheDefaults_andAreNil() {
        let info = ObjectInfo(key: "k", size: 1, etag: String(repeating: "a", count: 32), contentType: "text/csv",
                              lastModified: Self.time, metadata: ["a": "b"], unknown: [.contentType, .metadata])
        #expect(info.contentType == ObjectContentType.defaultValue && info.metadata.isEmpty)
        #expect(info.knownContentType == nil && info.knownMetadata == nil)
        let typeOnly = ObjectInfo(key: "k", size: 1, etag: String(repeating: "a", count: 32), contentType: "text/csv",
                                  lastModified: Self.time, metadata: ["a": "b"], unknown: [.contentType])
        #expect(typeOnly.knownContentType == nil && typeOnly.knownMetadata == ["a": "b"])
    }

    @Test func anEntryThatKnowsLessIsNotEqualToOneThatKnows() {
        let known = ObjectInfo(key: "k", size: 1, etag: String(repeating: "a", count: 32), lastModified: Self.time)
        var unknown = known
        unknown.unknown = [.metadata]
        #expect(known != unknown)
        #expect(Set([known, unknown]).count == 2)
    }

    @Test func codableRoundTrips_andReadsTextWrittenBeforeOneThree() throws {
        let info = ObjectInfo(key: "k", size: 1, etag: String(repeating: "a", count: 32),
                              lastModified: Self.time, unknown: [.contentType, .metadata])
        let data = try JSONEncoder().encode(info)
        #expect(try JSONDecoder().decode(ObjectInfo.self, from: data) == info)
        // The same fields without "unknown", as 1.2 encoded them.
        var object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        object["unknown"] = nil
        let old = try JSONDecoder().decode(ObjectInfo.self, from: try JSONSerialization.data(withJSONObject: object))
        #expect(old.unknown.isEmpty && old.key == "k" && old.contentType == ObjectContentType.defaultValue)
    }
}
