import PlugboardAPI
@testable import PlugboardS3Server
import Testing

@Suite struct PostPolicyTests {
    static let now = Timestamp(secondsSince1970: 1_700_000_000)

    static func policy(_ json: String) throws(S3Error) -> PostPolicy { try PostPolicy(json: Array(json.utf8)) }

    @Test func readsEveryConditionForm() throws {
        let policy = try Self.policy("""
            {"expiration": "2023-11-14T23:13:20.000Z", "conditions": [
              {"bucket": "docs"}, ["eq", "$Content-Type", "image/png"], ["starts-with", "$key", "up/"],
              ["content-length-range", 1, 100], ["content-length-range", "10", "1000"], {"x-amz-meta-a": "1", "acl": "private"}]}
            """)
        #expect(policy.expiration == Timestamp(secondsSince1970: 1_700_003_600))
        #expect(policy.conditions == [
            .equals(field: "bucket", value: "docs"), .equals(field: "content-type", value: "image/png"),
            .startsWith(field: "key", prefix: "up/"), .contentLengthRange(min: 1, max: 100), .contentLengthRange(min: 10, max: 1000),
            .equals(field: "x-amz-meta-a", value: "1"), .equals(field: "acl", value: "private"),
        ])
        #expect(policy.contentLengthRange! == (10, 100))
        #expect(PostPolicy.Condition.startsWith(field: "key", prefix: "a\"b").text == "[\"starts-with\", \"$key\", \"a\\\"b\"]")
    }

    @Test func refusesDocumentsThatDoNotRead() {
        let cases: [(String, String)] = [
            ("not JSON", "Invalid JSON"),
            ("[]", "expected a JSON object"),
            ("{\"conditions\": []}", "Policy missing expiration"),
            ("{\"expiration\": \"tomorrow\", \"conditions\": []}", "Invalid 'expiration' value"),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\"}", "Policy missing conditions"),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\", \"conditions\": {}}", "must be a List"),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\", \"conditions\": [{\"key\": 1}]}", "value must be a string"),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\", \"conditions\": [[\"eq\", \"key\", \"x\"]]}", "after a \"$\""),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\", \"conditions\": [[\"eq\", \"$key\"]]}", "three strings"),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\", \"conditions\": [[\"content-length-range\", 5, 1]]}", "min <= max"),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\", \"conditions\": [[\"matches\", \"$key\", \"x\"]]}", "unknown operation"),
            ("{\"expiration\": \"2023-11-14T23:13:20Z\", \"conditions\": [3]}", "found an integer"),
        ]
        for (json, expected) in cases {
            let error = #expect(throws: S3Error.self, "\(json)") { _ = try Self.policy(json) }
            #expect(error?.code == "InvalidPolicyDocument", "\(json)")
            #expect(error?.status == 400)
            #expect(error?.message.contains(expected) == true, "\(json): \(error?.message ?? "")")
        }
        let base64 = #expect(throws: S3Error.self) { _ = try PostPolicy(base64: "not base64!") }
        #expect(base64?.code == "InvalidPolicyDocument")
    }

    @Test func checksConditionsExpirationAndExtraFields() throws {
        let policy = try Self.policy("""
            {"expiration": "2023-11-14T23:13:20.000Z", "conditions": [
              {"bucket": "docs"}, ["starts-with", "$key", "up/"], ["eq", "$Content-Type", "image/png"],
              ["starts-with", "$x-amz-meta-tag", ""], ["content-length-range", 0, 10]]}
            """)
        let fields: [(name: String, value: String)] = [("key", "up/a"), ("content-type", "image/png"), ("x-amz-meta-tag", "anything"),
                                                       ("policy", "p"), ("X-Amz-Signature", "s"), ("x-ignore-me", "1"), ("file", "f")]
        try policy.check(fields: fields, bucket: "docs", now: Self.now)

        let wrongBucket = #expect(throws: S3Error.self) { try policy.check(fields: fields, bucket: "other", now: Self.now) }
        #expect(wrongBucket?.code == "AccessDenied")
        #expect(wrongBucket?.message.hasPrefix("Invalid according to Policy: Policy Condition failed: [\"eq\", \"$bucket\", \"docs\"]") == true)

        var outside = fields
        outside[0].value = "down/a"
        let prefix = #expect(throws: S3Error.self) { try policy.check(fields: outside, bucket: "docs", now: Self.now) }
        #expect(prefix?.message.contains("[\"starts-with\", \"$key\", \"up/\"]") == true)
        #expect(prefix?.message.contains("\"down/a\"") == true)

        let missing = #expect(throws: S3Error.self) { try policy.check(fields: Array(fields.dropFirst(2)), bucket: "docs", now: Self.now) }
        #expect(missing?.message.contains("Policy Condition failed") == true)

        let extra = #expect(throws: S3Error.self) {
            try policy.check(fields: fields + [("acl", "private"), ("x-amz-meta-other", "1")], bucket: "docs", now: Self.now)
        }
        #expect(extra?.code == "AccessDenied")
        #expect(extra?.message.hasPrefix("Invalid according to Policy: Extra input fields: acl, x-amz-meta-other") == true)

        let expired = #expect(throws: S3Error.self) {
            try policy.check(fields: fields, bucket: "docs", now: Timestamp(secondsSince1970: 1_700_003_601))
        }
        #expect(expired?.code == "AccessDenied")
        #expect(expired?.message.hasPrefix("Invalid according to Policy: Policy expired") == true)
    }

    @Test func startsWithOnContentTypeHoldsForEveryListedType() {
        let condition = PostPolicy.Condition.startsWith(field: "content-type", prefix: "image/")
        #expect(PostPolicy.holds(condition, value: "image/png, image/jpeg"))
        #expect(!PostPolicy.holds(condition, value: "image/png, text/html"))
        #expect(PostPolicy.holds(.startsWith(field: "key", prefix: ""), value: ""))
        #expect(!PostPolicy.holds(.equals(field: "key", value: "a"), value: "A"))
    }
}
