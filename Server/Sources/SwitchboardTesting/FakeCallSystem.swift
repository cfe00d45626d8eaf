import Dispatch
import Foundation
import NIOConcurrencyHelpers
import Switchboard
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardTools
import Testing

/// CallKit, PushKit and the audio session as a test sees them: fake ports that hold the app to
/// the system's contracts. What iOS would punish is recorded in ``problems()``: a VoIP push whose
/// handler returns without reporting a call, a PushKit completion that runs before the report, an
/// action fulfilled twice or never, a report about a call the system does not show, an audio
/// session that CallKit activates before the app set its category.
///
/// The audio session plays where iOS would: a route the app set while the session is active (one
/// set while it is not has no effect: CallKit's activation drops it); else the headset connected
/// last; else the speaker in video-chat mode and the earpiece in voice-chat mode (``audioOutput``).
///
/// Like CallKit, the fake calls report completions and performs actions asynchronously on its
/// own serial queue; ``records`` is the system's log, in order, to wait on.
public final class FakeCallSystem: Sendable {
    /// What happened on the system's side.
    public enum Record: Equatable, Sendable {
        /// A new incoming call rang.
        case ringing(UUID, CallUpdate)
        /// An incoming report was refused (the system's completion error).
        case reportRefused(UUID, IncomingCallReportError)
        case startedConnecting(UUID)
        case connected(UUID)
        /// The app reported the call ended.
        case ended(UUID, SystemCallEndReason)
        case updated(UUID, CallUpdate)
        /// The app requested a transaction, which the system accepted (its action follows).
        case transaction(SystemCallAction)
        case transactionRefused(SystemCallAction)
        case fulfilled(SystemCallAction)
        case failed(SystemCallAction)
        /// PushKit's completion for the n-th push (from 1) ran.
        case pushCompleted(Int)
        case audioConfigured(video: Bool)
        /// The app routed call audio while the session was active.
        case audioRouted(AudioRoute)
        /// The app routed call audio while the session was not active: no effect.
        case audioRouteIgnored(AudioRoute)
        /// CallKit activated or deactivated the audio session.
        case audioSessionActive(Bool)
    }

    /// A call as the system shows it.
    public struct SystemCall: Equatable, Sendable {
        public enum Status: Equatable, Sendable {
            case ringing
            /// An outgoing call the system started (its start action may still be pending).
            case starting
            case connecting
            case active
            case ended
        }

        public var uuid: UUID
        public var update: CallUpdate?
        public var status: Status
        public var muted = false
        public var outgoing: Bool
    }

    /// Refusals the system can make, to test the app's handling.
    public struct Behaviour: Sendable {
        /// The next incoming reports fail with this error (Do Not Disturb, blocked…).
        public var reportError: IncomingCallReportError?
        /// Transactions are refused.
        public var refuseTransactions = false
    }

    private struct State {
        var calls: [UUID: SystemCall] = [:]
        var rings = 0
        var violations: [String] = []
        // Held weakly, as CallKit and PushKit hold their delegates.
        weak var receiver: (any CallProviderReceiver)?
        weak var pushReceiver: (any PushRegistryReceiver)?
        var pushes = 0
        var currentPush: Int?
        var reportsDuringPush = 0
        var completedPushes: [Int: Int] = [:]
        var nextAction = 0
        var actions: [Int: (action: SystemCallAction, completions: Int)] = [:]
        var behaviour = Behaviour()
        var continuation: AsyncStream<Record>.Continuation
        var audio = Audio()
    }

    /// The audio session as iOS keeps it.
    private struct Audio {
        var active = false
        /// The category was set for a call since the last deactivation.
        var configured = false
        var video = false
        /// The route the app set while the session was active; activation and a new category drop it.
        var routed: AudioRoute?
        /// Connected headsets, oldest first.
        var headsets: [AudioRoute] = []
        var observer: (@Sendable (Set<AudioRoute>) -> Void)?

        var output: AudioRoute? {
            guard active else { return nil }
            if let routed, !routed.isHeadset || headsets.contains(routed) { return routed }
            return headsets.last ?? (video ? .speaker : .earpiece)
        }
    }

    private let state: NIOLockedValueBox<State>
    private let queue = DispatchQueue(label: "switchboard.fake-call-system")
    /// The system's log.
    public let records: Recorder<Record>
    public let provider: Provider
    public let controller: Controller
    public let pushRegistry: PushRegistry
    public let audioSession: AudioSession

    public init() {
        let (stream, continuation) = AsyncStream<Record>.makeStream()
        let state = NIOLockedValueBox(State(continuation: continuation))
        self.state = state
        self.records = Recorder(stream)
        self.provider = Provider()
        self.controller = Controller()
        self.pushRegistry = PushRegistry()
        self.audioSession = AudioSession()
        provider.system.set(self)
        controller.system.set(self)
        pushRegistry.system.set(self)
        audioSession.system.set(self)
    }

