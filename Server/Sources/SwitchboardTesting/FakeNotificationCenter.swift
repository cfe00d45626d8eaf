import Foundation
import NIOConcurrencyHelpers
import SwitchboardCallKit
import SwitchboardProtocol
import SwitchboardTools

/// The notification center as a test sees it: it delivers alert payloads as the system would
/// (asking the app whether to show one in the foreground), lets the "user" act on them, and
/// records what the app did (categories, removals, completions run).
public final class FakeNotificationCenter: NotificationCenterPort, Sendable {
    public enum Record: Equatable, Sendable {
        case categoryRegistered(answer: String, decline: String)
        /// A notification arrived in the foreground; whether the app let the system show it.
        case presented(Bool)
        case removed([String])
        /// The completion of the n-th action (from 1) ran.
        case actionCompleted(Int)
    }

    private let continuation: AsyncStream<Record>.Continuation
    public let records: Recorder<Record>
    private let receiver = NIOLockedValueBox<(any NotificationReceiver)?>(nil)
    private let actions = NIOLockedValueBox(0)

    public init() {
        let (stream, continuation) = AsyncStream<Record>.makeStream()
        self.continuation = continuation
        records = Recorder(stream)
    }

    public func setReceiver(_ receiver: any NotificationReceiver) {
        self.receiver.withLockedValue { $0 = receiver }
    }

    public func registerIncomingCallCategory(answerTitle: String, declineTitle: String) {
        continuation.yield(.categoryRegistered(answer: answerTitle, decline: declineTitle))
    }

    public func removeDelivered(identifiers: [String]) {
        continuation.yield(.removed(identifiers))
    }

    /// A push's JSON body arrives while the app is in the foreground.
    public func deliverInForeground(json: Data) {
        guard let payload = (try? JSONSerialization.jsonObject(with: json)) as? [AnyHashable: Any],
            let receiver = receiver.withLockedValue({ $0 })
        else { return }
        continuation.yield(.presented(receiver.shouldPresent(payload: payload)))
    }

    /// The user acts on the notification whose body is `json`.
    public func userActs(_ action: NotificationAction, onNotification json: Data) {
        guard let payload = (try? JSONSerialization.jsonObject(with: json)) as? [AnyHashable: Any],
            let receiver = receiver.withLockedValue({ $0 })
        else { return }
        let number = actions.withLockedValue { count in
            count += 1
            return count
        }
        nonisolated(unsafe) let payloadForReceiver = payload
        receiver.didReceive(action, payload: payloadForReceiver) { [continuation] in
            continuation.yield(.actionCompleted(number))
        }
    }
}
