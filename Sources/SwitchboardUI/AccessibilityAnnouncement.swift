#if canImport(SwiftUI) && canImport(UIKit)
// UIKit's accessibility notifications are C globals that the iOS 16 SDK does not declare
// constant, so Swift 6 sees shared mutable state in `.announcement`; UIKit sets them once and
// they are only read. The import says so for this one file.
@preconcurrency import UIKit

/// Has VoiceOver say `text` now (between what it is reading), as a change on screen would not.
@MainActor
func announceForAccessibility(_ text: String) {
    UIAccessibility.post(notification: .announcement, argument: text)
}
#endif
