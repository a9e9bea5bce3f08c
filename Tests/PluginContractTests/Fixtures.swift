import PlugboardAPI

protocol Greeter: Sendable { func greet() -> String }
struct Hello: Greeter { let word: String; func greet() -> String { word } }

/// A plugin that registers a Greeter configured from its config.
enum GreeterPlugin: Plugin {
    static let name = "GreeterPlugin"
    static let version = "1.2.3"
    static let services = ["PluginContractTests.Greeter"]
    static func register(into registrar: PluginRegistrar) throws {
        let word = try registrar.config.string("word")
        try registrar.register((any Greeter).self) { _ in Hello(word: word) }
    }
}

struct Boom: Error, CustomStringConvertible { var description: String { "the disk is on fire" } }

/// A plugin whose registration throws a non-Plugboard error after registering something.
enum FailingPlugin: Plugin {
    static let name = "FailingPlugin"
    static let version = "0.0.1"
    static func register(into registrar: PluginRegistrar) throws {
        try registrar.register((any Greeter).self) { _ in Hello(word: "never") }
        throw Boom()
    }
}

/// Calls the plugin's entry logic the way the host's loader does.
func handshakeWords<P: Plugin>(_ plugin: P.Type) -> [UInt64] {
    var words = [UInt64](repeating: 0, count: PluginHandshake.wordCount)
    let status = words.withUnsafeMutableBytes { PluginEntry.run(PluginEntry.Op.handshake, $0.baseAddress, plugin) }
    precondition(status == PluginEntry.Status.ok)
    return words
}

func call<P: Plugin>(_ op: Int32, _ plugin: P.Type, _ call: PluginCall) -> Int32 {
    PluginEntry.run(op, Unmanaged.passUnretained(call).toOpaque(), plugin)
}
