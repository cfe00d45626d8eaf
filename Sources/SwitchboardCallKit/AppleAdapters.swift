#if canImport(CallKit) && canImport(PushKit) && canImport(UIKit)
import AVFAudio
import CallKit
import Foundation
import PushKit
import Switchboard
import UIKit

// The only file that touches Apple's frameworks: each adapter turns CallKit, PushKit and
// AVAudioSession into the neutral ports, with no decision of its own (STYLE habit 7).

/// `CXProvider` as a ``CallProviderPort``; its delegate callbacks go to the coordinator.
public final class CallKitProvider: NSObject, CXProviderDelegate, CallProviderPort, @unchecked Sendable {
    private let provider: CXProvider
    // Set once, before the first callback can arrive (the coordinator's init).
    private weak var receiver: (any CallProviderReceiver)?

    public init(configuration: ProviderConfiguration) {
        let settings = CXProviderConfiguration()
        settings.maximumCallGroups = configuration.maximumCallGroups
        settings.maximumCallsPerCallGroup = configuration.maximumCallsPerCallGroup
        settings.supportsVideo = configuration.supportsVideo
        settings.includesCallsInRecents = configuration.includesCallsInRecents
        settings.supportedHandleTypes = [.generic]
        settings.ringtoneSound = configuration.ringtoneSound
        if let name = configuration.iconTemplateImageName {
            settings.iconTemplateImageData = UIImage(named: name)?.pngData()
        }
        provider = CXProvider(configuration: settings)
        super.init()
        provider.setDelegate(self, queue: nil)
    }

    public func setReceiver(_ receiver: any CallProviderReceiver) {
        self.receiver = receiver
    }

    public func reportNewIncomingCall(
        uuid: UUID, update: CallUpdate, completion: @escaping @Sendable (IncomingCallReportError?) -> Void
    ) {
        provider.reportNewIncomingCall(with: uuid, update: Self.callUpdate(update)) { error in
            completion(error.map(Self.reportError))
        }
    }

    public func reportOutgoingCallStartedConnecting(uuid: UUID) {
        provider.reportOutgoingCall(with: uuid, startedConnectingAt: nil)
    }

    public func reportOutgoingCallConnected(uuid: UUID) {
        provider.reportOutgoingCall(with: uuid, connectedAt: nil)
    }

    public func reportCallEnded(uuid: UUID, reason: SystemCallEndReason) {
        let cxReason: CXCallEndedReason =
            switch reason {
            case .failed: .failed
            case .remoteEnded: .remoteEnded
            case .unanswered: .unanswered
            case .answeredElsewhere: .answeredElsewhere
            case .declinedElsewhere: .declinedElsewhere
            }
        provider.reportCall(with: uuid, endedAt: nil, reason: cxReason)
    }

    public func reportCallUpdated(uuid: UUID, update: CallUpdate) {
        provider.reportCall(with: uuid, updated: Self.callUpdate(update))
    }

    static func callUpdate(_ update: CallUpdate) -> CXCallUpdate {
        let callUpdate = CXCallUpdate()
        callUpdate.remoteHandle = CXHandle(type: .generic, value: update.handle)
        callUpdate.localizedCallerName = update.callerName
        callUpdate.hasVideo = update.hasVideo
        callUpdate.supportsHolding = false
        callUpdate.supportsGrouping = false
        callUpdate.supportsUngrouping = false
        callUpdate.supportsDTMF = false
        return callUpdate
    }

    static func reportError(_ error: any Error) -> IncomingCallReportError {
        guard let error = error as? CXErrorCodeIncomingCallError else { return .unknown }
        switch error.code {
        case .unentitled: return .unentitled
        case .callUUIDAlreadyExists: return .callUUIDAlreadyExists
        case .filteredByDoNotDisturb: return .filteredByDoNotDisturb
        case .filteredByBlockList: return .filteredByBlockList
        default: return .unknown
        }
    }

    // MARK: CXProviderDelegate

    public func providerDidReset(_ provider: CXProvider) {
        receiver?.providerDidReset()
    }

    public func provider(_ provider: CXProvider, perform action: CXStartCallAction) {
        deliver(.start(uuid: action.callUUID, handle: action.handle.value, video: action.isVideo), action)
    }

    public func provider(_ provider: CXProvider, perform action: CXAnswerCallAction) {
        deliver(.answer(uuid: action.callUUID), action)
    }

    public func provider(_ provider: CXProvider, perform action: CXEndCallAction) {
        deliver(.end(uuid: action.callUUID), action)
    }

    public func provider(_ provider: CXProvider, perform action: CXSetMutedCallAction) {
        deliver(.setMuted(uuid: action.callUUID, muted: action.isMuted), action)
    }

    public func provider(_ provider: CXProvider, perform action: CXSetHeldCallAction) {
        deliver(.setHeld(uuid: action.callUUID, onHold: action.isOnHold), action)
    }

    public func provider(_ provider: CXProvider, didActivate audioSession: AVAudioSession) {
        receiver?.audioSessionActivated()
    }

    public func provider(_ provider: CXProvider, didDeactivate audioSession: AVAudioSession) {
        receiver?.audioSessionDeactivated()
    }

    private func deliver(_ callAction: SystemCallAction, _ action: CXAction) {
        // CXAction is thread-safe to fulfill from any queue but not marked Sendable.
        nonisolated(unsafe) let action = action
        guard let receiver else {
            action.fail()
            return
        }
        receiver.perform(ProviderAction(callAction, fulfill: { action.fulfill() }, fail: { action.fail() }))
    }
}

/// `CXCallController` as a ``CallControllerPort``.
public final class CallKitController: CallControllerPort, @unchecked Sendable {
    private let controller = CXCallController()

