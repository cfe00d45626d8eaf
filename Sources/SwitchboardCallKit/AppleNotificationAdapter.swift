#if canImport(UserNotifications) && canImport(UIKit)
import Foundation
import Switchboard
import SwitchboardProtocol
import UserNotifications

/// `UNUserNotificationCenter` as a ``NotificationCenterPort``, for ringing without CallKit: it
/// becomes the center's delegate and hands notifications and the user's actions to the
/// ``NotificationRingingCoordinator``, with no decision of its own.
public final class UserNotificationCenterAdapter: NSObject, UNUserNotificationCenterDelegate, NotificationCenterPort,
    @unchecked Sendable
{
    private let center: UNUserNotificationCenter
    // Set once, before the first callback can arrive (the coordinator's init).
    private weak var receiver: (any NotificationReceiver)?

    public init(center: UNUserNotificationCenter = .current()) {
        self.center = center
        super.init()
    }

    public func setReceiver(_ receiver: any NotificationReceiver) {
        self.receiver = receiver
        center.delegate = self
    }

    /// Asks the user to allow alerts and sounds (time-sensitive alerts need the app's
    /// Time Sensitive Notifications capability too).
    public func requestAuthorization() async throws -> Bool {
        try await center.requestAuthorization(options: [.alert, .sound])
    }

    public func registerIncomingCallCategory(answerTitle: String, declineTitle: String) {
        // The app's own categories stay. The category is made in the callback, which runs on
        // another thread: UserNotifications' classes are not Sendable.
        center.getNotificationCategories { [self] existing in
            let category = Self.incomingCallCategory(answerTitle: answerTitle, declineTitle: declineTitle)
            center.setNotificationCategories(existing.filter { $0.identifier != category.identifier }.union([category]))
        }
    }

    private static func incomingCallCategory(answerTitle: String, declineTitle: String) -> UNNotificationCategory {
        let answer = UNNotificationAction(identifier: IncomingCallPush.answerAction, title: answerTitle, options: [.foreground])
        let decline = UNNotificationAction(
            identifier: IncomingCallPush.declineAction, title: declineTitle, options: [.destructive])
        return UNNotificationCategory(
            identifier: IncomingCallPush.alertCategory, actions: [answer, decline], intentIdentifiers: [], options: [])
    }

    public func removeDelivered(identifiers: [String]) {
        center.removeDeliveredNotifications(withIdentifiers: identifiers)
    }

    public func userNotificationCenter(
        _ center: UNUserNotificationCenter, willPresent notification: UNNotification,
        withCompletionHandler completionHandler: @escaping (UNNotificationPresentationOptions) -> Void
    ) {
        let show = receiver?.shouldPresent(payload: notification.request.content.userInfo) ?? true
        completionHandler(show ? [.banner, .list, .sound] : [])
    }

    public func userNotificationCenter(
        _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse,
        withCompletionHandler completionHandler: @escaping () -> Void
    ) {
        nonisolated(unsafe) let completionHandler = completionHandler
        let action: NotificationAction =
            switch response.actionIdentifier {
            case IncomingCallPush.answerAction: .answer
            case IncomingCallPush.declineAction: .decline
            default: .open
            }
        guard let receiver else {
            completionHandler()
            return
        }
        receiver.didReceive(action, payload: response.notification.request.content.userInfo) { completionHandler() }
    }
}
#endif
