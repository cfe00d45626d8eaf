// swift-tools-version: 6.1
import PackageDescription

// The client: what an app adds (the wire protocol, the SDK, the CallKit bridge, the call views and
// the media engines). The server, the CLI, the test support and every test are the package in
// `Server/`, which depends on this one by path, so an app resolves none of their dependencies
// (docs/IOS.md, "The dependency graph").

/// Where Apple's Combine does not exist: the SDK uses OpenCombine there.
let nonApple: [Platform] = [.linux, .windows, .android, .wasi, .openbsd]

let package = Package(
    name: "Switchboard",
    platforms: [.macOS(.v14), .iOS(.v16)],
    products: [
        .library(name: "SwitchboardProtocol", targets: ["SwitchboardProtocol"]),
        .library(name: "Switchboard", targets: ["Switchboard"]),
        .library(name: "SwitchboardCallKit", targets: ["SwitchboardCallKit"]),
        // Empty where SwiftUI and UIKit do not exist (Linux).
        .library(name: "SwitchboardUI", targets: ["SwitchboardUI"]),
        // Empty unless the app gives it Google's WebRTC framework (docs/IOS.md, "Media").
        .library(name: "SwitchboardWebRTC", targets: ["SwitchboardWebRTC"]),
        // Empty unless the GStreamer trait is on (`swift build --traits GStreamer`).
        .library(name: "SwitchboardGStreamer", targets: ["SwitchboardGStreamer"]),
    ],
    traits: [
        // Off by default, so nothing needs GStreamer unless asked: the trait builds the Linux WebRTC
        // media engine (GStreamer webrtcbin), and needs GStreamer's and libnice's development
        // packages (see README, "Media on Linux"). The server package turns it on with its own.
        .trait(
            name: "GStreamer",
            description: "The GStreamer webrtcbin media engine (SwitchboardGStreamer)"),
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
        .package(url: "https://github.com/hummingbird-project/swift-websocket", from: "1.6.2"),
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
    ]
)
