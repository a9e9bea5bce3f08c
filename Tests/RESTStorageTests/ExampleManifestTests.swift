import Foundation
import PlugboardAPI
import Testing

/// docs/examples/staging-rest.json, as the docs use it: the `plugboard` CLI on the example
/// manifest stores through RESTStorage into another host's FileStorage.
@Suite(.serialized) struct ExampleManifestTests {
    static let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/examples/staging-rest.json").path

    /// Runs `plugboard arguments` to completion; returns its exit status, standard output
    /// and standard error.
    private func plugboard(_ arguments: [String], stdin: String = "", environment: [String: String],
                           sandbox: TestSandbox) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: TestSandbox.productsFolder + "/plugboard")
        process.arguments = arguments + ["--manifest", Self.example, "--cache-dir", sandbox.path("cli-cache")]
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PLUGBOARD_") }
        env["HOME"] = sandbox.root
        for (name, value) in environment { env[name] = value }
        process.environment = env
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(stdin.utf8))
        try input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test func theExampleStoresThroughAnotherHost_andRefusesAWrongToken() async throws {
        let sandbox = try TestSandbox("example")
        defer { sandbox.remove() }
        let token = "example-T0KEN-\(UUID().uuidString)"
        let server = try ServeProcess(manifest: try sandbox.fileStorageManifest(), sandbox: sandbox,
                                      environment: ["PLUGBOARD_API_TOKEN": token])
        defer { server.stop() }
        let environment = ["PLUGBOARD_REST_URL": server.baseURL, "PLUGBOARD_REST_TOKEN": token]

        let check = try plugboard(["check"], environment: environment, sandbox: sandbox)
        #expect(check.status == 0, "\(check.out)\(check.err)")
        #expect(check.out.contains("Remote") && check.out.contains("active"))

        let put = try plugboard(["storage", "put", "notes/hello.txt", "--content-type", "text/plain"],
                                stdin: "through two hosts", environment: environment, sandbox: sandbox)
        #expect(put.status == 0, "\(put.err)")
        let stored = try await sandbox.fileStorage().get("notes/hello.txt")
        #expect(stored.data == Array("through two hosts".utf8) && stored.info.contentType == "text/plain")

        let wrong = try plugboard(["storage", "get", "notes/hello.txt"],
                                  environment: ["PLUGBOARD_REST_URL": server.baseURL, "PLUGBOARD_REST_TOKEN": "not-the-token"],
                                  sandbox: sandbox)
        #expect(wrong.status != 0)
        #expect(wrong.err.contains("PLUGBOARD_API_TOKEN") && !wrong.err.contains("not-the-token") && !wrong.err.contains(token))
    }
}
