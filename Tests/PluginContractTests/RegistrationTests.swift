import PlugboardAPI
import Testing

@Suite struct RegistrationTests {
    @Test func describe_reportsNameVersionAndServices() {
        let c = PluginCall(registrar: nil)
        #expect(call(PluginEntry.Op.describe, GreeterPlugin.self, c) == PluginEntry.Status.ok)
        #expect(c.name == "GreeterPlugin")
        #expect(c.version == "1.2.3")
        #expect(c.services == ["PluginContractTests.Greeter"])
    }

    @Test func register_thenCommit_publishesTheServicesOwnedByThePlugin() async throws {
        let container = Container(environment: .staging)
        let registrar = PluginRegistrar(pluginName: "greeter", container: container,
                                        config: PluginConfig(["word": .string("hej")], plugin: "greeter"),
                                        logger: .disabled, rank: 5)
        #expect(registrar.environment == .staging)
        let c = PluginCall(registrar: registrar)
        #expect(call(PluginEntry.Op.register, GreeterPlugin.self, c) == PluginEntry.Status.ok)
        #expect(c.failure == nil)
        // Nothing is visible before the host commits.
        #expect(!container.isRegistered((any Greeter).self))
        try await container.commit(registrar.transaction)
        let g: any Greeter = try container.resolve()
        #expect(g.greet() == "hej")
        let info = try #require(container.registrations().first)
        #expect(info.owner == "greeter")
        #expect(info.rank == 5)
        #expect(info.service == "PluginContractTests.Greeter")
    }

    @Test func register_thatThrows_comesBackAsAValue_andRegistersNothing() async throws {
        let container = Container()
        let registrar = PluginRegistrar(pluginName: "failing", container: container,
                                        config: PluginConfig(plugin: "failing"), logger: .disabled)
        let c = PluginCall(registrar: registrar)
        #expect(call(PluginEntry.Op.register, FailingPlugin.self, c) == PluginEntry.Status.failed)
        let failure = try #require(c.failure)
        #expect(failure.code == .registrationFailed)
        #expect(failure.message.contains("\"failing\""))
        #expect(failure.detail?.contains("the disk is on fire") == true)
        // The loader discards the transaction of a failed plugin: nothing was published.
        #expect(!container.isRegistered((any Greeter).self))
    }

    @Test func register_withMissingConfig_keepsThePluginsConfigError() throws {
        let registrar = PluginRegistrar(pluginName: "greeter", container: Container(),
                                        config: PluginConfig(plugin: "greeter"), logger: .disabled)
        let c = PluginCall(registrar: registrar)
        #expect(call(PluginEntry.Op.register, GreeterPlugin.self, c) == PluginEntry.Status.failed)
        let failure = try #require(c.failure)
        #expect(failure.code == .configInvalid)
        #expect(failure.message.contains("config.word"))
        #expect(failure.detail?.contains("Expected a string") == true)
    }

    @Test func register_withoutRegistrar_isAProtocolViolation_notATrap() throws {
        let c = PluginCall(registrar: nil)
        #expect(call(PluginEntry.Op.register, GreeterPlugin.self, c) == PluginEntry.Status.failed)
        #expect(c.failure?.code == .protocolViolation)
    }
}
