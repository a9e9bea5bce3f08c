/// One access key the S3 endpoint accepts: its ID, which requests name in their
/// credential scope, and its secret, which signs them.
///
/// The secret never leaves this value in text: ``description``, `debugDescription` and
/// the mirror (`dump`, `print` of a containing value) show the ID only.
public struct S3Credential: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let accessKeyID: String
    let secretAccessKey: String

    public init(accessKeyID: String, secretAccessKey: String) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
    }

    public var description: String { "S3Credential(accessKeyID: \(accessKeyID), secretAccessKey: <redacted>)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["accessKeyID": accessKeyID, "secretAccessKey": "<redacted>"]) }
}
