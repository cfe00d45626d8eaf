import Foundation
import Logging
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol

/// Connects the system call UI (CallKit), VoIP pushes (PushKit) and the audio session to the
/// Switchboard SDK, following the rules iOS enforces (SPEC §8). Platform-neutral: the system is
/// reached only through the ports, so every rule here is tested on Linux.
///
/// The rules, and why:
/// - Every VoIP push is reported as an incoming call before the push handler returns, with no
///   `await` in between, and PushKit's completion runs from the report's completion: iOS kills an
///   app that takes a VoIP push without reporting a call. A push that cannot ring (malformed, stale,
///   for a call that ended, for a user who is not logged in here) is reported and ended at once.
/// - A call keeps one UUID for its life (``Foundation/UUID/init(callId:)``), so duplicate pushes
///   and the signaling invitation of the same call ring once.
/// - System actions become SDK calls and are fulfilled or failed exactly once: answer → accept
///   (after logging in when a push launched the app), end → reject, cancel or hang up, mute → the
///   microphone, hold → failed (Switchboard has no hold), start → place the call.
/// - Changes made in the app reach the system as transactions (``setMuted(_:)``, ``endCall(callId:)``,
///   ``startCall(userIds:mediaType:params:)``; or directly through the SDK stores, which the
///   coordinator notices), and the action that comes back is applied once: no echo loops.
/// - SDK events drive the call screen: outgoing connecting and connected, and the end with the
///   system's reason for the Switchboard end reason.
/// - Call audio starts only once the system activated the audio session, and stops when it is
///   deactivated: the coordinator puts the client's media in ``AudioSessionControl/external`` mode.
///
/// The rules themselves are ``CallKitStateMachine``, a value tested in tables; this class feeds it
/// the ports' callbacks and the SDK's events and performs what it returns.
public final class CallKitCoordinator: CallProviderReceiver, PushRegistryReceiver, Sendable {
    private typealias Machine = CallKitStateMachine

    /// A call the app asked to place through the system, until its start action places it.
    private struct PendingStart {
        var userIds: [String]
        var mediaType: CallMediaType
        var params: CallParams
        var continuation: CheckedContinuation<CallStartResult, any Error>
    }

    /// What the coordinator holds besides the rules: things that are not values.
    private struct Holdings {
        var actions: [Machine.ActionID: ProviderAction] = [:]
        var nextAction = 0
        var starts: [UUID: PendingStart] = [:]
        var pushToken: String?
        /// The remote-notification token (missed-call alerts), when the app gave it.
        var alertToken: String?
        var login: Task<Void, any Error>?
        /// CallKit activated the audio session: routes take effect.
        var audioActive = false
        /// The route last given to the audio session while it was active.
        var routed: AudioRoute?
        /// PushKit invalidated the token while logged out: tell the server at the next login.
        var unregisterAtLogin = false
    }

    private let client: SwitchboardClient
    private let settings: CallKitSettings
    private let provider: any CallProviderPort
    private let controller: any CallControllerPort
    private let audioSession: any AudioSessionPort
    /// Kept so the registry lives as long as the coordinator.
    private let pushRegistry: any PushRegistryPort
    private let logger: Logger
    private let machine = NIOLockedValueBox(CallKitStateMachine())
    private let holdings = NIOLockedValueBox(Holdings())
    private let watchers = NIOLockedValueBox<[Task<Void, Never>]>([])
    private let failureObservers = Observers<CallKitFailure>()
    /// How requests that must not be lost to a passing failure (ending a call, push tokens) are
    /// tried again.
    private let retry: RetryPolicy

    /// Makes the coordinator and hands it the ports' callbacks. Make it once, at launch, before
    /// PushKit can deliver a push (in `application(_:didFinishLaunchingWithOptions:)`).
    public init(
        client: SwitchboardClient = .shared, settings: CallKitSettings, provider: any CallProviderPort,
        controller: any CallControllerPort, pushRegistry: any PushRegistryPort, audioSession: any AudioSessionPort,
        retry: RetryPolicy = RetryPolicy(), logger: Logger = Logger(label: "switchboard.callkit")
    ) {
        self.retry = retry
        self.client = client
        self.settings = settings
        self.provider = provider
        self.controller = controller
        self.audioSession = audioSession
        self.pushRegistry = pushRegistry
        self.logger = logger
        client.audioSessionControl = .external
        // Subscribe before anything can happen, so no event is missed.
        let events = client.callStore.events
        let devices = client.deviceStore.stateUpdates
        let logins = client.loginStore.stateUpdates
        provider.setReceiver(self)
        pushRegistry.setReceiver(self)
        let eventWatcher = Task { [weak self] in
            for await event in events { self?.sdkEvent(event) }
        }
        let deviceWatcher = Task { [weak self] in
            for await device in devices {
                self?.handle(.microphoneChanged)
                self?.routeAudio(device.audioRoute)
            }
        }
        audioSession.observeHeadsets { [weak client] headsets in client?.audioHeadsetsChanged(headsets) }
        let loginWatcher = Task { [weak self] in
            var wasLoggedIn = false
            for await login in logins {
                let loggedIn = login.loginStatus == .loggedIn
                if loggedIn && !wasLoggedIn { await self?.registerPushToken() }
                wasLoggedIn = loggedIn
            }
        }
        watchers.withLockedValue { $0 = [eventWatcher, deviceWatcher, loginWatcher] }
    }

