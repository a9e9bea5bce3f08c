import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real `moto_server` (PyPI `moto[server]`) on a free loopback port, started for the
/// tests and stopped when they end; and boto3, the reference client, beside it.
final class MotoServer: Sendable {
    /// The package's root: three folders up from this file.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    static let installCommand = "python3 -m venv .venv && .venv/bin/pip install 'moto[server]' boto3"

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

    /// The path of `moto_server`: PLUGBOARD_MOTO_SERVER, or `.venv/bin/moto_server`.
    static func executable() throws -> String {
        let path = ProcessInfo.processInfo.environment["PLUGBOARD_MOTO_SERVER"] ?? "\(packageRoot)/.venv/bin/moto_server"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestFailure("moto_server not found at \(path); install it from the package root with: \(installCommand) (or set PLUGBOARD_MOTO_SERVER)")
        }
        return path
    }

    /// `.venv/bin/python` beside moto_server, with boto3.
    static func python() throws -> String {
        let server = try executable()
        let python = URL(fileURLWithPath: server).deletingLastPathComponent().appendingPathComponent("python").path
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw TestFailure("python not found beside moto_server at \(python); install with: \(installCommand)")
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
