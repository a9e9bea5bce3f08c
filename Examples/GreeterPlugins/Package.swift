// swift-tools-version: 6.2
// Three plugins around the GreeterContract package:
// - GreeterProvider registers an `any Greeter` (GreeterContract.Greeter);
// - GreeterConsumer registers a greeting made by whichever `any Greeter` the container holds;
// - CopiedGreeter shows the mistake: it declares its own `Greeter` protocol instead of
//   importing the contract, so what it registers is another type.
// Each builds lib<Name>.so; GreeterProvider and GreeterConsumer need libGreeterContract.so
// beside them, which the host's loader checks and caches with them.
import PackageDescription

let api: Target.Dependency = .product(name: "PlugboardAPI", package: "PlugboardAPI")
let contract: Target.Dependency = .product(name: "GreeterContract", package: "GreeterContract")

let package = Package(
    name: "GreeterPlugins",
    products: [
        .library(name: "GreeterProvider", type: .dynamic, targets: ["GreeterProvider"]),
        .library(name: "GreeterConsumer", type: .dynamic, targets: ["GreeterConsumer"]),
        .library(name: "CopiedGreeter", type: .dynamic, targets: ["CopiedGreeter"]),
    ],
    dependencies: [
        .package(path: "../../Sources/PlugboardAPI"),
        .package(path: "../GreeterContract"),
    ],
    targets: [
        .target(name: "GreeterProvider", dependencies: [api, contract]),
        .target(name: "GreeterConsumer", dependencies: [api, contract]),
        .target(name: "CopiedGreeter", dependencies: [api]),
    ]
)

for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .swiftLanguageMode(.v6),
        .enableUpcomingFeature("ExistentialAny"),
    ]
}
