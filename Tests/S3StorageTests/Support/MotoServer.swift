import Foundation
#if canImport(Glibc)
import Glibc
#endif
import PlugboardTestSupport

/// A real `moto_server` (PyPI `moto[server]`) on a free loopback port, started for the
/// tests and stopped when they end; and boto3, the reference client, beside it. Both come
/// from the package's `.venv`, which a suite using them makes with `.pythonTools`.
final class MotoServer: Sendable {
    static let packageRoot = PythonTools.packageRoot

    /// The credentials every test uses; moto accepts any.
    static let accessKeyId = "AKIAPLUGBOARDTEST000"
    static let secretAccessKey = "plugboard/test/secret+key/never-shown-0123"

    let endpoint: String
    let port: Int
    private let process: ServerProcess

    /// One server for the whole test run, started on first use.
    static let shared: Result<MotoServer, any Error> = Result { try MotoServer(authenticating: false) }

    static func get() throws -> MotoServer { try shared.get() }

    /// A second server that verifies every signature (moto's
    /// INITIAL_NO_AUTH_ACTION_COUNT): the first three requests set up an IAM user, its key
    /// and its s3:* policy, then nothing unsigned or wrongly signed gets through.
    static let authenticating: Result<MotoServer, any Error> = Result { try MotoServer(authenticating: true) }

    /// `.venv/bin/moto_server`.
    static func executable() throws -> String {
        let path = PythonTools.venv.bin("moto_server")
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("moto_server not found at \(path); the suite needs the .pythonTools trait, which makes .venv")
        }
        return path
    }

    /// `.venv/bin/python`, with boto3.
    static func python() throws -> String {
        let python = PythonTools.venv.python
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw TestFailure("python not found at \(python); the suite needs the .pythonTools trait, which makes .venv")
        }
        return python
    }

    private init(authenticating: Bool) throws {
        port = try ServerProcess.freePort()
        endpoint = "http://127.0.0.1:\(port)"
        process = try ServerProcess(try Self.executable(), ["-H", "127.0.0.1", "-p", String(port)], port: port,
                                    environment: authenticating ? ["INITIAL_NO_AUTH_ACTION_COUNT": "3"] : [:])
    }

    /// Runs the boto3 peer script; returns its standard output.
    @discardableResult
    func boto3(_ arguments: [String]) throws -> String {
        try Self.boto3(arguments, accessKeyId: Self.accessKeyId, secretAccessKey: Self.secretAccessKey)
    }

    /// Runs the boto3 peer script with a key pair (another server's, such as RGW's);
    /// returns its standard output.
    @discardableResult
    static func boto3(_ arguments: [String], accessKeyId: String, secretAccessKey: String) throws -> String {
        let script = "\(Self.packageRoot)/Tests/S3StorageTests/Python/boto3_peer.py"
        let child = Process()
        child.executableURL = URL(fileURLWithPath: try Self.python())
        child.arguments = [script] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = accessKeyId
        environment["AWS_SECRET_ACCESS_KEY"] = secretAccessKey
        environment["AWS_REGION"] = "us-east-1"
        environment.removeValue(forKey: "AWS_SESSION_TOKEN")
        environment.removeValue(forKey: "AWS_PROFILE")
        child.environment = environment
        let output = Pipe()
        let errors = Pipe()
        child.standardOutput = output
        child.standardError = errors
        try child.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        child.waitUntilExit()
        guard child.terminationStatus == 0 else {
            throw TestFailure("boto3_peer.py \(arguments.first ?? "") exited with \(child.terminationStatus): \(String(decoding: err, as: UTF8.self).suffix(2000))")
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A new bucket, made with boto3.
    func makeBucket(_ label: String) throws -> String {
        let name = Self.bucketName(label)
        try boto3(["create-bucket", endpoint, name])
        return name
    }

    /// A bucket name no earlier run used: `label`, a dash and a random number.
    static func bucketName(_ label: String) -> String {
        "\(label)-\(UInt32.random(in: 0...UInt32.max))"
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
