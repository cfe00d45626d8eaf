// swift-tools-version: 6.1
import PackageDescription

// What the sample app's Xcode project links: this repository's client products, with the WebRTC
// trait on (an Xcode project cannot set a dependency's traits; a package can).
let package = Package(
    name: "SwitchboardSampleDependencies",
    platforms: [.iOS(.v16)],
    products: [
        .library(name: "SwitchboardSampleDependencies", targets: ["SwitchboardSampleDependencies"])
    ],
    dependencies: [
        // The checkout this folder is in; an app elsewhere uses the repository's URL and a version.
        .package(name: "Switchboard", path: "../../..", traits: ["WebRTC"])
    ],
    targets: [
        .target(
            name: "SwitchboardSampleDependencies",
            dependencies: [
                .product(name: "Switchboard", package: "Switchboard"),
                .product(name: "SwitchboardCallKit", package: "Switchboard"),
                .product(name: "SwitchboardUI", package: "Switchboard"),
                .product(name: "SwitchboardWebRTC", package: "Switchboard"),
            ]
        )
    ]
)
