import PlugboardAPI
@testable import PlugboardHost
import Testing

/// A `product` the search path does not hold: `loader.product_not_found`, with the closest
/// product that is there when one is close (a misspelling), and the build command either way.
@Suite struct ProductLookupTests {
    /// A search path of one folder holding `libFileStorage.so`, `libMemoryStorage.so` and
    /// the API library, and the error of locating `product` in it.
    static func notFound(_ product: String) throws -> PlugboardError {
        let folder = LoaderFixtures.temporaryFolder()
        for name in ["FileStorage", "MemoryStorage", "PlugboardAPI"] {
            try LoaderFixtures.write([], to: "\(folder)/lib\(name).so")
        }
        let manifest = try ManifestTestSupport.manifest(#"{"schemaVersion": 1, "plugins": [{"name": "Store", "product": "\#(product)"}]}"#)
        let entry = try #require(manifest.plugins.first)
        let loader = try PluginLoader(container: Container(environment: .testing),
                                      configuration: .init(cacheDirectory: LoaderFixtures.temporaryFolder("plugboard-cache")))
        guard case .failure(let error) = PluginHost.locate(entry, searchPath: [folder], loader: loader) else {
            Issue.record("lib\(product).so was found in \(folder)")
            return PlugboardError(.productNotFound, "found")
        }
        return error
    }

    @Test func aMisspelledProduct_isNotFound_andTheHintNamesTheClosestOneThere() throws {
        let error = try Self.notFound("FileStorge")
        #expect(error.code == .productNotFound)
        #expect(error.message.contains("\"FileStorge\""))
        #expect(error.hint?.hasPrefix("Did you mean \"FileStorage\"?") == true, "\(error.hint ?? "no hint")")
        #expect(error.hint?.contains("swift build") == true)
    }

    @Test func aProductNothingThereResembles_getsTheBuildCommandAlone() throws {
        let error = try Self.notFound("AcmeQuota")
        #expect(error.code == .productNotFound)
        #expect(error.hint?.contains("Did you mean") == false)
        #expect(error.hint?.hasPrefix("Build it with: swift build") == true, "\(error.hint ?? "no hint")")
    }

    @Test func theAPILibrary_isNeverSuggested() throws {
        let error = try Self.notFound("PlugboardAP")
        #expect(error.hint?.contains("Did you mean") == false, "\(error.hint ?? "no hint")")
    }
}
