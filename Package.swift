// swift-tools-version: 6.1
import PackageDescription

// MARK: - shared

/// Where Apple's Combine does not exist: the SDK uses OpenCombine there.
let nonApple: [Platform] = [.linux, .windows, .android, .wasi, .openbsd]

let package = Package(
    name: "Switchboard",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "SwitchboardProtocol", targets: ["SwitchboardProtocol"]),
        .library(name: "Switchboard", targets: ["Switchboard"]),
        .library(name: "SwitchboardCallKit", targets: ["SwitchboardCallKit"]),
        // Empty where SwiftUI and UIKit do not exist (Linux).
        .library(name: "SwitchboardUI", targets: ["SwitchboardUI"]),
        // Empty unless the app gives it Google's WebRTC framework (docs/IOS.md, "Media").
        .library(name: "SwitchboardWebRTC", targets: ["SwitchboardWebRTC"]),
        .library(name: "SwitchboardServer", targets: ["SwitchboardServer"]),
        .library(name: "SwitchboardTesting", targets: ["SwitchboardTesting"]),
        .library(name: "SwitchboardTestServers", targets: ["SwitchboardTestServers"]),
        // Empty unless the GStreamer trait is on (`swift build --traits GStreamer`).
        .library(name: "SwitchboardGStreamer", targets: ["SwitchboardGStreamer"]),
        .executable(name: "switchboard", targets: ["switchboard"]),
    ],
    traits: [
        // Off by default, so `swift run switchboard serve` never needs GStreamer: the trait builds
        // the Linux WebRTC media engine (GStreamer webrtcbin) and the CLI's `call` command, and
        // needs GStreamer's and libnice's development packages (see README, "Media on Linux").
        .trait(
            name: "GStreamer",
            description: "The GStreamer webrtcbin media engine (SwitchboardGStreamer) and `switchboard call`"),
        // Off by default, so nothing resolves or downloads Google's WebRTC unless an iOS app asks:
        // `.package(url: …, from: …, traits: ["WebRTC"])` gives SwitchboardWebRTC the framework.
        .trait(
            name: "WebRTC",
            description: "Google's WebRTC framework (stasel/WebRTC's binary builds) for SwitchboardWebRTC, the iOS media engine"),
    ],
    dependencies: [
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
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        // Combine where Apple does not ship it, so the SDK's publishers are the same code, tested here.
        .package(url: "https://github.com/OpenCombine/OpenCombine", from: "0.14.0"),
        // Only with the WebRTC trait (every use below is conditional on it, so SwiftPM leaves it out otherwise).
        .package(url: "https://github.com/stasel/WebRTC.git", from: "125.0.0"),
    ],
    targets: [
        // MARK: shared
        .target(
            name: "SwitchboardProtocol",
            dependencies: [
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),

        // MARK: server
        .target(
            name: "SwitchboardServer",
            dependencies: [
                "SwitchboardProtocol",
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
                // The SFU's API (Janus over WebSocket).
                .product(name: "WSClient", package: "swift-websocket"),
            ]
        ),

        // MARK: client
        .target(
            name: "Switchboard",
            dependencies: [
                "SwitchboardProtocol",
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: nonApple)),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // The Linux WebRTC engine. Its sources compile to nothing without the GStreamer trait; with
        // it, the C headers come from pkg-config (gstreamer-webrtc-nice-1.0 pulls in gstreamer,
        // gstreamer-webrtc and libnice).
        .systemLibrary(
            name: "CGStreamer",
            path: "Sources/CGStreamer",
            pkgConfig: "gstreamer-webrtc-nice-1.0",
            providers: [
                .apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev", "libgstreamer-plugins-bad1.0-dev", "libnice-dev"]),
                .brew(["gstreamer", "libnice"]),
            ]
        ),
        .target(
            name: "SwitchboardGStreamer",
            dependencies: [
                "Switchboard",
                "SwitchboardProtocol",
                .target(name: "CGStreamer", condition: .when(traits: ["GStreamer"])),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),

        // MARK: apple (platform-neutral CallKit rules; the Apple adapters compile only where CallKit exists)
        .target(
            name: "SwitchboardCallKit",
            dependencies: [
                "Switchboard",
                "SwitchboardProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),

        // The call views: SwiftUI with UIKit wrappers, on the platform-neutral view logic of
        // `Switchboard` (View/). Their sources compile only where SwiftUI and UIKit exist.
        .target(
            name: "SwitchboardUI",
            dependencies: ["Switchboard", "SwitchboardProtocol"]
        ),

        // The iOS media engine on Google's WebRTC framework. Its sources compile only where the
        // `WebRTC` module exists: with the WebRTC trait on iOS (docs/IOS.md, section 8).
        .target(
            name: "SwitchboardWebRTC",
            dependencies: [
                "Switchboard", "SwitchboardProtocol", "SwitchboardUI",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "WebRTC", package: "WebRTC", condition: .when(platforms: [.iOS], traits: ["WebRTC"])),
            ]
        ),

        // MARK: the browser client, shipped with the CLI as package resources
        .target(
            name: "SwitchboardWebClient",
            resources: [.copy("Web")]
        ),

        // MARK: tools (shipped in the CLI: the demo player, child processes, waiting for events)
        // posix_spawn with glibc's closefrom and chdir actions (C: they need _GNU_SOURCE).
        .target(name: "CSpawn"),
        .target(
            name: "SwitchboardTools",
            dependencies: [
                "CSpawn",
                "Switchboard",
                "SwitchboardProtocol",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),

        // MARK: test support: light fakes (test clock, fake CallKit/PushKit, fake media engine) and
        // test servers (in-process server, local APNs, raw WebSocket client, TCP proxy)
        .target(
            name: "SwitchboardTesting",
            dependencies: [
                "SwitchboardProtocol",
                "Switchboard",
                "SwitchboardCallKit",
                "SwitchboardTools",
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .target(
            name: "SwitchboardTestServers",
            dependencies: [
                "SwitchboardProtocol",
                "SwitchboardServer",
                "Switchboard",
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
                "SwitchboardProtocol",
                "SwitchboardServer",
                "SwitchboardWebClient",
                "Switchboard",
                "SwitchboardTools",
                .target(name: "SwitchboardGStreamer", condition: .when(traits: ["GStreamer"])),
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

        // MARK: tests
        .testTarget(
            name: "SwitchboardProtocolTests",
            dependencies: [
                "SwitchboardProtocol", "SwitchboardTools", .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            exclude: ["Fixtures"],
            resources: [.copy("Golden")]
        ),
        .testTarget(
            name: "SwitchboardServerTests",
            dependencies: [
                "SwitchboardServer", "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools",
                "SwitchboardProtocol", "Switchboard", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"), .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Crypto", package: "swift-crypto"), .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        .testTarget(
            name: "SwitchboardCLITests",
            dependencies: [
                "SwitchboardProtocol", "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools", "Switchboard",
                "SwitchboardWebClient", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SwitchboardTests",
            dependencies: [
                "Switchboard", "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools", "SwitchboardProtocol",
                "SwitchboardServer", .product(name: "Logging", package: "swift-log"),
                .product(name: "OpenCombine", package: "OpenCombine", condition: .when(platforms: nonApple)),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SwitchboardGStreamerTests",
            dependencies: [
                "Switchboard", "SwitchboardGStreamer", "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools",
                "SwitchboardProtocol", "SwitchboardServer",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SwitchboardCallKitTests",
            dependencies: [
                "SwitchboardCallKit", "Switchboard", "SwitchboardTesting", "SwitchboardTestServers", "SwitchboardTools",
                "SwitchboardProtocol", "SwitchboardServer", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ]
        ),
    ]
)
