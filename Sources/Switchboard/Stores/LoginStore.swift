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
        /// The connection dropped and the SDK is reconnecting; the server keeps this device's calls
        /// for its reconnect grace period, and requests made meanwhile wait.
        case reconnecting
    }

    public struct State: Equatable, Sendable {
        public var loginStatus: LoginStatus = .loggedOut
        public var sdkAppID: SdkAppID?
        public var deviceId: DeviceID?
        /// Your profile, once logged in.
        public var selfInfo: UserProfile?
        /// Why the last session ended, when the server or the network ended it.
        public var lastError: SwitchboardError?
        /// The VoIP push token this device registered (lowercase hex), nil when calls cannot reach it
        /// by push.
        public var pushToken: String?
        /// Failed reconnect attempts since the connection dropped.
        public var reconnectAttempts = 0
        /// The last heartbeat went unanswered: the connection may be stalled (a second one in a row
        /// counts as a drop).
        public var isConnectionStalled = false
    }

    /// The store of the shared client.
    public static var shared: LoginStore { SwitchboardClient.shared.loginStore }

    let cell = StateCell(State())
    private let signaling: SignalingClient
    private let callStore: CallStore
    private let configuration: NIOLockedValueBox<SwitchboardConfiguration>
    /// Runs before each login: the client applies a configuration given since the last one.
    var beforeLogin: @Sendable () -> Void {
        get { hooks.withLockedValue { $0 } }
        set { hooks.withLockedValue { $0 = newValue } }
    }
    private let hooks = NIOLockedValueBox<@Sendable () -> Void>({})

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
        beforeLogin()
        let configuration = self.configuration.withLockedValue { $0 }
        cell.update { state in
            state.loginStatus = .loggingIn
            state.lastError = nil
        }
        do {
            let response = try await signaling.login(
                to: configuration.serverURL,
                LoginRequest(
                    sdkAppID: sdkAppID, userID: UserID(rawValue: userID), userSig: userSig,
                    deviceId: configuration.deviceId, platform: configuration.platform),
                settings: SignalingClient.Settings(configuration))
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
        // Only a connected session tells the server; while reconnecting there is nobody to tell, and
        // the server ends the device's calls when its grace period runs out.
        if await signaling.isConnected {
            _ = try? await signaling.send(LogoutRequest())
        }
        await signaling.close()
    }

    /// Sets your nickname and avatar; fields left nil keep their value.
    public func setSelfInfo(nickname: String? = nil, avatarURL: String? = nil) async throws {
        let profile = try await signaling.send(SetProfileRequest(nickname: nickname, avatarURL: avatarURL))
        cell.update { $0.selfInfo = profile }
    }

    /// Registers this device's VoIP push token (from PushKit's `didUpdate pushCredentials`, as hex) so
    /// calls reach it while the app is not running. Call it after login and whenever the token changes.
    ///
    /// - Parameter move: take the token over from another user of the app who registered it on this
    ///   device and did not log out (without it, that is refused with `pushTokenInUse`).
    public func registerPushToken(
        _ token: String, environment: PushEnvironment, bundleId: String, move: Bool = false
    ) async throws {
        _ = try await signaling.send(
            RegisterPushTokenRequest(token: token, environment: environment, bundleId: bundleId, move: move ? true : nil))
        cell.update { $0.pushToken = token.lowercased() }
    }

    /// Stops VoIP pushes to this device (PushKit's `didInvalidatePushTokenFor`).
    public func unregisterPushToken() async throws {
        _ = try await signaling.send(UnregisterPushTokenRequest())
        cell.update { $0.pushToken = nil }
    }

    func connectionChanged(_ event: SignalingClient.ConnectionEvent) {
        cell.update { state in
            switch event {
            case .reconnecting(let error):
                guard state.loginStatus == .loggedIn || state.loginStatus == .reconnecting else { return }
                state.loginStatus = .reconnecting
                state.lastError = error
                state.reconnectAttempts = 0
                state.isConnectionStalled = false
            case .reconnectAttemptFailed(let attempt, let error):
                state.reconnectAttempts = attempt
                state.lastError = error
            case .heartbeatMissed:
                state.isConnectionStalled = true
            case .heartbeatAnswered:
                state.isConnectionStalled = false
            case .reconnected(let response):
                state.loginStatus = .loggedIn
                state.selfInfo = response.profile
                state.lastError = nil
                state.reconnectAttempts = 0
            case .sessionLost(let error):
                state = State()
                state.lastError = error
            }
        }
    }
}
