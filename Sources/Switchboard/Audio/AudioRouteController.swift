import NIOConcurrencyHelpers
import SwitchboardProtocol

/// Runs ``AudioRoutePolicy`` for a client: the calls this device is in and their media type from
/// ``CallStore``, the user's choices from ``DeviceStore/setAudioRoute(_:)``, the headsets from the
/// platform (``SwitchboardClient/audioHeadsetsChanged(_:)``); the route goes to
/// ``DeviceStore/State/audioRoute``, where the media engine and the audio session (the CallKit
/// bridge) take it from.
final class AudioRouteController: Sendable {
    private let policy = NIOLockedValueBox(AudioRoutePolicy())
    private let devices: DeviceStore
    private let watchers = NIOLockedValueBox<[Task<Void, Never>]>([])

    init(callStore: CallStore, deviceStore: DeviceStore) {
        devices = deviceStore
        // The media type of the call this device is in (placing it or connected), nil otherwise.
        let calls = callStore.stateUpdates.removingDuplicates { state -> CallMediaType? in
            guard let call = state.activeCall,
                state.selfInfo.status == .accept || (call.direction == .outgoing && state.selfInfo.status == .waiting)
            else { return nil }
            return call.mediaType
        }
        let choices = deviceStore.stateUpdates.removingDuplicates { $0.chosenAudioRoute }
        let callWatcher = Task { [weak self] in
            var current: CallMediaType?
            for await mediaType in calls {
                switch (current, mediaType) {
                case (nil, let type?): self?.handle(.callStarted(type))
                case (_?, let type?): self?.handle(.mediaTypeChanged(type))
                case (_?, nil): self?.handle(.callEnded)
                case (nil, nil): break
                }
                current = mediaType
            }
        }
        let choiceWatcher = Task { [weak self] in
            for await choice in choices {
                if let choice { self?.handle(.userChose(choice)) }
            }
        }
        watchers.withLockedValue { $0 = [callWatcher, choiceWatcher] }
    }

    deinit {
        watchers.withLockedValue { $0.forEach { $0.cancel() } }
    }

    /// The headsets connected now.
    func headsetsChanged(_ headsets: Set<AudioRoute>) {
        handle(.headsetsChanged(headsets))
    }

    private func handle(_ input: AudioRoutePolicy.Input) {
        let (route, choice) = policy.withLockedValue { policy in
            policy.handle(input)
            return (policy.route, policy.choice)
        }
        // The choice written back is the one the policy keeps: an impossible one is undone.
        devices.routeAudio(route, choice: choice)
    }
}
