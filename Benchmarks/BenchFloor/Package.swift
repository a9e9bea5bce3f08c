// swift-tools-version: 6.2
// The benchmark's floor: a separate library-evolution dynamic library, built exactly like
// libPlugboardAPI.so, so "a call into another module that returns a stored reference"
// crosses the same kind of boundary as a resolve does.
import PackageDescription

let package = Package(
    name: "BenchFloor",
    products: [.library(name: "BenchFloor", type: .dynamic, targets: ["BenchFloor"])],
    targets: [
        .target(name: "BenchFloor", swiftSettings: [
            .unsafeFlags(["-enable-library-evolution"]),
            .swiftLanguageMode(.v6),
        ])
    ]
)
