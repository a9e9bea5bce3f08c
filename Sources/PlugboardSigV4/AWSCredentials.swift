/// AWS credentials, and where they were found. Never printed: ``description`` shows only
/// the source and the access key id's first four characters.
///
/// One chain for everything that signs: S3Storage puts its plugin config in front of it,
/// a remote plugin source and `plugboard publish` use it as it is.
public struct AWSCredentials: Sendable, Equatable, CustomStringConvertible {
    public var accessKeyId: String
    public var secretAccessKey: String
    public var sessionToken: String?
    /// Where they came from, for logs: `plugin config`, `environment`, or
    /// `shared credentials file /home/me/.aws/credentials, profile default`.
    public var source: String

    public init(accessKeyId: String, secretAccessKey: String, sessionToken: String?, source: String) {
        self.accessKeyId = accessKeyId
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
        self.source = source
    }

    public var description: String {
        "AWSCredentials(accessKeyId: \(accessKeyId.prefix(4))..., sessionToken: \(sessionToken == nil ? "none" : "set"), source: \(source))"
    }

    /// The secret values, for scrubbing them from any text that is shown.
    public var secrets: [String] {
        [secretAccessKey] + (sessionToken.map { [$0] } ?? [])
    }

    /// Why the chain found no usable pair where one was written.
    public enum Problem: Error, Sendable, Equatable {
        /// A source holds half a key pair: `present` is set, `missing` is not.
        case incomplete(present: String, missing: String, in: Place)
        /// `AWS_SHARED_CREDENTIALS_FILE` names a file that cannot be read.
        case unreadableFile(String)
        /// `AWS_PROFILE` names a profile the file does not have; `available` are those it has.
        case missingProfile(profile: String, file: String, available: [String])
    }

    /// A source of the chain that can hold half a pair.
    public enum Place: Sendable, Equatable {
        case environment
        /// A profile of the shared credentials file.
        case profile(String, file: String)
    }

    /// The rest of the chain AWS SDKs use, after whatever the caller puts first:
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`, then the shared
    /// credentials file (``AWSEnvironment/sharedCredentialsFile``, profile
    /// ``AWSEnvironment/profile``). Nil when no source holds a pair.
    public static func fromEnvironment(_ environment: AWSEnvironment) throws(Problem) -> AWSCredentials? {
        switch (environment["AWS_ACCESS_KEY_ID"], environment["AWS_SECRET_ACCESS_KEY"]) {
        case let (id?, secret?):
            return AWSCredentials(accessKeyId: id, secretAccessKey: secret, sessionToken: environment["AWS_SESSION_TOKEN"],
                                  source: "environment")
        case (nil, nil):
            break
        case (nil, _?):
            throw .incomplete(present: "AWS_SECRET_ACCESS_KEY", missing: "AWS_ACCESS_KEY_ID", in: .environment)
        case (_?, nil):
            throw .incomplete(present: "AWS_ACCESS_KEY_ID", missing: "AWS_SECRET_ACCESS_KEY", in: .environment)
        }
        guard let file = environment.sharedCredentialsFile else { return nil }
        let profile = environment.profile
        switch SharedCredentialsFile.read(file) {
        case .missing:
            if environment["AWS_SHARED_CREDENTIALS_FILE"] != nil { throw .unreadableFile(file) }
            return nil
        case .contents(let text):
            let profiles = SharedCredentialsFile.parse(text)
            guard let entries = profiles[profile] else {
                if environment["AWS_PROFILE"] != nil {
                    throw .missingProfile(profile: profile, file: file, available: profiles.keys.sorted())
                }
                return nil
            }
            let fileID = entries["aws_access_key_id"].flatMap { $0.isEmpty ? nil : $0 }
            let fileSecret = entries["aws_secret_access_key"].flatMap { $0.isEmpty ? nil : $0 }
            switch (fileID, fileSecret) {
            case let (id?, secret?):
                return AWSCredentials(accessKeyId: id, secretAccessKey: secret,
                                      sessionToken: entries["aws_session_token"].flatMap { $0.isEmpty ? nil : $0 },
                                      source: "shared credentials file \(file), profile \(profile)")
            case (nil, nil):
                return nil
            case (nil, _?):
                throw .incomplete(present: "aws_secret_access_key", missing: "aws_access_key_id", in: .profile(profile, file: file))
            case (_?, nil):
                throw .incomplete(present: "aws_access_key_id", missing: "aws_secret_access_key", in: .profile(profile, file: file))
            }
        }
    }
}
