// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Ubiquity",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "DocumentKit", targets: ["DocumentKit"]),
        .library(name: "UbiquityProtocol", targets: ["UbiquityProtocol"]),
        .library(name: "SyncEngine", targets: ["SyncEngine"]),
        .library(name: "UbiquityKit", targets: ["UbiquityKit"]),
        .library(name: "RecordStore", targets: ["RecordStore"]),
        .library(name: "Grocery", targets: ["Grocery"]),
        .executable(name: "grocery", targets: ["grocery"]),
        .executable(name: "ubiquity", targets: ["ubiquity"]),
        .executable(name: "ubiquity-bench", targets: ["ubiquity-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        .target(name: "DocumentKit"),
        .target(name: "UbiquityProtocol"),
        .target(name: "CSQLiteSupport", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(
            name: "SQLiteSupport", dependencies: ["CSQLiteSupport", .product(name: "GRDB", package: "GRDB.swift")]),
        .target(
            name: "SyncEngine",
            dependencies: [
                "DocumentKit",
                "SQLiteSupport",
                "UbiquityProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "UbiquityKit",
            dependencies: [
                "DocumentKit",
                "SyncEngine",
                "UbiquityProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(
            name: "RecordStore",
            dependencies: [
                "DocumentKit",
                "UbiquityKit",
                "UbiquityProtocol",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The seeds' sample app: the model (Grocery) and its command line (grocery).
        .target(
            name: "Grocery",
            dependencies: [
                "DocumentKit",
                "RecordStore",
                "SyncEngine",
                "UbiquityKit",
                "UbiquityProtocol",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "grocery",
            dependencies: [
                "Grocery",
                "SyncEngine",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            name: "UbiquityServer",
            dependencies: [
                "SQLiteSupport",
                "UbiquityProtocol",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "ubiquity",
            dependencies: [
                "DocumentKit",
                "Grocery",
                "SyncEngine",
                "UbiquityKit",
                "UbiquityProtocol",
                "UbiquityServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "ubiquity-bench",
            dependencies: [
                "DocumentKit",
                "RecordStore",
                "SyncEngine",
                "SyncSimulation",
                "UbiquityKit",
                "UbiquityServer",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A child process the crash and cross-process tests spawn and kill; not shipped.
        .executableTarget(
            name: "document-test-helper",
            dependencies: ["DocumentKit"],
            path: "Tests/DocumentTestHelper"
        ),
        // The record store's crash test spawns it and kills it; not shipped.
        .executableTarget(
            name: "record-store-test-helper",
            dependencies: ["RecordStore"],
            path: "Tests/RecordStoreTestHelper"
        ),
        // Starts the tests' child processes with posix_spawn: Foundation's Process.run could crash the test process.
        .target(name: "ChildProcess", path: "Tests/ChildProcess"),
        // The deterministic simulation of several devices running the engine's planner: the tests run it, and
        // `ubiquity-bench sim` measures it.
        .target(
            name: "SyncSimulation",
            dependencies: [
                "DocumentKit", "SyncEngine", "UbiquityProtocol", "UbiquityServer",
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/SyncSimulation"
        ),
        // What the sync and UbiquityKit tests share: a service on loopback, `ubiquity` child processes, waiting.
        .target(
            name: "UbiquityTestSupport",
            dependencies: [
                "ChildProcess", "SyncEngine", "UbiquityProtocol", "UbiquityServer",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Tests/UbiquityTestSupport"
        ),
        .testTarget(
            name: "DocumentKitTests",
            dependencies: [
                "ChildProcess", "DocumentKit", "document-test-helper", "SyncSimulation", "ubiquity",
                "UbiquityTestSupport",
            ]
        ),
        // The simulation's seeded generator makes the randomized protocol tests replayable.
        .testTarget(name: "UbiquityProtocolTests", dependencies: ["SyncSimulation", "UbiquityProtocol"]),
        // Vectors/ holds the chunker's test vectors and the Python reference that made them; the tests read them.
        .testTarget(
            name: "SyncEngineTests",
            dependencies: [
                "ChildProcess",
                "DocumentKit",
                "SyncEngine",
                "UbiquityProtocol",
                "UbiquityServer",
                "UbiquityTestSupport",
                "ubiquity",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            exclude: ["Vectors"]
        ),
        .testTarget(
            name: "UbiquityKitTests",
            dependencies: [
                "DocumentKit",
                "SyncEngine",
                "UbiquityKit",
                "UbiquityProtocol",
                "UbiquityServer",
                "UbiquityTestSupport",
                "ubiquity",
            ]
        ),
        .testTarget(
            name: "GroceryTests",
            dependencies: [
                "DocumentKit",
                "Grocery",
                "RecordStore",
                "SyncEngine",
                "UbiquityKit",
                "UbiquityProtocol",
                "UbiquityTestSupport",
                "grocery",
                "ubiquity",
            ]
        ),
        .testTarget(
            name: "RecordStoreTests",
            dependencies: [
                "ChildProcess", "RecordStore", "record-store-test-helper", "SyncEngine", "SyncSimulation",
                "UbiquityKit",
                "UbiquityProtocol", "UbiquityTestSupport", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "SyncSimulationTests",
            dependencies: ["SyncEngine", "SyncSimulation", "UbiquityProtocol", "UbiquityTestSupport"]
        ),
        .testTarget(
            name: "UbiquityServerTests",
            dependencies: [
                "ChildProcess",
                "UbiquityServer",
                "UbiquityProtocol",
                "UbiquityTestSupport",
                "ubiquity",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
