import Foundation

/// Whether the app rings through CallKit, or (where CallKit may not be used) with time-sensitive
/// alert notifications that carry answer and decline actions (``NotificationRingingCoordinator``).
///
/// Apps offered in the China storefront must not use CallKit (Apple's guideline since 2020), so an
/// app sold worldwide decides by region, as Stream's SDK does with its region policy:
/// `CallKitPolicy.off(inRegions: ["CN"])`. Without CallKit there are no VoIP pushes either (iOS
/// requires every VoIP push to be reported to CallKit), so such a device registers its alert
/// token with `alertRinging` and the server rings it with alert pushes.
public struct CallKitPolicy: Equatable, Sendable {
    private enum Rule: Equatable, Sendable {
        case always
        case never
        case offIn(Set<String>)
    }

    private let rule: Rule

    /// CallKit everywhere (the default).
    public static let always = CallKitPolicy(rule: .always)
    /// Never CallKit: ring with notifications everywhere.
    public static let never = CallKitPolicy(rule: .never)

    /// CallKit except in these regions (ISO 3166 codes such as `CN`, compared without case).
    public static func off(inRegions regions: Set<String>) -> CallKitPolicy {
        CallKitPolicy(rule: .offIn(Set(regions.map { $0.uppercased() })))
    }

    /// Whether a device in `region` (`Locale.current.region?.identifier`; nil when unknown) uses
    /// CallKit. An unknown region uses CallKit unless the policy is ``never``.
    public func usesCallKit(region: String?) -> Bool {
        switch rule {
        case .always: true
        case .never: false
        case .offIn(let regions): region.map { !regions.contains($0.uppercased()) } ?? true
        }
    }
}
