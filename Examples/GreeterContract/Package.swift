// swift-tools-version: 6.2
// A contract package: a dynamic library that holds only a service protocol, so that the
// plugin providing the service and the plugins using it share ONE type. A target inside
// a plugin's own package would be linked statically into each plugin, giving each its own
// `Greeter` type, and resolving across plugins would fail (docs/PLUGIN_GUIDE.md,
// "Service contracts beyond ObjectStorage").
import PackageDescription

let package = Package(
    name: "GreeterContract",
    products: [
        .library(name: "GreeterContract", type: .dynamic, targets: ["GreeterContract"]),
    ],
    targets: [
        .target(
            name: "GreeterContract",
            swiftSettings: [
                // Additive changes to the contract (a requirement with a default) keep
                // plugins built against the older version working, as PlugboardAPI does.
                .unsafeFlags(["-enable-library-evolution"]),
                .swiftLanguageMode(.v6),
                .enableUpcomingFeature("ExistentialAny"),
            ]),
    ]
)
