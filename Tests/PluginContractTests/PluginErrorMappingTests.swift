import PlugboardAPI
import Testing

/// `registrar.mapErrors` (PlugboardAPI 1.6): a plugin's own codes mapped to the answers
/// the front ends give, checked when the plugin registers and published with it.
@Suite struct PluginErrorMappingTests {
    static func registrar(_ container: Container = Container(), name: String = "quota", rank: Int = 0) -> PluginRegistrar {
        PluginRegistrar(pluginName: name, container: container, config: PluginConfig(plugin: name), logger: .disabled, rank: rank)
    }

    static func refusal(_ mappings: [PlugboardError.Code: PlugboardError.Mapping]) -> PlugboardError? {
        let registrar = Self.registrar()
        do {
            try registrar.mapErrors(mappings)
            return nil
        } catch {
            return error
        }
    }

    @Test func aMapping_isPublishedWithThePluginsCommit_andFoundByItsCode() async throws {
        let container = Container()
        let registrar = Self.registrar(container)
        try registrar.mapErrors(["quota.exceeded": .init(status: 403, s3Code: "QuotaExceeded"),
                                 "quota.busy": .init(status: 503, s3Code: "SlowDown")])
        // Nothing before the commit, as for any registration.
        #expect(PlugboardError.Mapping.registered(for: "quota.exceeded", in: container) == nil)
        try await container.commit(registrar.transaction)
        #expect(PlugboardError.Mapping.registered(for: "quota.exceeded", in: container) == .init(status: 403, s3Code: "QuotaExceeded"))
        #expect(PlugboardError.Mapping.registered(for: "quota.busy", in: container)?.status == 503)
        #expect(PlugboardError.Mapping.registered(for: "quota.other", in: container) == nil)
        #expect(PlugboardError.Mapping.registered(for: .storageNotFound, in: container) == nil)
        // A lease sees the generation it holds.
        let lease = container.lease()
        defer { lease.release() }
        #expect(PlugboardError.Mapping.registered(for: "quota.exceeded", in: lease)?.s3Code == "QuotaExceeded")
        // The registration is the plugin's: it goes with the plugin.
        try await container.transaction(owner: "quota") { tx in tx.unregisterAll() }
        #expect(PlugboardError.Mapping.registered(for: "quota.exceeded", in: container) == nil)
    }

    @Test func everyAllowedStatus_isTaken() {
        for status in PlugboardError.Mapping.allowedStatuses {
            #expect(Self.refusal(["acme.refused": .init(status: status, s3Code: "AcmeRefused")]) == nil, "\(status)")
        }
    }

    /// What would break the protocol, or is the host's to say, is refused naming the code,
    /// the status given and the statuses allowed.
    @Test(arguments: [200, 204, 301, 304, 401, 405, 407, 408, 411, 412, 416, 417, 426, 431, 500, 502, 504, 0, 999])
    func aStatusAPluginMayNotClaim_isRefused_namingCodeStatusAndTheAllowedOnes(status: Int) throws {
        let error = try #require(Self.refusal(["acme.refused": .init(status: status, s3Code: "AcmeRefused")]))
        #expect(error.code == .errorMappingInvalid)
        #expect(error.code.rawValue == "plugin.error_mapping_invalid")
        #expect(error.message == "cannot map error code \"acme.refused\" to status \(status)")
        #expect(error.detail?.contains("Allowed statuses: 400, 403, 404, 409, 410, 413, 415, 422, 423, 428, 429, 451, 503") == true,
                "\(error.detail ?? "")")
        #expect(error.detail?.contains("found \(status)") == true)
        #expect(error.hint != nil)
    }

    @Test(arguments: ["storage.quota", "plugin.quota", "loader.x", "http.teapot", "container.y", "manifest.z", "host.q", "s3.slow"])
    func aCodeInTheHostsAreas_cannotBeRemapped(code: String) throws {
        let error = try #require(Self.refusal([PlugboardError.Code(code): .init(status: 403, s3Code: "AccessDenied")]))
        #expect(error.code == .errorMappingInvalid)
        #expect(error.message.contains("\"\(code)\""), "\(error.message)")
        #expect(error.message.contains("are the host's"), "\(error.message)")
        #expect(error.detail?.contains("storage") == true)
    }

    @Test(arguments: ["quota", "Quota.Exceeded", ".exceeded", "quota.", "quota..x", "quota.ex ceeded", "quota.é",
                      "a." + String(repeating: "b", count: 127)])
    func aMalformedCode_isRefused(code: String) throws {
        let error = try #require(Self.refusal([PlugboardError.Code(code): .init(status: 403, s3Code: "QuotaExceeded")]))
        #expect(error.code == .errorMappingInvalid)
        #expect(error.detail?.contains("area.name") == true)
    }

    @Test(arguments: ["", "1Quota", "Quota-Exceeded", "Quota Exceeded", "Quotä", String(repeating: "Q", count: 65)])
    func aMalformedS3Code_isRefused(s3Code: String) throws {
        let error = try #require(Self.refusal(["quota.exceeded": .init(status: 403, s3Code: s3Code)]))
        #expect(error.code == .errorMappingInvalid)
        #expect(error.message.hasPrefix("cannot map error code \"quota.exceeded\" to S3 code"), "\(error.message)")
        #expect(error.detail?.contains("1 to 64 ASCII letters and digits") == true)
    }

    @Test func theLongestS3CodeAndCode_areTaken() {
        let code = PlugboardError.Code("a." + String(repeating: "b", count: 126))
        #expect(Self.refusal([code: .init(status: 409, s3Code: "Q" + String(repeating: "9", count: 63))]) == nil)
    }

    /// One refusal and nothing of the table is registered: the plugin fails to load whole.
    @Test func oneBadMapping_registersNoneOfTheTable() async throws {
        let container = Container()
        let registrar = Self.registrar(container)
        let error = #expect(throws: PlugboardError.self) {
            try registrar.mapErrors(["quota.a": .init(status: 403, s3Code: "A"), "quota.b": .init(status: 302, s3Code: "B")])
        }
        #expect(error?.message.contains("\"quota.b\" to status 302") == true)
        try await container.commit(registrar.transaction)
        #expect(PlugboardError.Mapping.registered(for: "quota.a", in: container) == nil)
    }

    /// Two plugins mapping one code: the higher rank wins, as for any service.
    @Test func twoPluginsMappingOneCode_theHigherRankWins() async throws {
        let container = Container()
        let low = Self.registrar(container, name: "low", rank: 0)
        let high = Self.registrar(container, name: "high", rank: 10)
        try low.mapErrors(["quota.exceeded": .init(status: 403, s3Code: "Low")])
        try high.mapErrors(["quota.exceeded": .init(status: 409, s3Code: "High")])
        try await container.commit([low.transaction, high.transaction], verify: false)
        #expect(PlugboardError.Mapping.registered(for: "quota.exceeded", in: container)?.s3Code == "High")
    }
}
