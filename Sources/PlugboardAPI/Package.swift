// swift-tools-version: 6.2
// PlugboardAPI is its own package so that the host and every plugin link ONE shared
// libPlugboardAPI.so. A target of the root package would be linked statically into each
// of them, giving each its own copy of every type (docs/ARCHITECTURE.md, fact 1).
import PackageDescription

let package = Package(
    name: "PlugboardAPI",
    products: [
        .library(name: "PlugboardAPI", type: .dynamic, targets: ["PlugboardAPI"])
    ],
    targets: [
        // The resolve path's thread-local pointer (C has __thread, Swift has nothing alike).
        .target(name: "CPlugboardThreadLocal"),
        .target(
            name: "PlugboardAPI",
            dependencies: ["CPlugboardThreadLocal"],
            swiftSettings: [
                // Plugins survive additive API changes within one toolchain (docs/ARCHITECTURE.md, fact 7).
                .unsafeFlags(["-enable-library-evolution"]),
                .swiftLanguageMode(.v6),
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]
        )
    ]
)
