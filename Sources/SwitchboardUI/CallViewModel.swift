#if canImport(SwiftUI) && canImport(UIKit)
import Combine
import Foundation
import Switchboard
import SwitchboardProtocol
import UIKit

/// What the call views show, on the main actor: the stores' states as they change, and the
/// platform-neutral decisions made on them (``CallScreenPresenter``, ``CallViewLayout``,
/// ``CallControls``, ``CallStatusLine``, ``FloatingWindowPlacement``). The views hold no state
/// of their own beyond this; every decision is in those values, tested on Linux.
@MainActor
public final class CallViewModel: ObservableObject {
    @Published public private(set) var call: CallStore.State {
        didSet { announceRecording(from: oldValue) }
    }
    @Published public private(set) var devices: DeviceStore.State
    @Published public var layout: CallViewLayout
    @Published public private(set) var presenter: CallScreenPresenter
    @Published public private(set) var floating = FloatingWindowPlacement()
    /// The last call the SDK refused from a button (shown until the next press).
    @Published public private(set) var lastError: String?
    /// The connected call's controls have record (``CallControl/record``): for an app whose
    /// recording policy records calls on request.
    @Published public var recordingControl: Bool

    public let client: SwitchboardClient
    public let video: (any CallVideoSource)?
    private var subscriptions: Set<AnyCancellable> = []

    /// - Parameters:
    ///   - video: the media engine's renderers (`WebRTCEngine`); without, tiles show avatars.
    ///   - callKitShowsIncomingCalls: the app uses `SwitchboardCallKit`, whose system screen
    ///     rings while the app is in the background.
    ///   - template: nil picks float for one-to-one calls and grid for groups.
    ///   - recordingControl: a connected call's controls have record (the app's recording policy
    ///     records calls on request; docs/IOS.md, "Recording").
    public init(
        client: SwitchboardClient = .shared, video: (any CallVideoSource)? = nil, callKitShowsIncomingCalls: Bool,
        template: CallLayoutTemplate? = nil, settings: CallViewSettings = CallViewSettings(), recordingControl: Bool = false
    ) {
        self.client = client
        self.video = video
        self.recordingControl = recordingControl
        call = client.callStore.state
        devices = client.deviceStore.state
        layout = CallViewLayout(template: template, settings: settings)
        presenter = CallScreenPresenter(callKitShowsIncomingCalls: callKitShowsIncomingCalls)
        presenter.appIsActive = UIApplication.shared.applicationState == .active
        client.callStore.subscribe().receive(on: DispatchQueue.main)
            .sink { [weak self] state in MainActor.assumeIsolated { self?.call = state } }
            .store(in: &subscriptions)
        client.deviceStore.subscribe().receive(on: DispatchQueue.main)
            .sink { [weak self] state in MainActor.assumeIsolated { self?.devices = state } }
            .store(in: &subscriptions)
        let center = NotificationCenter.default
        center.publisher(for: UIApplication.didBecomeActiveNotification).merge(
            with: center.publisher(for: UIApplication.willResignActiveNotification)
        )
        .receive(on: DispatchQueue.main)
        .sink { [weak self] note in
            let active = note.name == UIApplication.didBecomeActiveNotification
            MainActor.assumeIsolated { self?.presenter.appIsActive = active }
        }
        .store(in: &subscriptions)
    }

    // MARK: - what to show

    public var screen: CallScreenPresenter.Screen { presenter.screen(for: call) }
    public var controls: [CallControlItem] {
        CallControls.items(for: call, devices: devices, recordingControl: recordingControl)
    }
    public var statusLine: CallStatusLine? { CallStatusLine.of(call) }
    /// The call on screen is recorded: the header's (and the incoming screen's) mark.
    public var recordingMark: CallRecordingMark? { CallRecordingMark.of(call) }
    /// A call another of your devices offers to this one, while this one is in no call.
    public var movePrompt: CallMovePrompt? { CallMovePrompt.of(call) }
    public var pictureInPictureMember: UserID? { presenter.pictureInPictureMember(for: call) }

    public func tiles(in size: CGSize) -> [CallTile] {
        layout.tiles(for: call, in: LayoutSize(width: size.width, height: size.height))
    }

