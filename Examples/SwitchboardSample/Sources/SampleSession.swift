import Foundation
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardUI
import SwitchboardWebRTC
import SwiftUI

/// The app's one session: the SDK with the WebRTC engine, the CallKit bridge, the call views'
/// model, and the account stored for a push that launches the app.
@MainActor
final class SampleSession: ObservableObject {
    let engine = WebRTCEngine()
    let calls: CallViewModel
    private(set) var coordinator: CallKitCoordinator?
    @Published var server = SampleSettings.load()
    @Published private(set) var loggedInAs: String?
    @Published private(set) var problem: String?

    init() {
        calls = CallViewModel(video: engine, callKitShowsIncomingCalls: true)
    }

    /// Configures the SDK and the CallKit bridge (PushKit registers the VoIP token itself).
    func start() {
        SwitchboardClient.shared.configure(SwitchboardConfiguration(serverURL: server.webSocketURL, mediaEngine: engine))
        let settings = CallKitSettings(
            bundleId: Bundle.main.bundleIdentifier ?? "dev.switchboard.sample",
            pushEnvironment: server.sandboxPushes ? .sandbox : .production)
        let coordinator = CallKitCoordinator.live(settings: settings)
        coordinator.account = server.account
        self.coordinator = coordinator
        Task { [weak self] in
            for await failure in coordinator.failures {
                self?.problem = "CallKit: \(failure)"
            }
        }
        if let account = server.account { loggedInAs = account.userID }
    }

    /// Fetches a UserSig from the development server and logs in through the bridge, which then
    /// registers the VoIP push token.
    func login(userID: String) async {
        problem = nil
        do {
            let account = try await DevelopmentUserSig.fetch(server: server.httpURL, userID: userID)
            try await coordinator?.login(account)
            server.account = account
            server.save()
            loggedInAs = account.userID
        } catch {
            problem = "Login failed: \(error)"
        }
    }

    func logout() async {
        do {
            try await coordinator?.logout()
        } catch {
            problem = "The server did not hear the logout: \(error)"
        }
        server.account = nil
        server.save()
        loggedInAs = nil
    }

    /// Calls `userIds` through CallKit (the call shows in the system's recents).
    func call(_ userIds: [String], video: Bool) async {
        problem = nil
        do {
            _ = try await coordinator?.startCall(userIds: userIds, mediaType: video ? .video : .audio)
        } catch {
            problem = "The call failed: \(error)"
        }
    }

    var pushToken: String? { SwitchboardClient.shared.loginStore.state.pushToken }
}
