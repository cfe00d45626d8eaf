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
        /// The alert token this device registered (missed-call alerts), lowercase hex.
        public var alertPushToken: String?
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
        get { hooks.function }
        set { hooks.function = newValue }
    }
    private let hooks = LockedCallback<@Sendable () -> Void>({})

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
                to: [configuration.serverURL] + configuration.fallbackServerURLs,
                LoginRequest(
                    sdkAppID: sdkAppID, userID: UserID(rawValue: userID), userSig: userSig,
                    deviceId: configuration.deviceId, platform: configuration.platform),
                settings: SignalingClient.Settings(configuration))
            callStore.loggedIn(as: response.userID, device: response.deviceId)
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

    /// Logs out: your connected calls are hung up, the server forgets this device's push tokens,
    /// and the connection closes.
    ///
    /// The SDK forgets the session in any case. It throws when the server could not be told (the
    /// connection was down and did not come back within the request timeout): the server then
    /// ends the device's calls when its reconnect grace runs out, but keeps its push tokens, so
    /// the device may still get VoIP pushes for this user until a login on it moves the token (the
    /// CallKit bridge reports and ends such pushes at once).
    public func logout() async throws {
        var failure: (any Error)?
        let status = state.loginStatus
        if status == .loggedIn || status == .reconnecting {
            do {
                // While reconnecting this waits for the connection, up to the request timeout.
                _ = try await signaling.send(LogoutRequest())
            } catch {
                failure = error
            }
        }
        await signaling.close()
        callStore.reset()
        cell.update { $0 = State() }
        if let failure { throw failure }
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
    /// - Parameter kind: `.voip` for PushKit's token (calls ring), `.alert` for the token of
    ///   `registerForRemoteNotifications` (missed-call alerts).
    /// - Parameter sealingKey: this device's ``PushSealingKey/publicKey``: pushes then carry their
    ///   content sealed for it.
    /// - Parameter alertRinging: for an alert token, the device rings without CallKit: invitations
    ///   come as time-sensitive alerts (``NotificationRingingCoordinator`` in SwitchboardCallKit).
    public func registerPushToken(
        _ token: String, environment: PushEnvironment, bundleId: String, move: Bool = false, kind: PushTokenKind = .voip,
        sealingKey: String? = nil, alertRinging: Bool = false
    ) async throws {
        _ = try await signaling.send(
            RegisterPushTokenRequest(
                token: token, environment: environment, bundleId: bundleId, move: move ? true : nil,
                kind: kind == .voip ? nil : kind, sealingKey: sealingKey, alertRinging: alertRinging ? true : nil))
        cell.update { state in
            if kind == .voip { state.pushToken = token.lowercased() } else { state.alertPushToken = token.lowercased() }
        }
    }

    /// Stops pushes to this device (PushKit's `didInvalidatePushTokenFor`): of one kind, or of
    /// every kind when `kind` is nil.
    public func unregisterPushToken(kind: PushTokenKind? = nil) async throws {
        _ = try await signaling.send(UnregisterPushTokenRequest(kind: kind))
        cell.update { state in
            if kind != .alert { state.pushToken = nil }
            if kind != .voip { state.alertPushToken = nil }
        }
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
            case .pathChanged:
                // A new round of attempts starts on the new path.
                if state.loginStatus == .reconnecting { state.reconnectAttempts = 0 }
            case .heartbeatMissed:
                state.isConnectionStalled = true
            case .heartbeatAnswered:
                state.isConnectionStalled = false
            case .reconnected(let response, _):
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
