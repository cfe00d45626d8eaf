import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// What a user did with a call notification.
public enum NotificationAction: String, Sendable, Equatable {
    /// The answer action (``IncomingCallPush/answerAction``).
    case answer
    /// The decline action (``IncomingCallPush/declineAction``).
    case decline
    /// Tapped the notification itself: the app opens on the ringing call.
    case open
}

/// The notification center (`UNUserNotificationCenter`), as ringing without CallKit needs it.
public protocol NotificationCenterPort: Sendable {
    /// Starts handing notifications to `receiver` (held weakly).
    func setReceiver(_ receiver: any NotificationReceiver)
    /// Registers the incoming-call category (``IncomingCallPush/alertCategory``) with its answer
    /// (opens the app) and decline (destructive) actions, titled as given.
    func registerIncomingCallCategory(answerTitle: String, declineTitle: String)
    /// Removes delivered notifications (their identifier is the push's `apns-collapse-id`: the call id).
    func removeDelivered(identifiers: [String])
}

/// What the notification center hands over (`UNUserNotificationCenterDelegate`).
public protocol NotificationReceiver: AnyObject, Sendable {
    /// A notification arrives while the app is in the foreground: whether the system shows it.
    func shouldPresent(payload: [AnyHashable: Any]) -> Bool
    /// The user acted on a notification; `completion` runs once the action was handled.
    func didReceive(_ action: NotificationAction, payload: [AnyHashable: Any], completion: @escaping @Sendable () -> Void)
}

/// Rings calls with notifications where CallKit is not used (``CallKitPolicy``): the device's alert
/// token is registered with `alertRinging`, so the server sends each invitation as a time-sensitive
/// alert with answer and decline actions; this coordinator turns the user's choice into SDK calls.
///
/// - Answer: the call rings in the SDK (from the notification's invitation), the coordinator logs
///   in with ``account`` when the notification launched the app, then accepts. Decline: rejects the
///   same way. Tapping the notification: the call rings in the app, which shows its incoming-call
///   screen.
/// - In the foreground, an invitation is not shown as a notification: the app rings with its own
///   screen from the invitation its connection brought. A missed-call alert is shown.
/// - A call that stops ringing while the app runs (canceled, answered elsewhere, missed) takes its
///   notification away. While it does not run, the server's end of the ringing (an alert with the
///   invitation's `apns-collapse-id`, ``CallEndedPush/alertPayload()``) replaces it: APNs cannot
///   remove a delivered notification.
/// - Sealed pushes (``SealedPush``) open with ``NotificationRingingSettings/sealingKey``.
public final class NotificationRingingCoordinator: NotificationReceiver, Sendable {
    private let client: SwitchboardClient
    private let settings: NotificationRingingSettings
    private let center: any NotificationCenterPort
    private let logger: Logger
    private let state = NIOLockedValueBox<(account: CallKitAccount?, token: String?)>((nil, nil))
    private let watchers = NIOLockedValueBox<[Task<Void, Never>]>([])

    /// Makes the coordinator at launch, before the notification center can hand anything over.
    public init(
        client: SwitchboardClient = .shared, settings: NotificationRingingSettings, center: any NotificationCenterPort,
        logger: Logger = Logger(label: "switchboard.notification-ringing")
    ) {
        self.client = client
        self.settings = settings
        self.center = center
        self.logger = logger
        let events = client.callStore.events
        let logins = client.loginStore.stateUpdates
        center.setReceiver(self)
        center.registerIncomingCallCategory(answerTitle: settings.answerTitle, declineTitle: settings.declineTitle)
        let eventWatcher = Task { [weak self] in
            for await event in events {
                if case .onCallEnded(let callId, _, _, _) = event { self?.center.removeDelivered(identifiers: [callId.rawValue]) }
            }
        }
        let loginWatcher = Task { [weak self] in
            var wasLoggedIn = false
            for await login in logins {
                let loggedIn = login.loginStatus == .loggedIn
                if loggedIn && !wasLoggedIn { await self?.registerToken() }
                wasLoggedIn = loggedIn
            }
        }
        watchers.withLockedValue { $0 = [eventWatcher, loginWatcher] }
    }

    deinit {
        watchers.withLockedValue { $0.forEach { $0.cancel() } }
    }

    /// The account to log in with when a notification's action launched the app.
    public var account: CallKitAccount? {
        get { state.withLockedValue { $0.account } }
        set { state.withLockedValue { $0.account = newValue } }
    }

