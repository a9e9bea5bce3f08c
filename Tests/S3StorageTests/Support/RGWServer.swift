import Foundation
import PlugboardAPI

/// Ceph's RADOS Gateway, started outside the tests by `Tests/e2e/ceph.sh start DIR` and
/// named by the variables of DIR/env: a real S3 implementation beside moto's imitation.
/// The tests do not start it (a cluster takes 20 s and root), so without the variables
/// the RGW suite is skipped.
struct RGWServer: Sendable {
    let endpoint: String
    let accessKeyId: String
    let secretAccessKey: String

    static let endpointVariable = "PLUGBOARD_RGW_ENDPOINT"
    static let accessKeyVariable = "PLUGBOARD_RGW_ACCESS_KEY_ID"
    static let secretKeyVariable = "PLUGBOARD_RGW_SECRET_ACCESS_KEY"

    /// Whether the endpoint is set: the suite runs, and then a missing key is a failure,
    /// not a reason to skip.
    static var isConfigured: Bool {
        !(ProcessInfo.processInfo.environment[endpointVariable] ?? "").isEmpty
    }

    /// The gateway the environment names.
    ///
    /// - Throws: when the endpoint is set but a key variable is not.
    static func get() throws -> RGWServer {
        let environment = ProcessInfo.processInfo.environment
        func value(_ name: String) throws -> String {
            guard let value = environment[name], !value.isEmpty else {
                throw TestFailure("\(name) is not set, but \(endpointVariable) is (\(environment[endpointVariable] ?? "")): expected all three variables of the env file Tests/e2e/ceph.sh start DIR writes; load it with: set -a; . DIR/env; set +a")
            }
            return value
        }
        return RGWServer(endpoint: try value(endpointVariable), accessKeyId: try value(accessKeyVariable),
                         secretAccessKey: try value(secretKeyVariable))
    }

    /// Runs the boto3 peer script against the gateway with its key pair.
    @discardableResult
    func boto3(_ arguments: [String]) throws -> String {
        try MotoServer.boto3(arguments, accessKeyId: accessKeyId, secretAccessKey: secretAccessKey)
    }

    /// A new bucket, made with boto3.
    func makeBucket(_ label: String) throws -> String {
        let name = MotoServer.bucketName(label)
        try boto3(["create-bucket", endpoint, name])
        return name
    }

    /// The plugin config for `bucket` on the gateway.
    func config(bucket: String) -> [String: ConfigValue] {
        S3PluginFixture.config(bucket: bucket, endpoint: endpoint, accessKeyId: accessKeyId, secretAccessKey: secretAccessKey)
    }
}
