// swift-tools-version: 6.1
import PackageDescription

// The server, the `switchboard` CLI, the browser client it serves, the test support and every
// test of the project. The client an app adds is the package at the repository's root; this one
// depends on it by path, so an app never resolves what only the server needs.

/// Where Apple's Combine does not exist: the SDK uses OpenCombine there.
let nonApple: [Platform] = [.linux, .windows, .android, .wasi, .openbsd]

let package = Package(
    name: "SwitchboardServer",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "SwitchboardServer", targets: ["SwitchboardServer"]),
        .library(name: "SwitchboardTesting", targets: ["SwitchboardTesting"]),
        .library(name: "SwitchboardTestServers", targets: ["SwitchboardTestServers"]),
        .executable(name: "switchboard", targets: ["switchboard"]),
        .executable(name: "switchboard-testnet", targets: ["switchboard-testnet"]),
        // Preloaded into a server that `switchboard bench cost` runs under valgrind (see its source).
        .library(name: "SwitchboardValgrindShim", type: .dynamic, targets: ["CValgrindShim"]),
    ],
    traits: [
        // Off by default, so `swift run switchboard serve` never needs GStreamer: the trait builds
        // the client's Linux WebRTC media engine (GStreamer webrtcbin) and the CLI's `call` command,
        // and needs GStreamer's and libnice's development packages (see README, "Media on Linux").
        .trait(
            name: "GStreamer",
            description: "The GStreamer webrtcbin media engine (SwitchboardGStreamer) and `switchboard call`"),
    ],
    dependencies: [
        // The client, with its GStreamer trait when this package's is on.
        .package(
            name: "Switchboard", path: "..",
            traits: [.trait(name: "GStreamer", condition: .when(traits: ["GStreamer"]))]),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket", from: "1.6.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
    ],
    targets: [
        // MARK: server
        .target(
            name: "SwitchboardServer",
            dependencies: [
                "CHeap",
                "SwitchboardChildProcess",
                .product(name: "SwitchboardProtocol", package: "Switchboard"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"),
                // The SFU's API (Janus over WebSocket), and the links between the nodes of a cluster.
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            ]
        ),

        // malloc's count of the heap in use (glibc's mallinfo2), for /metrics.
        .target(name: "CHeap"),

        // MARK: the browser client, shipped with the CLI as package resources
        .target(
            name: "SwitchboardWebClient",
            resources: [.copy("Web")]
        ),

        // MARK: tools (shipped in the CLI: the demo player, child processes, waiting for events)
        // posix_spawn with glibc's closefrom and chdir actions (C: they need _GNU_SOURCE).
        .target(name: "CSpawn"),
        // sigsuspend with a copy of its mask, for servers run under valgrind (bench cost).
        .target(name: "CValgrindShim", linkerSettings: [.linkedLibrary("dl")]),
        // A child process started with posix_spawn (the server's recording conversion, the tools).
        .target(
            name: "SwitchboardChildProcess",
            dependencies: ["CSpawn", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]
        ),
        .target(
            name: "SwitchboardTools",
            dependencies: [
                "SwitchboardChildProcess",
                .product(name: "Switchboard", package: "Switchboard"),
                .product(name: "SwitchboardProtocol", package: "Switchboard"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),

        // MARK: test support: light fakes (test clock, fake CallKit/PushKit, fake media engine) and
        // test servers (in-process server, local APNs, raw WebSocket client, TCP proxy)
        .target(
            name: "SwitchboardTesting",
            dependencies: [
                .product(name: "SwitchboardProtocol", package: "Switchboard"),
                .product(name: "Switchboard", package: "Switchboard"),
                .product(name: "SwitchboardCallKit", package: "Switchboard"),
                "SwitchboardTools",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .target(
            name: "SwitchboardTestServers",
            dependencies: [
                .product(name: "SwitchboardProtocol", package: "Switchboard"),
                "SwitchboardServer",
                .product(name: "Switchboard", package: "Switchboard"),
                "SwitchboardTesting",
                "SwitchboardTools",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                // RSA keys for the local FCM's service account.
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .executableTarget(
            name: "switchboard",
            dependencies: [
                .product(name: "SwitchboardProtocol", package: "Switchboard"),
                "SwitchboardServer",
                "SwitchboardWebClient",
                .product(name: "Switchboard", package: "Switchboard"),
                "SwitchboardTools",
                .product(name: "SwitchboardGStreamer", package: "Switchboard", condition: .when(traits: ["GStreamer"])),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                // The load generator (bench) and its echo floor.
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        // The test network of namespaces (`TestNetwork`) for the browser tests, over stdin/stdout.
        .executableTarget(name: "switchboard-testnet", dependencies: ["SwitchboardTestServers"]),

        // MARK: tests
        .testTarget(
            name: "SwitchboardProtocolTests",
            dependencies: [
                .product(name: "SwitchboardProtocol", package: "Switchboard"), "SwitchboardTools", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            exclude: ["Fixtures"],
            resources: [.copy("Golden")]
        ),
        .testTarget(
            name: "SwitchboardServerTests",
            dependencies: [
                "SwitchboardServer", "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools",
                .product(name: "SwitchboardProtocol", package: "Switchboard"), .product(name: "Switchboard", package: "Switchboard"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"), .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "JWTKit", package: "jwt-kit"),
                // A link to a cluster node opened by hand (NodeLinkTests).
                .product(name: "WSClient", package: "swift-websocket"), .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "SwitchboardCLITests",
            dependencies: [
                .product(name: "SwitchboardProtocol", package: "Switchboard"), "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools", .product(name: "Switchboard", package: "Switchboard"),
                "SwitchboardWebClient", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // The key files the docs' commands name (DocsTests).
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "SwitchboardTests",
            dependencies: [
                .product(name: "Switchboard", package: "Switchboard"), "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools", .product(name: "SwitchboardProtocol", package: "Switchboard"),
                "SwitchboardServer", .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: nonApple)),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SwitchboardGStreamerTests",
            dependencies: [
                .product(name: "Switchboard", package: "Switchboard"), .product(name: "SwitchboardGStreamer", package: "Switchboard"), "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools",
                .product(name: "SwitchboardProtocol", package: "Switchboard"), "SwitchboardServer",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SwitchboardCallKitTests",
            dependencies: [
                .product(name: "SwitchboardCallKit", package: "Switchboard"), .product(name: "Switchboard", package: "Switchboard"), "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools",
                .product(name: "SwitchboardProtocol", package: "Switchboard"), "SwitchboardServer", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
    ]
)
