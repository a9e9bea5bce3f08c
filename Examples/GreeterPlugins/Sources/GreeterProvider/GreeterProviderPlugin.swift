import GreeterContract
import PlugboardAPI

@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 1)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, GreeterProviderPlugin.self)
}

/// Provides the contract's `Greeter`. Config: `salutation` (string, default "Hello").
enum GreeterProviderPlugin: Plugin {
    static let name = "GreeterProvider"
    static let version = "1.0.0"
    static let services = ["GreeterContract.Greeter"]

    static func register(into registrar: PluginRegistrar) throws {
        try registrar.config.requireOnly(["salutation"])
        let salutation = try registrar.config.string("salutation", default: nil) ?? "Hello"
        try registrar.register((any Greeter).self, implementation: SalutationGreeter.self) { _ in
            SalutationGreeter(salutation: salutation)
        }
    }
}

struct SalutationGreeter: Greeter {
    let salutation: String
    func greeting(for name: String) -> String { "\(salutation), \(name)!" }
}