    // MARK: - what a test reads

    /// Contract violations so far, plus actions and push completions still outstanding.
    public func problems() -> [String] {
        state.withLockedValue { state in
            var problems = state.violations
            for (_, action) in state.actions.sorted(by: { $0.key < $1.key }) where action.completions == 0 {
                problems.append("action \(action.action) was neither fulfilled nor failed")
            }
            for push in stride(from: 1, through: state.pushes, by: 1) where state.completedPushes[push] == nil {
                problems.append("PushKit completion of push \(push) never ran")
            }
            return problems
        }
    }

    /// How many times an incoming call started ringing.
    public var rings: Int { state.withLockedValue { $0.rings } }

    /// The calls the system shows or showed.
    public var calls: [UUID: SystemCall] { state.withLockedValue { $0.calls } }

    public var behaviour: Behaviour {
        get { state.withLockedValue { $0.behaviour } }
        set { state.withLockedValue { $0.behaviour = newValue } }
    }

    // MARK: - what the system does

    /// PushKit delivers a VoIP push (on the caller's thread, as on PushKit's queue); returns its number.
    @discardableResult
    public func deliverPush(_ payload: [AnyHashable: Any]) -> Int {
        let (number, receiver) = state.withLockedValue { state -> (Int, (any PushRegistryReceiver)?) in
            state.pushes += 1
            state.currentPush = state.pushes
            state.reportsDuringPush = 0
            return (state.pushes, state.pushReceiver)
        }
        guard let receiver else {
            violation("push \(number) arrived with no push registry delegate")
            return number
        }
        receiver.incomingPush(payload: payload) { [self] in
            let problem = state.withLockedValue { state -> String? in
                state.completedPushes[number, default: 0] += 1
                if state.completedPushes[number] == 2 { return "PushKit completion of push \(number) ran twice" }
                if state.currentPush == number && state.reportsDuringPush == 0 {
                    return "PushKit completion of push \(number) ran before a call was reported"
                }
                return nil
            }
            if let problem { violation(problem) }
            emit(.pushCompleted(number))
        }
        let reported = state.withLockedValue { state -> Bool in
            defer { state.currentPush = nil }
            return state.reportsDuringPush > 0
        }
        if !reported { violation("push \(number): the handler returned without reporting a call (iOS kills the app)") }
        return number
    }

