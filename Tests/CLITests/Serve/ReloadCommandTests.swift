import Testing

/// `plugboard reload` against a running `plugboard serve`, and against nothing: its one
/// request goes over PlugboardHTTPClient's plain transport.
@Suite struct ReloadCommandTests {
    @Test func reloadOfARunningServer_printsUnchangedThenApplied() async throws {
        let server = try ServerProcess(manifest: NotifyTests.manifest(hotSwap: true, latency: 0), arguments: ["--no-watch"])
        let url = "http://127.0.0.1:\(server.port)"
        expectRun(await server.sandbox.run(["reload", "--url", url]), status: 0, stdout: .contains("reload unchanged: generation"))
        try server.sandbox.write("plugins.json", NotifyTests.manifest(hotSwap: true, latency: 1))
        expectRun(await server.sandbox.run(["reload", "--url", url]), status: 0,
                  stdout: .contains("reload applied: generation", "changed [Mem]"))
        expectRun(await server.sandbox.run(["reload", "--url", url, "--json"]), status: 0, stdout: .contains("\"result\": \"unchanged\""))
        #expect(server.stop() == 0)
    }

    @Test func reloadWithNothingListening_isUnreachable() async throws {
        let sandbox = try Sandbox("plugboard-reload")
        defer { sandbox.remove() }
        expectRun(await sandbox.run(["reload", "--url", "http://127.0.0.1:1", "--json"]), status: 1,
                  stdout: .contains("cli.reload_unreachable", "could not reach plugboard serve at http://127.0.0.1:1"))
    }
}
