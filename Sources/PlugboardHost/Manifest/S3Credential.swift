import PlugboardAPI
import PlugboardJSON

/// One key pair the S3 API accepts: its ID, which requests name in their credential
/// scope, and its secret, which signs them. The manifest's `s3` section reads them
/// (``S3Settings``), `serve` adds the environment's; the S3 front end (PlugboardS3Server's
/// `S3Router.Configuration`) checks them and verifies requests with them.
///
/// The secret never leaves this value in text: ``description``, `debugDescription` and
/// the mirror (`dump`, `print` of a containing value) show the ID only. Two pairs are
/// equal when their ID and secret are, wherever they were written.
public struct S3Credential: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let accessKeyID: String
    /// In clear: never print or log it.
    public let secretAccessKey: String
    /// Where the pair was written, so that a refusal can point there; nil for one made in code.
    public let origin: Origin?

    /// Where a pair was written.
    public enum Origin: Sendable, Hashable {
        /// An entry of the manifest's `s3.credentials`.
        case manifest(ManifestPlace)
        /// Two environment variables, by name.
        case environment(accessKeyIDVariable: String, secretVariable: String)
    }

    /// An entry of the manifest's `s3.credentials`: its index, and each string's place as
    /// refusals name it (`plugins.json:3:20: s3.credentials[0].accessKeyId`).
    public struct ManifestPlace: Sendable, Hashable {
        public let index: Int
        public let accessKeyID: String
        public let secretAccessKey: String
        /// Whether each string named variables (`${...}`): a refusal then says its value
        /// broke the rule once expanded, as the file alone does not show it.
        public let accessKeyIDNamesVariables: Bool
        public let secretNamesVariables: Bool

        public init(index: Int, accessKeyID: String, secretAccessKey: String,
                    accessKeyIDNamesVariables: Bool, secretNamesVariables: Bool) {
            self.index = index
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.accessKeyIDNamesVariables = accessKeyIDNamesVariables
            self.secretNamesVariables = secretNamesVariables
        }
    }

    public init(accessKeyID: String, secretAccessKey: String, origin: Origin? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.origin = origin
    }

    public static func == (a: S3Credential, b: S3Credential) -> Bool {
        a.accessKeyID == b.accessKeyID && a.secretAccessKey == b.secretAccessKey
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(accessKeyID)
        hasher.combine(secretAccessKey)
    }

    public var description: String {
        "S3Credential(accessKeyID: \(ConfigValue.string(accessKeyID).description), secretAccessKey: \(ConfigSecrets.marker))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["accessKeyID": accessKeyID, "secretAccessKey": ConfigSecrets.marker], displayStyle: .struct)
    }
}
