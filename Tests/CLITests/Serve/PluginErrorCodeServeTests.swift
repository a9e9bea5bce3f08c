import Testing

/// A plugin's own error codes through a real `plugboard serve`: CodedErrorPlugin, found
/// beside the executable as an in-tree product is, maps `quota.exceeded`; `plugboard
/// reload` applies a changed mapping.
@Suite struct PluginErrorCodeServeTests {
    static func manifest(status: Int) -> String {
        let plugin = #"{"name": "Coded", "product": "CodedErrorPlugin", "config": {"mappings": {"quota.exceeded": {"status": \#(status), "s3Code": "QuotaExceeded"}}}}"#
        return #"{"schemaVersion": 1, "hotSwap": {"enabled": true}, "plugins": [\#(plugin)]}"#
    }

    @Test func aMappedCode_isAnsweredWithItsStatus_andAReloadChangesIt() async throws {
        let server = try ServerProcess(manifest: Self.manifest(status: 403), arguments: ["--no-watch"])
        let refused = try server.client().request("PUT", "/v1/objects/refuse/quota.exceeded/a",
                                                  headers: [("Content-Type", "text/plain")], body: Array("hi".utf8))
        #expect(refused.status == 403, "\(refused.text)")
        #expect(refused.errorCode == "quota.exceeded", "\(refused.text)")
        #expect(refused.header("x-plugboard-error-code") == "quota.exceeded")
        let unmapped = try server.client().request("GET", "/v1/objects/refuse/quota.other/a")
        #expect(unmapped.status == 500, "\(unmapped.text)")
        #expect(unmapped.errorCode == "quota.other")

        try server.sandbox.write("plugins.json", Self.manifest(status: 409))
        expectRun(await server.sandbox.run(["reload", "--url", "http://127.0.0.1:\(server.port)"]), status: 0,
                  stdout: .contains("reload applied: generation", "changed [Coded]"))
        let after = try server.client().request("GET", "/v1/objects/refuse/quota.exceeded/a")
        #expect(after.status == 409, "\(after.text)")
        #expect(server.stop() == 0)
    }
}