    /// Logs in and remembers the account.
    public func login(_ account: CallKitAccount) async throws {
        self.account = account
        try await client.loginStore.login(sdkAppID: account.sdkAppID, userID: account.userID, userSig: account.userSig)
    }

    /// The remote-notification token (`didRegisterForRemoteNotificationsWithDeviceToken`): it is
    /// registered as this device's ringing alert token now when logged in, else at the next login.
    public func remoteNotificationTokenUpdated(_ token: Data) async {
        state.withLockedValue { $0.token = token.map { String(format: "%02x", $0) }.joined() }
        await registerToken()
    }

    private func registerToken() async {
        guard client.loginStore.state.loginStatus == .loggedIn, let token = state.withLockedValue({ $0.token }) else { return }
        do {
            try await client.loginStore.registerPushToken(
                token, environment: settings.pushEnvironment, bundleId: settings.bundleId, move: true, kind: .alert,
                sealingKey: settings.sealingKey?.publicKey, alertRinging: true)
        } catch {
            logger.error("the ringing alert token was not registered", metadata: ["error": "\(error)"])
        }
    }

    // MARK: - NotificationReceiver

    public func shouldPresent(payload: [AnyHashable: Any]) -> Bool {
        switch VoIPPush(payload: payload, sealingKey: settings.sealingKey) {
        case .incomingCall?: return false
        case .callEnded?:
            remoteNotificationReceived(payload: payload)
            return false
        case nil: return true
        }
    }

    /// A push handed to the app in the background (`didReceiveRemoteNotification`, for the end of
    /// a ringing, which carries `content-available`): the end of a ringing takes its notification away.
    public func remoteNotificationReceived(payload: [AnyHashable: Any]) {
        guard case .callEnded(let end)? = VoIPPush(payload: payload, sealingKey: settings.sealingKey) else { return }
        center.removeDelivered(identifiers: [end.callId.rawValue])
    }

    public func didReceive(
        _ action: NotificationAction, payload: [AnyHashable: Any], completion: @escaping @Sendable () -> Void
    ) {
        guard case .incomingCall(let invitation)? = VoIPPush(payload: payload, sealingKey: settings.sealingKey) else {
            completion()
            return
        }
        // The call rings in the SDK first, so the app's screens show it whatever comes next.
        client.callStore.receivedPush(.incomingCall(invitation))
        guard action != .open else {
            completion()
            return
        }
        Task {
            defer { completion() }
            do {
                try await loggedIn()
                if action == .answer {
                    try await client.callStore.accept(callId: invitation.callId)
                } else {
                    try await client.callStore.reject(callId: invitation.callId)
                }
            } catch {
                logger.info(
                    "a notification's action failed", metadata: ["action": "\(action)", "callId": "\(invitation.callId)", "error": "\(error)"])
                center.removeDelivered(identifiers: [invitation.callId.rawValue])
            }
        }
    }

    /// Logs in with ``account`` when logged out (the notification launched the app); waits for a
    /// login under way. While reconnecting, requests wait by themselves.
    private func loggedIn() async throws {
        if client.loginStore.state.loginStatus == .loggingIn {
            for await login in client.loginStore.stateUpdates where login.loginStatus != .loggingIn { break }
        }
        guard client.loginStore.state.loginStatus == .loggedOut else { return }
        guard let account else { throw SwitchboardError(.notConnected, "no account to log in with") }
        try await client.loginStore.login(sdkAppID: account.sdkAppID, userID: account.userID, userSig: account.userSig)
    }
}

/// What ringing with notifications needs to know.
public struct NotificationRingingSettings: Equatable, Sendable {
    /// The app's bundle id (alerts go to topic `<bundleId>`).
    public var bundleId: String
    /// Which APNs environment this build's tokens belong to.
    public var pushEnvironment: PushEnvironment
    /// The titles of the notification's actions, in the app's language.
    public var answerTitle: String
    public var declineTitle: String
    /// This device's key for sealed pushes, if the app uses them.
    public var sealingKey: PushSealingKey?

    public init(
        bundleId: String, pushEnvironment: PushEnvironment, answerTitle: String = "Answer", declineTitle: String = "Decline",
        sealingKey: PushSealingKey? = nil
    ) {
        self.bundleId = bundleId
        self.pushEnvironment = pushEnvironment
        self.answerTitle = answerTitle
        self.declineTitle = declineTitle
        self.sealingKey = sealingKey
    }
}
