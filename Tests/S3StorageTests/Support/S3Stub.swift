import Foundation

/// The misbehaving S3 of Python/s3_stub.py, one per test run; the bucket name picks how
/// it misbehaves.
final class S3Stub: Sendable {
    let endpoint: String
    private let process: ServerProcess

    static let shared: Result<S3Stub, any Error> = Result { try S3Stub() }

    static func get() throws -> S3Stub { try shared.get() }

    private init() throws {
        let port = try ServerProcess.freePort()
        endpoint = "http://127.0.0.1:\(port)"
        process = try ServerProcess(try MotoServer.python(), ["\(MotoServer.packageRoot)/Tests/S3StorageTests/Python/s3_stub.py", String(port)],
                                    port: port)
    }
}
