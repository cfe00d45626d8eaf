import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Log in and out, and the logged-in user's profile. `LoginStore.shared` is the store of
/// ``SwitchboardClient/shared``.
public final class LoginStore: Sendable {
    public enum LoginStatus: String, Equatable, Sendable {
        case loggedOut
        case loggingIn
        case loggedIn
        /// The connection dropped; calls in progress are kept by the server for the grace period.
        case disconnected
    }

    public struct State: Equatable, Sendable {
        public var loginStatus: LoginStatus = .loggedOut
        public var sdkAppID: SdkAppID?
        public var deviceId: DeviceID?
        /// Your profile, once logged in.
        public var selfInfo: UserProfile?
        /// Why the last session ended, when the server or the network ended it.
        public var lastError: SwitchboardError?
    }

    /// The store of the shared client.
    public static var shared: LoginStore { SwitchboardClient.shared.loginStore }

    private let cell = StateCell(State())
    private let signaling: SignalingClient
    private let callStore: CallStore
    private let configuration: NIOLockedValueBox<SwitchboardConfiguration>

    init(signaling: SignalingClient, callStore: CallStore, configuration: NIOLockedValueBox<SwitchboardConfiguration>) {
        self.signaling = signaling
        self.callStore = callStore
        self.configuration = configuration
    }

    /// The current state.
    public var state: State { cell.value }

    /// The current state, then every change.
    public var stateUpdates: AsyncStream<State> { cell.subscribe() }

    /// Connects to the configured server and logs in with a UserSig (SPEC §2).
    public func login(sdkAppID: SdkAppID, userID: String, userSig: String) async throws {
        let configuration = self.configuration.withLockedValue { $0 }
        cell.update { state in
            state.loginStatus = .loggingIn
            state.lastError = nil
        }
        do {
            try await signaling.connect(to: configuration.serverURL)
            let response = try await signaling.login(
                LoginRequest(
                    sdkAppID: sdkAppID, userID: UserID(rawValue: userID), userSig: userSig,
                    deviceId: configuration.deviceId, platform: configuration.platform))
            callStore.loggedIn(as: response.userID)
            cell.update { state in
                state.loginStatus = .loggedIn
                state.sdkAppID = sdkAppID
                state.deviceId = response.deviceId
                state.selfInfo = response.profile
            }
        } catch {
            await signaling.close()
            cell.update { state in
                state.loginStatus = .loggedOut
                state.lastError = error as? SwitchboardError
            }
            throw error
        }
    }

    /// Logs out: your connected calls are hung up and the connection closes.
    public func logout() async throws {
        defer {
            callStore.reset()
            cell.update { $0 = State() }
        }
        _ = try? await signaling.send(LogoutRequest())
        await signaling.close()
    }

    /// Sets your nickname and avatar; fields left nil keep their value.
    public func setSelfInfo(nickname: String? = nil, avatarURL: String? = nil) async throws {
        let profile = try await signaling.send(SetProfileRequest(nickname: nickname, avatarURL: avatarURL))
        cell.update { $0.selfInfo = profile }
    }

    func sessionEnded(_ error: SwitchboardError) {
        cell.update { state in
            state.loginStatus = .loggedOut
            state.lastError = error
        }
    }

    func disconnected(_ error: SwitchboardError) {
        cell.update { state in
            guard state.loginStatus == .loggedIn else { return }
            state.loginStatus = .disconnected
            state.lastError = error
        }
    }
}