    /// A push as APNs delivers it: the JSON body.
    @discardableResult
    public func deliverPush(json: Data) -> Int {
        let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] ?? [:]
        return deliverPush(object)
    }

    public func updatePushToken(_ token: Data) {
        state.withLockedValue { $0.pushReceiver }?.pushTokenUpdated(token)
    }

    public func invalidatePushToken() {
        state.withLockedValue { $0.pushReceiver }?.pushTokenInvalidated()
    }

    /// The user answers on the call screen.
    public func userAnswers(_ uuid: UUID) {
        userAction(.answer(uuid: uuid))
    }

    /// The user ends (or declines) the call on the call screen.
    public func userEnds(_ uuid: UUID) {
        userAction(.end(uuid: uuid))
    }

    /// The user taps the call screen's mute button.
    public func userSetsMuted(_ uuid: UUID, _ muted: Bool) {
        userAction(.setMuted(uuid: uuid, muted: muted))
    }

    /// The user puts the call on hold (a second call's "hold and accept").
    public func userHolds(_ uuid: UUID) {
        userAction(.setHeld(uuid: uuid, onHold: true))
    }

    /// The system activated the audio session (after an answer or a start was fulfilled).
    public func activateAudioSession() {
        queue.async { [self] in
            let configured = state.withLockedValue { state -> Bool in
                state.audio.active = true
                state.audio.routed = nil
                return state.audio.configured
            }
            if !configured { violation("CallKit activated the audio session before the app set its category for the call") }
            emit(.audioSessionActive(true))
            receiver()?.audioSessionActivated()
        }
    }

    public func deactivateAudioSession() {
        queue.async { [self] in
            state.withLockedValue { state in
                state.audio.active = false
                state.audio.configured = false
                state.audio.routed = nil
            }
            emit(.audioSessionActive(false))
            receiver()?.audioSessionDeactivated()
        }
    }

    /// Where call audio plays now; nil while the session is not active.
    public var audioOutput: AudioRoute? { state.withLockedValue { $0.audio.output } }

    /// A headset (`.bluetooth` or `.headset`) is connected or disconnected; the app hears of it.
    public func setHeadset(_ headset: AudioRoute, connected: Bool) {
        let (observer, present) = state.withLockedValue { state -> ((@Sendable (Set<AudioRoute>) -> Void)?, Set<AudioRoute>) in
            state.audio.headsets.removeAll { $0 == headset }
            if connected { state.audio.headsets.append(headset) }
            return (state.audio.observer, Set(state.audio.headsets))
        }
        queue.async { observer?(present) }
    }

    /// The call service restarted: every call is gone.
    public func reset() {
        state.withLockedValue { state in
            for uuid in Array(state.calls.keys) { state.calls[uuid]?.status = .ended }
        }
        queue.async { [self] in receiver()?.providerDidReset() }
    }

    // MARK: - internals

    private func receiver() -> (any CallProviderReceiver)? {
        state.withLockedValue { $0.receiver }
    }

    private func userAction(_ action: SystemCallAction) {
        queue.async { [self] in perform(action) }
    }

    /// Hands an action to the app, checking it is completed exactly once.
    private func perform(_ action: SystemCallAction) {
        let (id, receiver) = state.withLockedValue { state -> (Int, (any CallProviderReceiver)?) in
            state.nextAction += 1
            state.actions[state.nextAction] = (action, 0)
            return (state.nextAction, state.receiver)
        }
        guard let receiver else {
            violation("action \(action) with no provider delegate")
            return
        }
        receiver.perform(
            ProviderAction(
                action, fulfill: { [self] in complete(id, fulfilled: true) }, fail: { [self] in complete(id, fulfilled: false) }))
    }

    private func complete(_ id: Int, fulfilled: Bool) {
        let (action, count) = state.withLockedValue { state -> (SystemCallAction, Int) in
            state.actions[id]!.completions += 1
            let action = state.actions[id]!.action
            if fulfilled { Self.apply(action, to: &state) }
            return (action, state.actions[id]!.completions)
        }
        if count > 1 { violation("action \(action) completed \(count) times") }
        emit(fulfilled ? .fulfilled(action) : .failed(action))
    }

    /// What a fulfilled action changes on the call screen.
    private static func apply(_ action: SystemCallAction, to state: inout State) {
        switch action {
        case .start(let uuid, _, _):
            if state.calls[uuid]?.status == .starting { state.calls[uuid]?.status = .connecting }
        case .answer(let uuid):
            state.calls[uuid]?.status = .active
        case .end(let uuid):
            state.calls[uuid]?.status = .ended
        case .setMuted(let uuid, let muted):
            state.calls[uuid]?.muted = muted
        case .setHeld:
            break
        }
    }

    /// A contract violation fails the test that caused it, whether or not it reads ``problems()``
    /// (a fake that fails by default); it is also kept for ``problems()``.
    fileprivate func violation(_ message: String) {
        state.withLockedValue { $0.violations.append(message) }
        Issue.record("FakeCallSystem: \(message)")
    }

    fileprivate func emit(_ record: Record) {
        state.withLockedValue { _ = $0.continuation.yield(record) }
    }

    // MARK: - provider

    fileprivate func reportIncoming(
        _ uuid: UUID, _ update: CallUpdate, _ completion: @escaping @Sendable (IncomingCallReportError?) -> Void
    ) {
        let error = state.withLockedValue { state -> IncomingCallReportError? in
            if state.currentPush != nil { state.reportsDuringPush += 1 }
            if let error = state.behaviour.reportError { return error }
            if let call = state.calls[uuid], call.status != .ended { return .callUUIDAlreadyExists }
            state.calls[uuid] = SystemCall(uuid: uuid, update: update, status: .ringing, outgoing: false)
            state.rings += 1
            _ = state.continuation.yield(.ringing(uuid, update))
            return nil
        }
        if let error { emit(.reportRefused(uuid, error)) }
        queue.async { completion(error) }
    }

    fileprivate func report(_ uuid: UUID, _ change: String, _ record: Record, _ body: (inout SystemCall) -> String?) {
        let problem = state.withLockedValue { state -> String? in
            guard var call = state.calls[uuid] else { return "\(change) for a call the system never showed" }
            if call.status == .ended { return "\(change) for a call that already ended" }
            let problem = body(&call)
            state.calls[uuid] = call
            if problem == nil { _ = state.continuation.yield(record) }
            return problem
        }
        if let problem { violation(problem) }
    }

    fileprivate func request(_ action: SystemCallAction, _ completion: @escaping @Sendable ((any Error)?) -> Void) {
        let refusal = state.withLockedValue { state -> String? in
            if state.behaviour.refuseTransactions { return "refused" }
            let call = state.calls[action.uuid]
            switch action {
            case .start(let uuid, let handle, _):
                if let call, call.status != .ended { return "a call with this UUID exists" }
                state.calls[uuid] = SystemCall(
                    uuid: uuid, update: CallUpdate(handle: handle, callerName: handle, hasVideo: false), status: .starting,
                    outgoing: true)
            case .answer:
                if call?.status != .ringing { return "no ringing call with this UUID" }
            case .end, .setMuted, .setHeld:
                if call == nil || call?.status == .ended { return "no call with this UUID" }
            }
            _ = state.continuation.yield(.transaction(action))
            return nil
        }
        if let refusal {
            emit(.transactionRefused(action))
            queue.async { completion(FakeCallSystemError(message: refusal)) }
            return
        }
        queue.async { [self] in
            completion(nil)
            perform(action)
        }
    }

    /// The fake `CXProvider`.
    public final class Provider: CallProviderPort {
        fileprivate let system = WeakSystem()

        private var fake: FakeCallSystem { system.get() }

        public func setReceiver(_ receiver: any CallProviderReceiver) {
            fake.state.withLockedValue { $0.receiver = receiver }
        }

        public func reportNewIncomingCall(
            uuid: UUID, update: CallUpdate, completion: @escaping @Sendable (IncomingCallReportError?) -> Void
        ) {
            fake.reportIncoming(uuid, update, completion)
        }

        public func reportOutgoingCallStartedConnecting(uuid: UUID) {
            fake.report(uuid, "started connecting", .startedConnecting(uuid)) { call in
                guard call.outgoing, call.status == .connecting else {
                    return "started connecting reported for a call in status \(call.status)"
                }
                return nil
            }
        }

        public func reportOutgoingCallConnected(uuid: UUID) {
            fake.report(uuid, "connected", .connected(uuid)) { call in
                guard call.outgoing, call.status == .connecting else {
                    return "connected reported for a call in status \(call.status)"
                }
                call.status = .active
                return nil
            }
        }

        public func reportCallEnded(uuid: UUID, reason: SystemCallEndReason) {
            fake.report(uuid, "ended(\(reason))", .ended(uuid, reason)) { call in
                call.status = .ended
                return nil
            }
        }

        public func reportCallUpdated(uuid: UUID, update: CallUpdate) {
            fake.report(uuid, "update", .updated(uuid, update)) { call in
                call.update = update
                return nil
            }
        }
    }

    /// The fake `CXCallController`.
    public final class Controller: CallControllerPort {
        fileprivate let system = WeakSystem()

        public func request(_ action: SystemCallAction, completion: @escaping @Sendable ((any Error)?) -> Void) {
            system.get().request(action, completion)
        }
    }

    /// The fake `PKPushRegistry`.
    public final class PushRegistry: PushRegistryPort {
        fileprivate let system = WeakSystem()

        public func setReceiver(_ receiver: any PushRegistryReceiver) {
            system.get().state.withLockedValue { $0.pushReceiver = receiver }
        }
    }

    /// The fake audio session: keeps the category, the route and the headsets as iOS would, and
    /// holds the app to the order CallKit imposes.
    public final class AudioSession: AudioSessionPort {
        fileprivate let system = WeakSystem()

        public func configureForCall(video: Bool) {
            let fake = system.get()
            fake.state.withLockedValue { state in
                state.audio.configured = true
                state.audio.video = video
                state.audio.routed = nil
            }
            fake.emit(.audioConfigured(video: video))
        }

        public func route(to route: AudioRoute) {
            let fake = system.get()
            let active = fake.state.withLockedValue { state -> Bool in
                if state.audio.active { state.audio.routed = route }
                return state.audio.active
            }
            fake.emit(active ? .audioRouted(route) : .audioRouteIgnored(route))
        }

        public func observeHeadsets(_ observer: @escaping @Sendable (Set<AudioRoute>) -> Void) {
            let fake = system.get()
            let present = fake.state.withLockedValue { state -> Set<AudioRoute> in
                state.audio.observer = observer
                return Set(state.audio.headsets)
            }
            observer(present)
        }
    }
}

/// The ports' link back to their system (weak: the test owns the system).
final class WeakSystem: Sendable {
    private struct Box {
        weak var system: FakeCallSystem?
    }

    private let box = NIOLockedValueBox(Box())

    func set(_ system: FakeCallSystem) {
        box.withLockedValue { $0.system = system }
    }

    func get() -> FakeCallSystem {
        guard let system = box.withLockedValue({ $0.system }) else {
            fatalError("FakeCallSystem released while its ports are in use; keep it for the test's length")
        }
        return system
    }
}

/// The fake system refused a transaction.
public struct FakeCallSystemError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { "FakeCallSystem: \(message)" }
}
