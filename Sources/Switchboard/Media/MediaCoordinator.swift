import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Drives the media engine from the stores: audio runs while a call is connected and (with
/// external control) the audio session is active; device switches follow ``DeviceStore``.
final class MediaCoordinator: Sendable {
    private struct State {
        var control = AudioSessionControl.automatic
        var sessionActive = false
        var connected: (callId: CallID, mediaType: CallMediaType)?
        var audioRunning = false
    }

    /// The call this device is connected in.
    private struct Connection: Equatable, Sendable {
        var callId: CallID
        var mediaType: CallMediaType
    }

    private let engine: (any MediaEngine)?
    private let state = NIOLockedValueBox(State())
    private let watchers = NIOLockedValueBox<[Task<Void, Never>]>([])

    init(engine: (any MediaEngine)?, callStore: CallStore, deviceStore: DeviceStore) {
        self.engine = engine
        guard let engine else { return }
        let calls = Task { [weak self] in
            let connections = callStore.stateUpdates.removingDuplicates { state -> Connection? in
                guard state.selfInfo.status == .accept, let call = state.activeCall else { return nil }
                return Connection(callId: call.callId, mediaType: call.mediaType)
            }
            for await connection in connections {
                self?.connect(connection)
            }
        }
        let devices = Task {
            var last: DeviceStore.State?
            for await device in deviceStore.stateUpdates {
                if last?.microphoneStatus != device.microphoneStatus {
                    engine.setMicrophone(on: device.microphoneStatus == .on)
                }
                if last?.cameraStatus != device.cameraStatus || last?.isFrontCamera != device.isFrontCamera {
                    engine.setCamera(on: device.cameraStatus == .on, front: device.isFrontCamera)
                }
                last = device
            }
        }
        watchers.withLockedValue { $0 = [calls, devices] }
    }

    deinit {
        watchers.withLockedValue { $0.forEach { $0.cancel() } }
    }

    var control: AudioSessionControl {
        get { state.withLockedValue { $0.control } }
        set { update { $0.control = newValue } }
    }

    func audioSession(active: Bool) {
        update { $0.sessionActive = active }
    }

    /// The connected call changed: stop the old one's media, set up the new one's.
    private func connect(_ connection: Connection?) {
        guard let engine else { return }
        let previous = state.withLockedValue { $0.connected }
        if let previous, previous.callId != connection?.callId {
            update { $0.connected = nil }
            engine.callEnded(callId: previous.callId)
        }
        if let connection, connection.callId != previous?.callId {
            engine.callConnected(callId: connection.callId, mediaType: connection.mediaType)
            update { $0.connected = (connection.callId, connection.mediaType) }
        }
    }

    /// Applies a change and starts or stops audio when the change decides it.
    private func update(_ change: (inout State) -> Void) {
        let action = state.withLockedValue { state -> Bool? in
            change(&state)
            let shouldRun = state.connected != nil && (state.control == .automatic || state.sessionActive)
            guard shouldRun != state.audioRunning else { return nil }
            state.audioRunning = shouldRun
            return shouldRun
        }
        switch action {
        case true?: engine?.startAudio()
        case false?: engine?.stopAudio()
        case nil: break
        }
    }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The values of `key` for each element, without repeats.
    func removingDuplicates<Key: Equatable & Sendable>(
        _ key: @escaping @Sendable (Element) -> Key
    ) -> AsyncStream<Key> {
        AsyncStream { continuation in
            let task = Task {
                var last: Key?
                do {
                    for try await element in self {
                        let value = key(element)
                        if value != last { continuation.yield(value) }
                        last = value
                    }
                } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
