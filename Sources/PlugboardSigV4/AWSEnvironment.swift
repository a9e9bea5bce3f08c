/// Where the AWS settings are read from: a process environment the caller captured (the
/// host's `processEnvironment`, which a plugin gets from its registrar), or a fixed table in
/// tests. Never `getenv`: whoever runs the code decides what it sees.
public struct AWSEnvironment: Sendable {
    private let values: [String: String]

    public init(_ values: [String: String]) { self.values = values }

    /// The variable's value; unset and empty both give nil, as AWS SDKs treat them.
    public subscript(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    /// `AWS_REGION`, else `AWS_DEFAULT_REGION`.
    public var region: String? { self["AWS_REGION"] ?? self["AWS_DEFAULT_REGION"] }

    /// The S3 endpoint the AWS CLI and SDKs would use: `AWS_ENDPOINT_URL_S3`, else
    /// `AWS_ENDPOINT_URL`; nil for AWS's own.
    public var s3EndpointURL: String? { self["AWS_ENDPOINT_URL_S3"] ?? self["AWS_ENDPOINT_URL"] }

    /// The shared credentials file: `AWS_SHARED_CREDENTIALS_FILE`, else
    /// `~/.aws/credentials`; nil when neither is set (no `HOME`).
    public var sharedCredentialsFile: String? {
        self["AWS_SHARED_CREDENTIALS_FILE"] ?? self["HOME"].map { "\($0)/.aws/credentials" }
    }

    /// `AWS_PROFILE`, else `default`.
    public var profile: String { self["AWS_PROFILE"] ?? "default" }
}
