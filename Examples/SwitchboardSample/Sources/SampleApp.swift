import Switchboard
import SwitchboardCallKit
import SwitchboardUI
import SwitchboardWebRTC
import SwiftUI
import UIKit

/// Switchboard's sample app: log in with a UserSig from a development server, call someone,
/// answer through CallKit (also from the lock screen, woken by a VoIP push), see your records.
@main
@MainActor
struct SampleApp: App {
    @UIApplicationDelegateAdaptor(AppDelegate.self) private var delegate

    var body: some Scene {
        WindowGroup {
            RootView(session: delegate.session)
                .overlay(CallScreenView(model: delegate.session.calls))
        }
    }
}

/// Makes everything at launch, before PushKit can deliver a push (docs/IOS.md, section 2).
final class AppDelegate: NSObject, UIApplicationDelegate {
    let session = SampleSession()

    func application(
        _ application: UIApplication, didFinishLaunchingWithOptions options: [UIApplication.LaunchOptionsKey: Any]?
    ) -> Bool {
        session.start()
        // Missed-call alerts come to the remote-notification token.
        application.registerForRemoteNotifications()
        return true
    }

    func application(_ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken token: Data) {
        session.coordinator?.alertTokenUpdated(token)
    }
}
