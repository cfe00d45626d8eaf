#if canImport(WebRTC) && canImport(UIKit)
import AVFoundation
import Switchboard
@preconcurrency import WebRTC

/// WebRTC's audio unit under the call's control. `useManualAudio` keeps it off until
/// ``start(route:)``: with CallKit, once the system activated the session (docs/IOS.md section 3,
/// rule 8). Without CallKit (`managesSession`), the engine also activates the session, sets the
/// call category and routes it. Used on the engine's queue only.
final class AudioSessionDriver {
    private let managesSession: Bool
    private let session = RTCAudioSession.sharedInstance()

    init(managesSession: Bool) {
        self.managesSession = managesSession
        session.useManualAudio = true
        session.isAudioEnabled = false
    }

    func start(route: AudioRoute) {
        if managesSession {
            configure { session in
                try session.setCategory(
                    AVAudioSession.Category.playAndRecord.rawValue,
                    with: [.allowBluetooth, .allowBluetoothA2DP])
                try session.setMode(AVAudioSession.Mode.voiceChat.rawValue)
                try session.setActive(true)
            }
            self.route(route)
        } else {
            // CallKit activated the session: tell WebRTC, which otherwise waits for its own activation.
            session.audioSessionDidActivate(AVAudioSession.sharedInstance())
        }
        session.isAudioEnabled = true
    }

    func stop() {
        guard session.isAudioEnabled else { return }
        session.isAudioEnabled = false
        if managesSession {
            configure { try $0.setActive(false) }
        } else {
            session.audioSessionDidDeactivate(AVAudioSession.sharedInstance())
        }
    }

    /// Speaker or earpiece; a headset takes over by itself. With CallKit the bridge routes.
    func route(_ route: AudioRoute) {
        guard managesSession else { return }
        configure { try $0.overrideOutputAudioPort(route == .speaker ? .speaker : .none) }
    }

    /// The microphone's gain, 0–100, where the input allows one.
    func setInputGain(_ volume: Int) {
        guard session.inputGainSettable else { return }
        configure { try $0.setInputGain(Float(min(100, max(0, volume))) / 100) }
    }

    private func configure(_ body: (RTCAudioSession) throws -> Void) {
        session.lockForConfiguration()
        defer { session.unlockForConfiguration() }
        do {
            try body(session)
        } catch {
            // The session keeps what it had; the next change tries again.
        }
    }
}
#endif
