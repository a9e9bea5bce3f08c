import PlugboardAPI

@section("plugboard_header") @used
let plugboardHeader: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x4452_4250, 1, 1, 1, 1)

@c(plugboard_plugin_entry)
public func plugboardPluginEntry(_ op: Int32, _ arg: UnsafeMutableRawPointer?) -> Int32 {
    PluginEntry.run(op, arg, CopiedGreeterPlugin.self)
}

/// THE MISTAKE THIS EXAMPLE SHOWS: a copy of the contract's protocol. It has the same name
/// and the same requirement, but it is `CopiedGreeter.Greeter`, another type: a consumer
/// asking for `GreeterContract.Greeter` never finds it. Import GreeterContract instead.
public protocol Greeter: Sendable {
    func greeting(for name: String) -> String
}

enum CopiedGreeterPlugin: Plugin {
    static let name = "CopiedGreeter"
    static let version = "1.0.0"
    static let services = ["CopiedGreeter.Greeter"]

    static func register(into registrar: PluginRegistrar) throws {
        try registrar.register((any Greeter).self, implementation: CopyGreeter.self) { _ in CopyGreeter() }
    }
}

struct CopyGreeter: Greeter {
    func greeting(for name: String) -> String { "Hi, \(name)." }
}
