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
public final class CallKitCoordinator: CallProviderReceiver, PushRegistryReceiver, Sendable {
    private let client: SwitchboardClient
    private let settings: CallKitSettings
    private let provider: any CallProviderPort
    private let controller: any CallControllerPort
    private let audioSession: any AudioSessionPort
    /// Kept so the registry lives as long as the coordinator.
    private let pushRegistry: any PushRegistryPort
    private let clock: any SwitchboardClock
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    private let watchers = NIOLockedValueBox<[Task<Void, Never>]>([])

    /// The calls the system knows about, and what the coordinator remembers.
    struct State {
        var account: CallKitAccount?
        var calls: [UUID: Call] = [:]
        var uuids: [CallID: UUID] = [:]
        /// Calls that ended recently, with the reason a late push for them is ended with.
        var ended: [CallID: SystemCallEndReason] = [:]
        var endedOrder: [CallID] = []
        var pushToken: String?
        var login: Task<Void, any Error>?

        static let endedMemory = 128

        mutating func add(_ call: Call) {
            calls[call.uuid] = call
            if let callId = call.callId { uuids[callId] = call.uuid }
        }

        mutating func call(_ callId: CallID) -> Call? {
            uuids[callId].flatMap { calls[$0] }
        }

        /// Forgets a call the system no longer shows.
        mutating func remove(_ uuid: UUID, reason: SystemCallEndReason) {
            guard let call = calls.removeValue(forKey: uuid) else { return }
            guard let callId = call.callId else { return }
            uuids[callId] = nil
            if ended.updateValue(reason, forKey: callId) == nil { endedOrder.append(callId) }
            if endedOrder.count > Self.endedMemory { ended[endedOrder.removeFirst()] = nil }
        }
    }

    /// One call the system knows about.
    struct Call {
        enum Phase: Equatable {
            /// Reported as incoming; the system has not confirmed yet.
            case reporting
            /// Ringing on the call screen.
            case ringing
            /// The user answered; the SDK is accepting.
            case answering
            /// An outgoing call the system was asked to start; the start action has not completed.
            case starting
            /// An outgoing call placed and ringing at the invitees.
            case outgoing
            case connected
            /// Ended here (an end action is in flight or expected); SDK ends for it are not news.
            case ending
        }

        var uuid: UUID
        var callId: CallID?
        var direction: CallDirection
        var video: Bool
        var phase: Phase
        /// The call came from a push and the server has not confirmed it yet.
        var fromPush = false
        /// End the call with this reason once the report (or the start) completes.
        var endAfterReport: SystemCallEndReason?
        /// The SDK placed the call already (the app called `CallStore.calls` itself).
        var placedBySDK = false
        /// The call connected before its start action completed.
        var connectedEarly = false
        /// The user ended the call while it was being placed: hang up once it is.
        var endWhenPlaced = false
        /// What the call screen shows: muted or not.
        var systemMuted = false
        /// Mute changes made in the app and sent as transactions, oldest first; when their action
        /// comes back it only updates ``systemMuted``.
        var appMuteRequests: [Bool] = []
        /// For calls started with ``CallKitCoordinator/startCall(userIds:mediaType:params:)``.
        var start: PendingStart?
    }

    struct PendingStart {
        var userIds: [String]
        var mediaType: CallMediaType
        var params: CallParams
        var continuation: CheckedContinuation<CallStartResult, any Error>?
    }

    /// Makes the coordinator and hands it the ports' callbacks. Make it once, at launch, before
    /// PushKit can deliver a push (in `application(_:didFinishLaunchingWithOptions:)`).
    public init(
        client: SwitchboardClient = .shared, settings: CallKitSettings, provider: any CallProviderPort,
        controller: any CallControllerPort, pushRegistry: any PushRegistryPort, audioSession: any AudioSessionPort,
        logger: Logger = Logger(label: "switchboard.callkit")
    ) {
        self.client = client
        self.settings = settings
        self.provider = provider
        self.controller = controller
        self.audioSession = audioSession
        self.pushRegistry = pushRegistry
        self.clock = client.configuration.clock
        self.logger = logger
        client.audioSessionControl = .external
        // Subscribe before anything can happen, so no event is missed.
        let events = client.callStore.events
        let devices = client.deviceStore.stateUpdates
        let logins = client.loginStore.stateUpdates
        provider.setReceiver(self)
        pushRegistry.setReceiver(self)
        let eventWatcher = Task { [weak self] in
            for await event in events { self?.handle(event) }
        }
        let deviceWatcher = Task { [weak self] in
            for await _ in devices { self?.reconcileMute() }
        }
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
        get { state.withLockedValue { $0.account } }
        set { state.withLockedValue { $0.account = newValue } }
    }