    /// The caller of a ringing call, as the incoming screen shows them.
    public var caller: CallParticipantInfo? {
        guard let callerId = call.activeCall?.callerId else { return nil }
        return call.allParticipants.first { $0.userId == callerId }
    }

    public func avatar(for member: CallParticipantInfo) -> String? { layout.settings.avatar(for: member) }

    // MARK: - what the user does

    public func press(_ item: CallControlItem) {
        guard let action = CallControls.action(for: item, devices: devices) else { return }
        lastError = nil
        let (calls, devices) = (client.callStore, client.deviceStore)
        switch action {
        case .accept: run { try await calls.accept() }
        case .reject: run { try await calls.reject() }
        case .hangup: run { try await calls.hangup() }
        case .setMicrophone(let on): on ? devices.openLocalMicrophone() : devices.closeLocalMicrophone()
        case .setAudioRoute(let route): devices.setAudioRoute(route)
        case .setCamera(let on, let front): on ? devices.openLocalCamera(isFront: front) : devices.closeLocalCamera()
        case .setScreenShare(let on): on ? devices.startScreenShare() : devices.stopScreenShare()
        case .setRecording(true): run(recording: true) { try await calls.startRecording() }
        case .setRecording(false): run(recording: false) { try await calls.stopRecording() }
        case .offerMove: run { try await calls.offerMove() }
        case .minimize: presenter.minimize(in: call)
        }
    }

    /// "Continue here": takes the offered call onto this device (with SwitchboardCallKit, the
    /// system shows it as a call placed here, connected at once).
    public func continueHere(_ prompt: CallMovePrompt) {
        lastError = nil
        let calls = client.callStore
        run { try await calls.take(callId: prompt.callId) }
    }

    public func tap(_ user: UserID, in size: CGSize) {
        layout.tap(user, in: call, viewport: LayoutSize(width: size.width, height: size.height))
    }

    public func dragFloatingTile(to origin: CGPoint, in size: CGSize) {
        layout.dragFloatingTile(
            to: LayoutPoint(x: origin.x, y: origin.y), in: call, viewport: LayoutSize(width: size.width, height: size.height))
    }

    /// The user tapped the floating window.
    public func restore() { presenter.restore() }

    /// The user let go of the floating window at `origin` within `area` (the safe area).
    public func dropFloatingWindow(at origin: CGPoint, in area: CGRect) {
        floating.drop(at: LayoutPoint(x: origin.x, y: origin.y), in: LayoutRect(area))
    }

    public func floatingWindowFrame(in area: CGRect) -> CGRect { CGRect(floating.frame(in: LayoutRect(area))) }

    /// Runs a call on the SDK; a refusal shows in ``lastError``. `recording`: the call starts
    /// (true) or stops (false) the recording, whose refusals are said in words.
    private func run(recording: Bool? = nil, _ body: @escaping @Sendable () async throws -> Void) {
        Task { [weak self] in
            do {
                try await body()
            } catch {
                self?.lastError = Self.text(of: error, recording: recording)
            }
        }
    }

    private static func text(of error: any Error, recording: Bool?) -> String {
        guard let recording, let code = (error as? SwitchboardError)?.code else { return String(describing: error) }
        if code == .recordingUnavailable {
            return NSLocalizedString("Recording is not available right now. Try again later.", comment: "")
        }
        guard code == .recordingNotAllowed else { return String(describing: error) }
        return recording
            ? NSLocalizedString("Recording is not allowed in this call", comment: "")
            : NSLocalizedString("This recording cannot be stopped from here", comment: "")
    }

    /// Tells VoiceOver users that the call on screen started or stopped being recorded (the mark
    /// in the header says it to those who look).
    private func announceRecording(from old: CallStore.State) {
        guard let announcement = CallRecordingMark.announcement(from: old, to: call) else { return }
        announceForAccessibility(announcement.text)
    }
}

extension LayoutRect {
    init(_ rect: CGRect) {
        self.init(x: rect.minX, y: rect.minY, width: rect.width, height: rect.height)
    }
}

extension CGRect {
    init(_ rect: LayoutRect) {
        self.init(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
    }
}
#endif