    deinit {
        watchers.withLockedValue { $0.forEach { $0.cancel() } }
    }

    // MARK: - the app's side

    /// Who is logged in here; a push for anyone else is ended at once. Set it at launch (from the
    /// keychain) before pushes can arrive; ``login(_:)`` and ``logout()`` keep it current.
    public var account: CallKitAccount? {
        get { machine.withLockedValue { $0.account } }
        set { handle(.accountChanged(newValue)) }
    }

    /// Logs in and remembers the account for pushes that launch the app.
    public func login(_ account: CallKitAccount) async throws {
        self.account = account
        try await client.loginStore.login(sdkAppID: account.sdkAppID, userID: account.userID, userSig: account.userSig)
    }

    /// What the bridge could not do for the app (after retrying what may pass), from now on.
    public var failures: AsyncStream<CallKitFailure> {
        AsyncStream.observing { [failureObservers] observer in
            let id = failureObservers.add(replay: [], observer)
            return { failureObservers.remove(id) }
        }
    }

    private func report(_ failure: CallKitFailure) {
        logger.error("callkit bridge failure", metadata: ["failure": "\(failure)"])
        failureObservers.publish(failure)
        failureObservers.outbox.drain()
    }

    /// Logs out (which also stops VoIP pushes to this device) and forgets the account. Throws, and
    /// reports ``CallKitFailure/pushTokenUnregistrationFailed(_:)``, when the server could not be
    /// told: pushes for the user may still come (they are reported and ended at once).
    public func logout() async throws {
        account = nil
        do {
            try await client.loginStore.logout()
        } catch {
            report(.pushTokenUnregistrationFailed(error as? SwitchboardError ?? SwitchboardError(.notConnected)))
            throw error
        }
    }

    /// Places a call through the system (a start transaction), as the app's call button and
    /// `INStartCallIntent` (recents, contacts, Siri) should; returns once the call is placed.
    @discardableResult
    public func startCall(userIds: [String], mediaType: CallMediaType, params: CallParams = CallParams()) async throws
        -> CallStartResult
    {
        let uuid = UUID()
        return try await withCheckedThrowingContinuation { continuation in
            holdings.withLockedValue {
                $0.starts[uuid] = PendingStart(
                    userIds: userIds, mediaType: mediaType, params: params, continuation: continuation)
            }
            handle(.startRequested(uuid, handle: userIds.joined(separator: ","), video: mediaType == .video))
        }
    }

    /// Places a call for `INStartCallIntent` (the Phone app's recents, contacts, Siri): the
    /// handle is the one Switchboard reported (user ids joined by commas).
    @discardableResult
    public func startCall(handle: String, video: Bool) async throws -> CallStartResult {
        let userIds = handle.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard !userIds.isEmpty else { throw SwitchboardError(.noParticipants, "the handle names nobody") }
        return try await startCall(userIds: userIds, mediaType: video ? .video : .audio)
    }

    /// Ends a call (the active one when `callId` is nil) through the system: an end transaction.
    public func endCall(callId: CallID? = nil) async throws {
        let id = callId ?? client.callStore.state.activeCall?.callId
        try await request(machine.withLockedValue { $0.endTransaction(id) })
    }

    /// Mutes or unmutes the active call through the system: a mute transaction.
    public func setMuted(_ muted: Bool) async throws {
        let id = client.callStore.state.activeCall?.callId
        try await request(machine.withLockedValue { $0.muteTransaction(id, muted: muted) })
    }

