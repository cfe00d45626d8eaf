import Foundation
import SwitchboardCallKit
import SwitchboardProtocol

/// The development server to use and the account logged in last, kept in the user defaults (a
/// real app keeps the UserSig in the keychain).
struct SampleSettings: Codable, Equatable {
    /// The server's address as the phone reaches it, e.g. `http://192.168.1.20:8080`. Start it with
    /// `switchboard serve --dev --dev-allowed-hosts 192.168.1.20` so it hands out UserSigs.
    var address = "http://127.0.0.1:8080"
    /// Builds run from Xcode get sandbox push tokens; TestFlight and App Store builds production ones.
    var sandboxPushes = true
    var stored: StoredAccount?

    struct StoredAccount: Codable, Equatable {
        var sdkAppID: Int64
        var userID: String
        var userSig: String
    }

    var account: CallKitAccount? {
        get { stored.map { CallKitAccount(sdkAppID: SdkAppID(rawValue: $0.sdkAppID), userID: $0.userID, userSig: $0.userSig) } }
        set { stored = newValue.map { StoredAccount(sdkAppID: $0.sdkAppID.rawValue, userID: $0.userID, userSig: $0.userSig) } }
    }

    static let key = "switchboard.sample.settings"

    static func load() -> SampleSettings {
        guard let data = UserDefaults.standard.data(forKey: key),
            let settings = try? JSONDecoder().decode(SampleSettings.self, from: data)
        else { return SampleSettings() }
        return settings
    }

    func save() {
        UserDefaults.standard.set(try? JSONEncoder().encode(self), forKey: Self.key)
    }

    var httpURL: URL { URL(string: address) ?? URL(string: "http://127.0.0.1:8080")! }

    /// `ws(s)://host:port/v1/ws` for the same server.
    var webSocketURL: URL {
        var components = URLComponents(url: httpURL, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = "/v1/ws"
        return components.url ?? URL(string: "ws://127.0.0.1:8080/v1/ws")!
    }
}