    public init() {}

    public func request(_ action: SystemCallAction, completion: @escaping @Sendable ((any Error)?) -> Void) {
        let callAction: CXCallAction
        switch action {
        case .start(let uuid, let handle, let video):
            let start = CXStartCallAction(call: uuid, handle: CXHandle(type: .generic, value: handle))
            start.isVideo = video
            callAction = start
        case .answer(let uuid):
            callAction = CXAnswerCallAction(call: uuid)
        case .end(let uuid):
            callAction = CXEndCallAction(call: uuid)
        case .setMuted(let uuid, let muted):
            callAction = CXSetMutedCallAction(call: uuid, muted: muted)
        case .setHeld(let uuid, let onHold):
            callAction = CXSetHeldCallAction(call: uuid, onHold: onHold)
        }
        controller.request(CXTransaction(action: callAction)) { error in completion(error) }
    }
}

/// `PKPushRegistry` for VoIP pushes as a ``PushRegistryPort``.
public final class PushKitRegistry: NSObject, PKPushRegistryDelegate, PushRegistryPort, @unchecked Sendable {
    private let registry: PKPushRegistry
    private weak var receiver: (any PushRegistryReceiver)?

    /// Pushes are delivered on `queue` (main by default).
    public init(queue: DispatchQueue = .main) {
        registry = PKPushRegistry(queue: queue)
        super.init()
    }

    public func setReceiver(_ receiver: any PushRegistryReceiver) {
        self.receiver = receiver
        registry.delegate = self
        registry.desiredPushTypes = [.voIP]
    }

    public func pushRegistry(_ registry: PKPushRegistry, didUpdate pushCredentials: PKPushCredentials, for type: PKPushType) {
        guard type == .voIP else { return }
        receiver?.pushTokenUpdated(pushCredentials.token)
    }

    public func pushRegistry(_ registry: PKPushRegistry, didInvalidatePushTokenFor type: PKPushType) {
        guard type == .voIP else { return }
        receiver?.pushTokenInvalidated()
    }

    public func pushRegistry(
        _ registry: PKPushRegistry, didReceiveIncomingPushWith payload: PKPushPayload, for type: PKPushType,
        completion: @escaping () -> Void
    ) {
        nonisolated(unsafe) let completion = completion
        guard type == .voIP, let receiver else {
            completion()
            return
        }
        receiver.incomingPush(payload: payload.dictionaryPayload) { completion() }
    }
}

/// `AVAudioSession` configured and routed for calls. CallKit activates and deactivates it.
public final class CallAudioSession: AudioSessionPort, @unchecked Sendable {
    // Set once, by the coordinator's init.
    private var observation: (any NSObjectProtocol)?

    public init() {}

    deinit {
        if let observation { NotificationCenter.default.removeObserver(observation) }
    }

    public func configureForCall(video: Bool) {
        let session = AVAudioSession.sharedInstance()
        do {
            try session.setCategory(
                .playAndRecord, mode: video ? .videoChat : .voiceChat, options: [.allowBluetooth, .allowBluetoothA2DP])
        } catch {
            // The call goes on with the previous category; CallKit still activates the session.
        }
    }

    public func route(to route: AudioRoute) {
        let session = AVAudioSession.sharedInstance()
        do {
            switch route {
            case .speaker:
                try session.overrideOutputAudioPort(.speaker)
            case .earpiece:
                // Video-chat mode defaults to the speaker; voice-chat mode and the built-in
                // microphone keep the audio at the ear.
                try session.setCategory(.playAndRecord, mode: .voiceChat, options: [.allowBluetooth, .allowBluetoothA2DP])
                try session.overrideOutputAudioPort(.none)
                try session.setPreferredInput(session.availableInputs?.first { $0.portType == .builtInMic })
            case .bluetooth, .headset:
                try session.overrideOutputAudioPort(.none)
                let ports: [AVAudioSession.Port] =
                    route == .bluetooth ? [.bluetoothHFP, .bluetoothLE, .carAudio] : [.headsetMic, .usbAudio]
                try session.setPreferredInput(session.availableInputs?.first { ports.contains($0.portType) })
            }
        } catch {
            // The system keeps its own route; the next change routes again.
        }
    }

    public func observeHeadsets(_ observer: @escaping @Sendable (Set<AudioRoute>) -> Void) {
        observation = NotificationCenter.default.addObserver(
            forName: AVAudioSession.routeChangeNotification, object: nil, queue: nil
        ) { _ in observer(Self.headsets()) }
        observer(Self.headsets())
    }

    /// The headsets among the session's inputs and current outputs.
    static func headsets() -> Set<AudioRoute> {
        let session = AVAudioSession.sharedInstance()
        let ports = (session.availableInputs ?? []).map(\.portType) + session.currentRoute.outputs.map(\.portType)
        var headsets = Set<AudioRoute>()
        for port in ports {
            switch port {
            case .bluetoothHFP, .bluetoothA2DP, .bluetoothLE, .carAudio: headsets.insert(.bluetooth)
            case .headphones, .headsetMic, .usbAudio: headsets.insert(.headset)
            default: break
            }
        }
        return headsets
    }
}

extension CallKitCoordinator {
    /// The coordinator with the system's CallKit, PushKit and audio session.
    public static func live(client: SwitchboardClient = .shared, settings: CallKitSettings) -> CallKitCoordinator {
        CallKitCoordinator(
            client: client, settings: settings, provider: CallKitProvider(configuration: settings.providerConfiguration),
            controller: CallKitController(), pushRegistry: PushKitRegistry(), audioSession: CallAudioSession())
    }
}
#endif