    private func request(_ action: SystemCallAction?) async throws {
        guard let action else { throw SwitchboardError(.callNotFound, "the system shows no such call") }
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            controller.request(action) { error in
                if let error {
                    continuation.resume(throwing: SwitchboardError(.systemRefused, "\(error)"))
                } else {
                    continuation.resume()
                }
            }
        }
    }

    // MARK: - PushKit

    public func pushTokenUpdated(_ token: Data) {
        holdings.withLockedValue { $0.pushToken = Self.hex(token) }
        Task { await registerPushToken() }
    }

    /// The app's remote-notification token (`application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`):
    /// registered with the server after every login, so missed calls can be announced with an alert.
    public func alertTokenUpdated(_ token: Data) {
        holdings.withLockedValue { $0.alertToken = Self.hex(token) }
        Task { await registerPushToken() }
    }

    private static func hex(_ token: Data) -> String {
        token.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
    }

    public func pushTokenInvalidated() {
        holdings.withLockedValue { holdings in
            holdings.pushToken = nil
            holdings.unregisterAtLogin = true
        }
        Task { await registerPushToken() }
    }

    /// Brings the server's view of this device's VoIP token in line with PushKit's, when logged in:
    /// the current token registered, or an invalidated one removed. Passing failures are retried.
    private func registerPushToken() async {
        guard client.loginStore.state.loginStatus == .loggedIn else { return }
        let (token, unregister, alert) = holdings.withLockedValue { ($0.pushToken, $0.unregisterAtLogin, $0.alertToken) }
        let loginStore = client.loginStore
        let settings = self.settings
        if let alert {
            do {
                try await retry.run(clock: clock) {
                    try await loginStore.registerPushToken(
                        alert, environment: settings.pushEnvironment, bundleId: settings.bundleId, move: true, kind: .alert,
                        sealingKey: settings.pushSealingKey?.publicKey)
                }
            } catch {
                report(.pushTokenRegistrationFailed(error as? SwitchboardError ?? SwitchboardError(.notConnected)))
            }
        }
        if let token {
            do {
                // PushKit gave this token to this app on this phone: it is the logged-in user's now.
                try await retry.run(clock: clock) {
                    try await loginStore.registerPushToken(
                        token, environment: settings.pushEnvironment, bundleId: settings.bundleId, move: true,
                        sealingKey: settings.pushSealingKey?.publicKey)
                }
                holdings.withLockedValue { $0.unregisterAtLogin = false }
            } catch {
                report(.pushTokenRegistrationFailed(error as? SwitchboardError ?? SwitchboardError(.notConnected)))
            }
        } else if unregister {
            do {
                try await retry.run(clock: clock) { try await loginStore.unregisterPushToken(kind: .voip) }
                holdings.withLockedValue { $0.unregisterAtLogin = false }
            } catch {
                report(.pushTokenUnregistrationFailed(error as? SwitchboardError ?? SwitchboardError(.notConnected)))
            }
        }
    }

    /// Reports the push's call right away (no `await` before the report); PushKit's completion runs
    /// from the report's completion.
    public func incomingPush(payload: [AnyHashable: Any], completion: @escaping @Sendable () -> Void) {
        handle(.push(VoIPPush(payload: payload, sealingKey: settings.pushSealingKey)), pushCompletion: completion)
    }

    // MARK: - CallKit

    public func perform(_ action: ProviderAction) {
        let id = holdings.withLockedValue { holdings in
            holdings.nextAction += 1
            let id = Machine.ActionID(rawValue: holdings.nextAction)
            holdings.actions[id] = action
            return id
        }
        handle(.providerAction(id, action.action))
    }

    public func audioSessionActivated() {
        holdings.withLockedValue { $0.audioActive = true }
        // CallKit's activation undoes a route set before it: set it again now.
        routeAudio(client.deviceStore.state.audioRoute, again: true)
        client.audioSessionActivated()
    }

    public func audioSessionDeactivated() {
        holdings.withLockedValue { holdings in
            holdings.audioActive = false
            holdings.routed = nil
        }
        client.audioSessionDeactivated()
    }

    /// Gives the audio session the SDK's route (``AudioRoutePolicy``) while it is active.
    private func routeAudio(_ route: AudioRoute, again: Bool = false) {
        let apply = holdings.withLockedValue { holdings -> Bool in
            guard holdings.audioActive, again || holdings.routed != route else { return false }
            holdings.routed = route
            return true
        }
        if apply { audioSession.route(to: route) }
    }

    public func providerDidReset() {
        handle(.providerReset)
    }

    // MARK: - the SDK's side

    private func sdkEvent(_ event: CallStoreEvent) {
        switch event {
        case .onCallReceived(let callId, let callerId, _, let mediaType, _):
            handle(.callReceived(callId, callerId: callerId, video: mediaType == .video, info: callInfo(callId)))
        case .onCallPlaced(let callId, let participantIds, let mediaType):
            handle(.callPlaced(callId, participantIds: participantIds, video: mediaType == .video))
        case .onCallStarted(let callId, _, _):
            handle(.callStarted(callId))
        case .onCallEnded(let callId, _, let reason, let userId):
            handle(.callEnded(callId, reason: reason, by: userId))
        case .onMediaTypeChangeResult(let callId, _, let mediaType, _, .agreed):
            handle(.mediaTypeChanged(callId, video: mediaType == .video, info: callInfo(callId)))
        case .onCallMoved(let callId, let from, let to):
            let device = client.loginStore.state.deviceId
            if to == device, let info = callInfo(callId) {
                // Taken here from another of the user's devices: the system learns it as a call
                // placed here (a start transaction), connected at once.
                let me = client.callStore.state.selfInfo.userId
                let others = info.participants.filter { $0.userId != me && $0.status != .none }.map(\.userId)
                handle(.callPlaced(callId, participantIds: others, video: info.mediaType == .video))
                handle(.callStarted(callId))
            } else if from == device {
                // It went on on another device: this one's call screen ends it, as answered elsewhere.
                handle(.callEnded(callId, reason: .otherDeviceAccepted, by: nil))
            }
        default:
            break
        }
    }

    private func callInfo(_ callId: CallID) -> CallInfo? {
        let calls = client.callStore.state
        if let active = calls.activeCall, active.callId == callId { return active.info }
        return calls.waitingCalls.first { $0.callId == callId }
    }

    /// Returns once logged in: at once when already, after the login in progress, or after logging
    /// in with ``account``.
    func ensureLoggedIn() async throws {
        if client.loginStore.state.loginStatus == .loggedIn { return }
        let account = self.account
        let task = holdings.withLockedValue { holdings -> Task<Void, any Error>? in
            if let login = holdings.login { return login }
            guard let account else { return nil }
            let login = Task { [client, weak self] in
                defer { self?.holdings.withLockedValue { $0.login = nil } }
                for await status in client.loginStore.stateUpdates.map({ $0.loginStatus }) {
                    switch status {
                    case .loggedIn, .reconnecting:
                        return
                    case .loggingIn:
                        continue
                    case .loggedOut:
                        try await client.loginStore.login(
                            sdkAppID: account.sdkAppID, userID: account.userID, userSig: account.userSig)
                        return
                    }
                }
            }
            holdings.login = login
            return login
        }
        guard let task else { throw SwitchboardError(.notLoggedIn, "no account to log in with") }
        try await task.value
    }

    // MARK: - driving the rules

    /// Feeds the machine one input with the world as it is now, then performs its effects.
    private func handle(_ input: Machine.Input, pushCompletion: (@Sendable () -> Void)? = nil) {
        let context = context()
        let effects = machine.withLockedValue { $0.handle(input, context) }
        perform(effects, pushCompletion: pushCompletion)
    }

    /// Performs effects in order: the system's and the device's at once, the SDK's requests (which
    /// wait for the server) one after the other in the background.
    private func perform(_ effects: [Machine.Effect], pushCompletion: (@Sendable () -> Void)? = nil) {
        var background: [Machine.SDKRequest] = []
        for effect in effects {
            switch effect {
            case .reportIncoming(let uuid, let update):
                provider.reportNewIncomingCall(uuid: uuid, update: update) { [weak self] error in
                    self?.handle(.reportCompleted(uuid, error))
                    pushCompletion?()
                }
            case .reportStartedConnecting(let uuid):
                provider.reportOutgoingCallStartedConnecting(uuid: uuid)
            case .reportConnected(let uuid):
                provider.reportOutgoingCallConnected(uuid: uuid)
            case .reportEnded(let uuid, let reason):
                provider.reportCallEnded(uuid: uuid, reason: reason)
            case .reportUpdated(let uuid, let update):
                provider.reportCallUpdated(uuid: uuid, update: update)
            case .request(let action):
                controller.request(action) { [weak self] error in
                    guard let error, let self else { return }
                    self.logger.info("the system refused a transaction", metadata: ["action": "\(action)", "error": "\(error)"])
                    self.handle(.transactionRefused(action))
                }
            case .fulfill(let id):
                takeAction(id)?.fulfill()
            case .fail(let id):
                takeAction(id)?.fail()
            case .configureAudio(let video):
                audioSession.configureForCall(video: video)
                // A new category drops the route override: route again if the session is active.
                routeAudio(client.deviceStore.state.audioRoute, again: true)
            case .deliverPush(let push):
                client.callStore.receivedPush(push)
            case .setMicrophone(let on):
                if on { client.deviceStore.openLocalMicrophone() } else { client.deviceStore.closeLocalMicrophone() }
            case .deactivateAudio:
                client.audioSessionDeactivated()
            case .startRefused(let uuid):
                let start = holdings.withLockedValue { $0.starts.removeValue(forKey: uuid) }
                start?.continuation.resume(throwing: SwitchboardError(.systemRefused, "the system refused to start the call"))
            case .sdk(let request):
                background.append(request)
            }
        }
        guard !background.isEmpty else { return }
        Task {
            for request in background { await run(request) }
        }
    }

    /// An SDK request the machine asked for; its outcome, where the machine needs it, goes back in.
    private func run(_ request: Machine.SDKRequest) async {
        switch request {
        case .logInForPush:
            do {
                try await ensureLoggedIn()
            } catch {
                report(.loginAfterPushFailed(error as? SwitchboardError ?? SwitchboardError(.notConnected)))
                handle(.pushLoginFailed)
            }
        case .accept(let callId, let uuid, let id):
            do {
                try await ensureLoggedIn()
                try await client.callStore.accept(callId: callId)
                handle(.answerFinished(uuid, id, succeeded: true))
            } catch {
                report(.answerFailed(callId, error as? SwitchboardError ?? SwitchboardError(.notConnected)))
                handle(.answerFinished(uuid, id, succeeded: false))
            }
        case .reject(let callId, let then):
            // The call screen ends the call at once; the server hears it as soon as it can.
            if let then { takeAction(then)?.fulfill() }
            await end(callId) { [self] in
                try await ensureLoggedIn()
                try await client.callStore.reject(callId: callId)
            }
        case .hangup(let callId, let then):
            if let then { takeAction(then)?.fulfill() }
            await end(callId) { [client] in try await client.callStore.hangup(callId: callId) }
        case .place(let uuid, let id):
            await place(uuid, id)
        }
    }

    /// Ends a call in the SDK, trying again while the failure may pass; a call the server already
    /// ended (or this device already left) is ended. Anything else is reported.
    private func end(_ callId: CallID, _ request: @escaping @Sendable () async throws -> Void) async {
        do {
            try await retry.run(clock: clock, request)
        } catch let error as SwitchboardError where [.callNotFound, .callAlreadyEnded, .invalidCallState].contains(error.code) {
            logger.debug("the call was over already", metadata: ["callId": "\(callId)", "error": "\(error)"])
        } catch {
            report(.endFailed(callId, error as? SwitchboardError ?? SwitchboardError(.notConnected)))
        }
    }

    private func place(_ uuid: UUID, _ id: Machine.ActionID) async {
        guard let start = holdings.withLockedValue({ $0.starts.removeValue(forKey: uuid) }) else {
            handle(.placeFinished(uuid, id, nil))
            return
        }
        do {
            let result = try await client.callStore.calls(
                participantIds: start.userIds, mediaType: start.mediaType, params: start.params,
                placed: { [weak self] callId in self?.handle(.placing(uuid, callId)) })
            let context = context()
            let effects = machine.withLockedValue { $0.handle(.placeFinished(uuid, id, result.callId), context) }
            // The call is placed before the app hears so, hang-up included.
            var requests: [Machine.SDKRequest] = []
            perform(
                effects.filter { effect in
                    guard case .sdk(let request) = effect else { return true }
                    requests.append(request)
                    return false
                })
            for request in requests { await run(request) }
            start.continuation.resume(returning: result)
        } catch {
            handle(.placeFinished(uuid, id, nil))
            start.continuation.resume(throwing: error)
        }
    }

    /// The client's clock, as configured now (the app may configure the client after making this).
    private var clock: any SwitchboardClock { client.configuration.clock }

    private func context() -> Machine.Context {
        Machine.Context(
            now: clock.now(), me: client.callStore.state.selfInfo.userId,
            microphoneOff: client.deviceStore.state.microphoneStatus == .off, freshUUID: UUID())
    }

    private func takeAction(_ id: Machine.ActionID) -> ProviderAction? {
        holdings.withLockedValue { $0.actions.removeValue(forKey: id) }
    }
}
