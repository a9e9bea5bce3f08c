import GreeterContract
import PlugboardAPI

@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 1)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, GreeterConsumerPlugin.self)
}

/// Uses whichever `Greeter` the container holds: registers the greeting for `audience`
/// (config, default "Plugboard") as a `String` named "greeting". The greeter is resolved
/// when the greeting is first asked for, so the provider may be loaded or replaced later.
enum GreeterConsumerPlugin: Plugin {
    static let name = "GreeterConsumer"
    static let version = "1.0.0"
    static let services = ["Swift.String"]

    static func register(into registrar: PluginRegistrar) throws {
        try registrar.config.requireOnly(["audience"])
        let audience = try registrar.config.string("audience", default: nil) ?? "Plugboard"
        try registrar.register(String.self, name: "greeting") { resolver in
            let greeter = try resolver.resolve((any Greeter).self)
            return greeter.greeting(for: audience)
        }
    }
}
