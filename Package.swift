// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Ubiquity",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DocumentKit", targets: ["DocumentKit"]),
        .library(name: "UbiquityProtocol", targets: ["UbiquityProtocol"]),
        .executable(name: "ubiquity", targets: ["ubiquity"]),
        .executable(name: "ubiquity-bench", targets: ["ubiquity-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2")
    ],
    targets: [
        .target(name: "DocumentKit"),
        .target(name: "UbiquityProtocol"),
        // The sync service; its HTTP layer and storage drivers join with their issue.
        .target(name: "UbiquityServer", dependencies: ["UbiquityProtocol"]),
        .executableTarget(
            name: "ubiquity",
            dependencies: [
                "DocumentKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "ubiquity-bench",
            dependencies: [
                "DocumentKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // A child process the crash and cross-process tests spawn and kill; not shipped.
        .executableTarget(
            name: "document-test-helper",
            dependencies: ["DocumentKit"],
            path: "Tests/DocumentTestHelper"
        ),
        .testTarget(
            name: "DocumentKitTests",
            dependencies: ["DocumentKit", "document-test-helper", "ubiquity"]
        ),
        .testTarget(name: "UbiquityProtocolTests", dependencies: ["UbiquityProtocol"]),
        .testTarget(name: "UbiquityServerTests", dependencies: ["UbiquityServer", "UbiquityProtocol"]),
    ],
    swiftLanguageModes: [.v6]
)