    /// Logs in and remembers the account for pushes that launch the app.
    public func login(_ account: CallKitAccount) async throws {
        self.account = account
        try await client.loginStore.login(sdkAppID: account.sdkAppID, userID: account.userID, userSig: account.userSig)
    }

    /// Logs out (which also stops VoIP pushes to this device) and forgets the account.
    public func logout() async throws {
        account = nil
        try await client.loginStore.logout()
    }

    /// Places a call through the system (a start transaction), as the app's call button and
    /// `INStartCallIntent` (recents, contacts, Siri) should; returns once the call is placed.
    @discardableResult
    public func startCall(userIds: [String], mediaType: CallMediaType, params: CallParams = CallParams()) async throws
        -> CallStartResult
    {
        let uuid = UUID()
        let video = mediaType == .video
        let handle = userIds.joined(separator: ",")
        return try await withCheckedThrowingContinuation { continuation in
            state.withLockedValue { state in
                var call = Call(uuid: uuid, direction: .outgoing, video: video, phase: .starting)
                call.start = PendingStart(userIds: userIds, mediaType: mediaType, params: params, continuation: continuation)
                state.add(call)
            }
            controller.request(.start(uuid: uuid, handle: handle, video: video)) { [weak self] error in
                guard let error, let self else { return }
                let start = self.state.withLockedValue { state -> PendingStart? in
                    defer { state.calls[uuid] = nil }
                    return state.calls[uuid]?.start
                }
                start?.continuation?.resume(throwing: SwitchboardError(.systemRefused, "start refused: \(error)"))
            }
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
        try await request { state in
            guard let id, let call = state.call(id) else { return nil }
            return .end(uuid: call.uuid)
        }
    }

    /// Mutes or unmutes the active call through the system: a mute transaction.
    public func setMuted(_ muted: Bool) async throws {
        let id = client.callStore.state.activeCall?.callId
        try await request { state in
            guard let id, let call = state.call(id) else { return nil }
            return .setMuted(uuid: call.uuid, muted: muted)
        }
    }

    private func request(_ action: (inout State) -> SystemCallAction?) async throws {
        guard let action = state.withLockedValue(action) else {
            throw SwitchboardError(.callNotFound, "the system shows no such call")
        }
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
        let hex = token.map { byte in (byte < 16 ? "0" : "") + String(byte, radix: 16) }.joined()
        state.withLockedValue { $0.pushToken = hex }
        Task { await registerPushToken() }
    }

    public func pushTokenInvalidated() {
        state.withLockedValue { $0.pushToken = nil }
        Task { [client] in
            guard client.loginStore.state.loginStatus == .loggedIn else { return }
            try? await client.loginStore.unregisterPushToken()
        }
    }

    private func registerPushToken() async {
        guard let token = state.withLockedValue({ $0.pushToken }),
            client.loginStore.state.loginStatus == .loggedIn
        else { return }
        do {
            // PushKit gave this token to this app on this phone: it is the logged-in user's now.
            try await client.loginStore.registerPushToken(
                token, environment: settings.pushEnvironment, bundleId: settings.bundleId, move: true)
        } catch {
            logger.error("push token registration failed", metadata: ["error": "\(error)"])
        }
    }

    /// Reports the push's call right away (no `await` before the report), then works out the rest.
    public func incomingPush(payload: [AnyHashable: Any], completion: @escaping @Sendable () -> Void) {
        let push = VoIPPush(payload: payload)
        let now = clock.now()
        let (uuid, update, startLogin) = state.withLockedValue { state in
            Self.admit(push, now: now, into: &state)
        }
        provider.reportNewIncomingCall(uuid: uuid, update: update) { [weak self] error in
            self?.reportCompleted(uuid, error: error)
            completion()
        }
        guard let push, state.withLockedValue({ $0.calls[uuid]?.callId == push.callId }) else { return }
        client.callStore.receivedPush(push)
        if startLogin { logInForPush() }
    }

    /// Decides what a push becomes: the call it rings, a duplicate of a call already shown, or a
    /// call reported only to be ended at once. Returns the UUID and update to report.
    private static func admit(_ push: VoIPPush?, now: Int64, into state: inout State) -> (UUID, CallUpdate, Bool) {
        let unknown = CallUpdate(handle: "unknown", callerName: "Unknown caller", hasVideo: false)
        func endAtOnce(_ uuid: UUID, _ update: CallUpdate, _ reason: SystemCallEndReason) -> (UUID, CallUpdate, Bool) {
            var call = Call(uuid: uuid, direction: .incoming, video: update.hasVideo, phase: .reporting)
            call.endAfterReport = reason
            // Not paired with the call id: nothing the SDK says about that call concerns this report.
            if state.calls[uuid] == nil { state.calls[uuid] = call }
            return (uuid, update, false)
        }
        guard let push else { return endAtOnce(UUID(), unknown, .failed) }
        let uuid = UUID(callId: push.callId)
        switch push {
        case .callEnded(let end):
            let update = CallUpdate(handle: "unknown", callerName: "Ended call", hasVideo: end.mediaType == .video)
            if var call = state.call(end.callId), call.phase != .ending {
                // Still ringing here: report it again (the system answers "already exists", nothing
                // rings twice) and end it when that report completes.
                call.endAfterReport = SystemCallEndReason(end.reason)
                state.calls[call.uuid] = call
                return (call.uuid, CallUpdate(handle: "", callerName: "", hasVideo: call.video), false)
            }
            return endAtOnce(uuid, update, state.ended[end.callId] ?? SystemCallEndReason(end.reason))
        case .incomingCall(let invitation):
            let update = CallUpdate(
                handle: invitation.callerId.rawValue, callerName: invitation.callerName ?? invitation.callerId.rawValue,
                hasVideo: invitation.mediaType == .video)
            if let call = state.call(invitation.callId) {
                return (
                    call.uuid, CallUpdate(handle: update.handle, callerName: update.callerName, hasVideo: call.video), false
                )
            }
            if let reason = state.ended[invitation.callId] { return endAtOnce(uuid, update, reason) }
            guard let account = state.account, invitation.userId.map({ $0.rawValue == account.userID }) ?? true,
                invitation.sdkAppID.map({ $0 == account.sdkAppID }) ?? true
            else { return endAtOnce(uuid, update, .failed) }
            if let deadline = invitation.deadline, deadline <= now { return endAtOnce(uuid, update, .unanswered) }
            var call = Call(
                uuid: uuid, callId: invitation.callId, direction: .incoming, video: update.hasVideo, phase: .reporting)
            call.fromPush = true
            state.add(call)
            return (uuid, update, true)
        }
    }

    /// The system took (or refused) an incoming call report.
    private func reportCompleted(_ uuid: UUID, error: IncomingCallReportError?) {
        enum Next {
            case none
            case end(SystemCallEndReason)
            case decline(CallID)
        }
        let next = state.withLockedValue { state -> Next in
            guard var call = state.calls[uuid] else { return .none }
            if let error, error != .callUUIDAlreadyExists {
                // Not shown (Do Not Disturb, blocked, not entitled): the call cannot be answered here.
                state.remove(uuid, reason: .failed)
                return call.endAfterReport == nil ? call.callId.map(Next.decline) ?? .none : .none
            }
            if let reason = call.endAfterReport {
                state.remove(uuid, reason: reason)
                return .end(reason)
            }
            if call.phase == .reporting {
                call.phase = .ringing
                state.calls[uuid] = call
            }
            return .none
        }
        switch next {
        case .none:
            break
        case .end(let reason):
            provider.reportCallEnded(uuid: uuid, reason: reason)
        case .decline(let callId):
            logger.info("incoming call not shown by the system; declining", metadata: ["callId": "\(callId)"])
            Task { [client] in
                try? await self.ensureLoggedIn()
                try? await client.callStore.reject(callId: callId)
            }
        }
    }

    /// A push launched (or woke) the app: log in so the server confirms the invitation, and end
    /// the pushed calls if that is impossible.
    private func logInForPush() {
        Task { [self] in
            do {
                try await ensureLoggedIn()
            } catch {
                logger.error("login after a push failed", metadata: ["error": "\(error)"])
                let unconfirmed = state.withLockedValue { state -> [(UUID, CallID?, Bool)] in
                    state.calls.values.filter { $0.fromPush && ($0.phase == .reporting || $0.phase == .ringing) }.map {
                        call in
                        if call.phase == .reporting {
                            state.calls[call.uuid]?.endAfterReport = .failed
                            return (call.uuid, call.callId, false)
                        }
                        state.remove(call.uuid, reason: .failed)
                        return (call.uuid, call.callId, true)
                    }
                }
                for (uuid, callId, shown) in unconfirmed {
                    if shown { provider.reportCallEnded(uuid: uuid, reason: .failed) }
                    if let callId {
                        client.callStore.receivedPush(.callEnded(CallEndedPush(callId: callId, reason: .unknown)))
                    }
                }
            }
        }
    }

    /// Returns once logged in: at once when already, after the login in progress, or after logging
    /// in with ``account``.
    func ensureLoggedIn() async throws {
        if client.loginStore.state.loginStatus == .loggedIn { return }
        let task = state.withLockedValue { state -> Task<Void, any Error>? in
            if let login = state.login { return login }
            guard let account = state.account else { return nil }
            let login = Task { [client, weak self] in
                defer { self?.state.withLockedValue { $0.login = nil } }
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
            state.login = login
            return login
        }
        guard let task else { throw SwitchboardError(.notLoggedIn, "no account to log in with") }
        try await task.value
    }

    // MARK: - CallKit actions

    public func perform(_ action: ProviderAction) {
        switch action.action {
        case .answer(let uuid): answer(uuid, action)
        case .end(let uuid): end(uuid, action)
        case .setMuted(let uuid, let muted): mute(uuid, muted, action)
        case .start(let uuid, _, _): start(uuid, action)
        case .setHeld:
            // Switchboard has no hold: a second call is answered by ending the first.
            action.fail()
        }
    }

    private func answer(_ uuid: UUID, _ action: ProviderAction) {
        let answering = state.withLockedValue { state -> (CallID, Bool)? in
            guard var call = state.calls[uuid], let callId = call.callId, call.direction == .incoming,
                call.phase == .ringing || call.phase == .reporting
            else { return nil }
            call.phase = .answering
            call.systemMuted = false
            state.calls[uuid] = call
            return (callId, call.video)
        }
        guard let (callId, video) = answering else {
            action.fail()
            return
        }
        audioSession.configureForCall(video: video)
        // A call answered on the call screen starts unmuted, as the screen shows it.
        client.deviceStore.openLocalMicrophone()
        Task { [self, client] in
            do {
                try await ensureLoggedIn()
                try await client.callStore.accept(callId: callId)
                state.withLockedValue { state in
                    if state.calls[uuid]?.phase == .answering { state.calls[uuid]?.phase = .connected }
                }
                action.fulfill()
            } catch {
                logger.error("answering failed", metadata: ["callId": "\(callId)", "error": "\(error)"])
                action.fail()
                let shown = state.withLockedValue { state -> Bool in
                    guard state.calls[uuid] != nil else { return false }
                    state.remove(uuid, reason: .failed)
                    return true
                }
                if shown { provider.reportCallEnded(uuid: uuid, reason: .failed) }
            }
        }
    }

    private func end(_ uuid: UUID, _ action: ProviderAction) {
        enum Work {
            case none
            case reject(CallID)
            case hangup(CallID)
        }
        let work = state.withLockedValue { state -> Work in
            guard var call = state.calls[uuid] else { return .none }
            let before = call.phase
            call.phase = .ending
            state.calls[uuid] = call
            guard let callId = call.callId else {
                // Still being placed: hang up as soon as the call exists.
                call.endWhenPlaced = true
                state.calls[uuid] = call
                return .none
            }
            state.remove(uuid, reason: .remoteEnded)
            switch before {
            case .ending: return .none
            case .reporting, .ringing: return .reject(callId)
            case .answering, .starting, .outgoing, .connected: return .hangup(callId)
            }
        }
        Task { [self, client] in
            switch work {
            case .none:
                break
            case .reject(let callId):
                do {
                    try await ensureLoggedIn()
                    try await client.callStore.reject(callId: callId)
                } catch {
                    logger.info("reject after end action failed", metadata: ["callId": "\(callId)", "error": "\(error)"])
                }
            case .hangup(let callId):
                do {
                    try await client.callStore.hangup(callId: callId)
                } catch {
                    logger.info("hang-up after end action failed", metadata: ["callId": "\(callId)", "error": "\(error)"])
                }
            }
            // The user wants the call gone: an end action always succeeds here.
            action.fulfill()
        }
    }

    private func mute(_ uuid: UUID, _ muted: Bool, _ action: ProviderAction) {
        let apply = state.withLockedValue { state -> Bool? in
            guard var call = state.calls[uuid] else { return nil }
            call.systemMuted = muted
            defer { state.calls[uuid] = call }
            if call.appMuteRequests.first == muted {
                // The app's own change coming back: already applied.
                call.appMuteRequests.removeFirst()
                return false
            }
            return true
        }
        guard let apply else {
            action.fail()
            return
        }
        if apply {
            if muted { client.deviceStore.closeLocalMicrophone() } else { client.deviceStore.openLocalMicrophone() }
        }
        action.fulfill()
    }

    private func start(_ uuid: UUID, _ action: ProviderAction) {
        enum Work {
            case placed(connected: Bool, endReason: SystemCallEndReason?)
            case place(PendingStart)
        }
        let work = state.withLockedValue { state -> Work? in
            guard var call = state.calls[uuid], call.phase == .starting else { return nil }
            if !call.placedBySDK {
                // Taken once: a repeated start action finds nothing to place.
                defer { state.calls[uuid]?.start = nil }
                return call.start.map(Work.place)
            }
            call.phase = call.connectedEarly ? .connected : .outgoing
            let reason = call.endAfterReport
            if let reason { state.remove(uuid, reason: reason) } else { state.calls[uuid] = call }
            return .placed(connected: call.connectedEarly, endReason: reason)
        }
        switch work {
        case nil:
            action.fail()
        case .placed(let connected, let endReason)?:
            action.fulfill()
            provider.reportOutgoingCallStartedConnecting(uuid: uuid)
            if connected { provider.reportOutgoingCallConnected(uuid: uuid) }
            if let endReason { provider.reportCallEnded(uuid: uuid, reason: endReason) }
            reconcileMute()
        case .place(let start)?:
            audioSession.configureForCall(video: start.mediaType == .video)
            client.deviceStore.openLocalMicrophone()
            Task { await place(uuid, start, action) }
        }
    }

    private func place(_ uuid: UUID, _ start: PendingStart, _ action: ProviderAction) async {
        do {
            let result = try await client.callStore.calls(
                participantIds: start.userIds, mediaType: start.mediaType, params: start.params,
                placed: { [weak self] callId in
                    // Paired before the SDK publishes anything about the call.
                    self?.state.withLockedValue { state in
                        state.calls[uuid]?.callId = callId
                        state.uuids[callId] = uuid
                    }
                })
            let (connected, endReason, hangUp) = state.withLockedValue { state -> (Bool, SystemCallEndReason?, Bool) in
                guard var call = state.calls[uuid] else { return (false, nil, false) }
                call.start = nil
                if call.endWhenPlaced {
                    state.remove(uuid, reason: .remoteEnded)
                    return (false, nil, true)
                }
                call.phase = call.connectedEarly ? .connected : .outgoing
                let reason = call.endAfterReport
                if let reason { state.remove(uuid, reason: reason) } else { state.calls[uuid] = call }
                return (call.connectedEarly, reason, false)
            }
            action.fulfill()
            if hangUp {
                try? await client.callStore.hangup(callId: result.callId)
            } else {
                provider.reportOutgoingCallStartedConnecting(uuid: uuid)
                if connected { provider.reportOutgoingCallConnected(uuid: uuid) }
                if let endReason { provider.reportCallEnded(uuid: uuid, reason: endReason) }
            }
            start.continuation?.resume(returning: result)
        } catch {
            action.fail()
            state.withLockedValue { state in
                if let callId = state.calls.removeValue(forKey: uuid)?.callId { state.uuids[callId] = nil }
            }
            start.continuation?.resume(throwing: error)
        }
    }

    public func audioSessionActivated() {
        client.audioSessionActivated()
    }

    public func audioSessionDeactivated() {
        client.audioSessionDeactivated()
    }

    /// The system ended every call (its daemon restarted): leave them all in the SDK too.
    public func providerDidReset() {
        let callIds = state.withLockedValue { state -> [CallID] in
            let ids = state.calls.values.compactMap(\.callId)
            for uuid in Array(state.calls.keys) { state.remove(uuid, reason: .failed) }
            return ids
        }
        client.audioSessionDeactivated()
        Task { [client] in
            for callId in callIds { try? await client.callStore.hangup(callId: callId) }
        }
    }

    // MARK: - SDK events

    private func handle(_ event: CallStoreEvent) {
        switch event {
        case .onCallReceived(let callId, let callerId, _, let mediaType, _):
            reportInvitation(callId, callerId: callerId, video: mediaType == .video)
        case .onCallPlaced(let callId, let participantIds, let mediaType):
            adoptPlacedCall(callId, participantIds: participantIds, video: mediaType == .video)
        case .onCallStarted(let callId, _, _):
            let connected = state.withLockedValue { state -> UUID? in
                guard let uuid = state.uuids[callId], var call = state.calls[uuid] else { return nil }
                call.fromPush = false
                defer { state.calls[uuid] = call }
                switch call.phase {
                case .starting:
                    call.connectedEarly = true
                    return nil
                case .outgoing:
                    call.phase = .connected
                    return uuid
                default:
                    return nil
                }
            }
            if let connected { provider.reportOutgoingCallConnected(uuid: connected) }
        case .onCallEnded(let callId, _, let reason, let userId):
            callEnded(callId, reason: reason, byMe: userId == client.callStore.state.selfInfo.userId)
        case .onMediaTypeChangeResult(let callId, _, let mediaType, _, .agreed):
            let uuid = state.withLockedValue { state -> UUID? in
                guard let uuid = state.uuids[callId] else { return nil }
                state.calls[uuid]?.video = mediaType == .video
                return uuid
            }
            if let uuid, let info = callInfo(callId) {
                provider.reportCallUpdated(uuid: uuid, update: callUpdate(for: info, video: mediaType == .video))
            }
        default:
            break
        }
    }

    /// A call rang through signaling (the app is running): report it unless a push did already.
    private func reportInvitation(_ callId: CallID, callerId: UserID, video: Bool) {
        let uuid = UUID(callId: callId)
        let isNew = state.withLockedValue { state -> Bool in
            if let uuid = state.uuids[callId] {
                state.calls[uuid]?.fromPush = false
                return false
            }
            guard state.ended[callId] == nil else { return false }
            state.add(Call(uuid: uuid, callId: callId, direction: .incoming, video: video, phase: .reporting))
            return true
        }
        guard isNew else { return }
        let update =
            callInfo(callId).map { callUpdate(for: $0, video: video) }
            ?? CallUpdate(handle: callerId.rawValue, callerName: callerId.rawValue, hasVideo: video)
        provider.reportNewIncomingCall(uuid: uuid, update: update) { [weak self] error in
            self?.reportCompleted(uuid, error: error)
        }
    }

    /// The app placed a call through the SDK directly: tell the system with a start transaction,
    /// whose action then only confirms.
    private func adoptPlacedCall(_ callId: CallID, participantIds: [UserID], video: Bool) {
        let uuid = UUID(callId: callId)
        let isNew = state.withLockedValue { state -> Bool in
            guard state.uuids[callId] == nil else { return false }
            var call = Call(uuid: uuid, callId: callId, direction: .outgoing, video: video, phase: .starting)
            call.placedBySDK = true
            state.add(call)
            return true
        }
        guard isNew else { return }
        let handle = participantIds.map(\.rawValue).joined(separator: ",")
        controller.request(.start(uuid: uuid, handle: handle, video: video)) { [weak self] error in
            guard let error, let self else { return }
            // Without the system the call could never get audio: hang it up.
            self.logger.error("the system refused a call placed in the app", metadata: ["callId": "\(callId)", "error": "\(error)"])
            self.state.withLockedValue { $0.remove(uuid, reason: .failed) }
            Task { [client] in try? await client.callStore.hangup(callId: callId) }
        }
    }

    private func callEnded(_ callId: CallID, reason: CallEndReason, byMe: Bool) {
        enum Next {
            case none
            case report(UUID, SystemCallEndReason)
            case requestEnd(UUID)
        }
        let systemReason = SystemCallEndReason(reason)
        let next = state.withLockedValue { state -> Next in
            guard let uuid = state.uuids[callId], var call = state.calls[uuid] else { return .none }
            switch call.phase {
            case .ending:
                return .none
            case .reporting:
                call.endAfterReport = systemReason
                state.calls[uuid] = call
                return .none
            case .starting:
                call.endAfterReport = systemReason
                state.calls[uuid] = call
                return .none
            case .ringing, .answering, .outgoing, .connected:
                // Ended in the app (`CallStore.hangup`/`reject` called directly): the system learns it
                // as an end transaction, like any change made in the app.
                if byMe && [.hangup, .canceled, .reject].contains(reason) {
                    call.phase = .ending
                    state.calls[uuid] = call
                    return .requestEnd(uuid)
                }
                state.remove(uuid, reason: systemReason)
                return .report(uuid, systemReason)
            }
        }
        switch next {
        case .none:
            break
        case .report(let uuid, let reason):
            provider.reportCallEnded(uuid: uuid, reason: reason)
        case .requestEnd(let uuid):
            controller.request(.end(uuid: uuid)) { [weak self] error in
                guard error != nil, let self else { return }
                self.state.withLockedValue { $0.remove(uuid, reason: .remoteEnded) }
                self.provider.reportCallEnded(uuid: uuid, reason: .remoteEnded)
            }
        }
    }

    /// Keeps the call screen's mute button on the microphone's state: a change made in the app is
    /// sent as a mute transaction, remembered so that its action is not applied again.
    private func reconcileMute() {
        // The current state, not the one that triggered this: a stale value would send a needless
        // transaction and its undo.
        let microphoneOff = client.deviceStore.state.microphoneStatus == .off
        let requests = state.withLockedValue { state -> [UUID] in
            var requests: [UUID] = []
            for (uuid, var call) in state.calls
            where [.answering, .outgoing, .connected].contains(call.phase) {
                let shown = call.appMuteRequests.last ?? call.systemMuted
                guard shown != microphoneOff else { continue }
                call.appMuteRequests.append(microphoneOff)
                state.calls[uuid] = call
                requests.append(uuid)
            }
            return requests
        }
        for uuid in requests {
            controller.request(.setMuted(uuid: uuid, muted: microphoneOff)) { [weak self] error in
                guard error != nil else { return }
                self?.state.withLockedValue { state in
                    if let index = state.calls[uuid]?.appMuteRequests.firstIndex(of: microphoneOff) {
                        state.calls[uuid]?.appMuteRequests.remove(at: index)
                    }
                }
            }
        }
    }

    // MARK: - helpers

    private func callInfo(_ callId: CallID) -> CallInfo? {
        let calls = client.callStore.state
        if let active = calls.activeCall, active.callId == callId { return active.info }
        return calls.waitingCalls.first { $0.callId == callId }
    }

    /// The call screen's view of a call: the caller, or for a group everyone else.
    private func callUpdate(for info: CallInfo, video: Bool) -> CallUpdate {
        let me = client.callStore.state.selfInfo.userId
        let others = info.participants.filter { $0.userId != me }
        let caller = info.participant(info.callerId)
        if info.callType == .group {
            let names = others.map { $0.nickname ?? $0.userId.rawValue }
            return CallUpdate(
                handle: others.map(\.userId.rawValue).joined(separator: ","), callerName: names.joined(separator: ", "),
                hasVideo: video)
        }
        let peer = info.callerId == me ? others.first : caller
        return CallUpdate(
            handle: peer?.userId.rawValue ?? info.callerId.rawValue,
            callerName: peer?.nickname ?? peer?.userId.rawValue ?? info.callerId.rawValue, hasVideo: video)
    }
}
