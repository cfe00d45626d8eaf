import Foundation

/// The browser client (plain JavaScript, no build step), shipped with the `switchboard` binary as
/// package resources: `switchboard serve` serves it from wherever the binary runs. Its files are
/// in `Web/` beside this file.
public enum WebClient {
    /// The name SwiftPM gives this target's resources, next to the binary.
    static let bundleName = "SwitchboardServer_SwitchboardWebClient"

    /// The folder to copy beside the binary to ship the client with it.
    public static var resourcesName: String {
        #if os(Linux)
        bundleName + ".resources"
        #else
        bundleName + ".bundle"
        #endif
    }

    /// The folder of the files shipped with this binary; nil when they are not beside it (a binary
    /// copied without its `SwitchboardServer_SwitchboardWebClient.resources`).
    public static var bundledRoot: String? {
        var places = [Bundle.main.bundleURL]
        if let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() {
            places.append(executable.deletingLastPathComponent())
        }
        return root(near: places)
    }

    /// The first of the places that holds this target's resources with the client in them. Not
    /// `Bundle.module`, which stops the process when the bundle is missing.
    static func root(near places: [URL]) -> String? {
        for place in places {
            for bundle in [bundleName + ".resources", bundleName + ".bundle"] {
                for folder in ["Web", "Contents/Resources/Web"] {
                    let root = place.appendingPathComponent(bundle).appendingPathComponent(folder)
                    if FileManager.default.fileExists(atPath: root.appendingPathComponent("index.html").path) {
                        return root.path
                    }
                }
            }
        }
        return nil
    }
}
