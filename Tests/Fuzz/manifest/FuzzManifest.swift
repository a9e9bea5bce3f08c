// libFuzzer target: the manifest's JSON parser, its validation into a Manifest, and
// `${VAR}` expansion of every plugin's config (docs/SECURITY.md). Built by
// Tests/Fuzz/build.sh together with Sources/PlugboardHost/Manifest/, over the PlugboardJSON module.
import PlugboardAPI
import PlugboardJSON

/// Variables the expansion draws on: one empty, one long, so that defaults, empty
/// values and the expansion budget are all reached by short inputs.
private let variables: [String: String] = [
    "HOME": "/home/fuzz", "EMPTY": "", "A": String(repeating: "a", count: 4096),
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "PORT": "8080",
]

/// Small limits so that the depth and size refusals are reachable; the shipped ones
/// are 1 MiB and 64 levels.
private let loader = ManifestLoader(configuration: .init(limits: .init(maxBytes: 1 << 16, maxDepth: 32),
                                                          workingDirectory: "/fuzz"))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzManifest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    // The expander alone, on the input as one configuration string.
    let text = String(decoding: bytes, as: UTF8.self)
    var budget = VariableExpander.Budget(limit: 1 << 20)
    _ = try? VariableExpander.expand(text, variables: variables, budget: &budget)

    // The whole path a manifest takes: parse, validate, describe, resolve.
    guard let manifest = try? loader.parse(bytes: bytes, path: "plugins.json") else { return 0 }
    _ = String(describing: manifest)
    var shared = VariableExpander.Budget(limit: 1 << 20)
    for plugin in manifest.plugins {
        _ = plugin.redactedConfig.description
        _ = String(describing: plugin)
        _ = try? plugin.resolvedConfig(environment: variables, budget: &shared)
    }
    for environment in Environment.all { _ = manifest.selectedPlugins(for: environment) }
    return 0
}
