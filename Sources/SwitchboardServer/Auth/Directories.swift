import Foundation
import NIOConcurrencyHelpers
import SwitchboardProtocol

/// The apps this node serves, read at start.
final class AppDirectory: Sendable {
    private let apps: NIOLockedValueBox<[SdkAppID: AppRecord]>

    init(_ apps: [AppRecord]) {
        self.apps = NIOLockedValueBox(Dictionary(uniqueKeysWithValues: apps.map { ($0.sdkAppID, $0) }))
    }

    func app(_ id: SdkAppID) -> AppRecord? { apps.withLockedValue { $0[id] } }

    func update(_ app: AppRecord) { apps.withLockedValue { $0[app.sdkAppID] = app } }

    /// Everything as the database has it now (another node of the cluster changed it).
    func replace(_ loaded: [AppRecord]) {
        apps.withLockedValue { $0 = Dictionary(loaded.map { ($0.sdkAppID, $0) }, uniquingKeysWith: { _, new in new }) }
    }

    var all: [AppRecord] { apps.withLockedValue { $0.values.sorted { $0.sdkAppID < $1.sdkAppID } } }
}

/// Users' profiles, cached in memory in front of the store (a missing profile is cached too), at
/// most ``capacity`` of them (``BoundedCache``).
final class ProfileDirectory: Sendable {
    private let store: any ProfileStore
    private let cache: NIOLockedValueBox<BoundedCache<UserKey, UserProfile>>

    init(store: any ProfileStore, capacity: Int = 200_000) {
        self.store = store
        self.cache = NIOLockedValueBox(BoundedCache(capacity: capacity))
    }

    /// Profiles cached now.
    var cachedCount: Int { cache.withLockedValue { $0.count } }

    /// The profiles of these users; users without one get a bare profile.
    func profiles(app: SdkAppID, users: [UserID]) async throws -> [UserID: UserProfile] {
        var found: [UserID: UserProfile] = [:]
        let missing = cache.withLockedValue { cache in
            users.filter { user in
                guard let profile = cache.value(for: UserKey(app: app, user: user)) else { return true }
                found[user] = profile
                return false
            }
        }
        guard !missing.isEmpty else { return found }
        let loaded = try await store.loadProfiles(app: app, users: missing)
        var fresh = Dictionary(missing.map { ($0, UserProfile(userId: $0)) }, uniquingKeysWith: { a, _ in a })
        for profile in loaded { fresh[profile.userId] = profile }
        cache.withLockedValue { cache in
            for (user, profile) in fresh { cache.insert(profile, for: UserKey(app: app, user: user)) }
        }
        return found.merging(fresh) { a, _ in a }
    }

    /// Forgets a cached profile (another node of the cluster changed it).
    func forget(_ user: UserKey) {
        cache.withLockedValue { $0.remove(user) }
    }

    func save(app: SdkAppID, _ profile: UserProfile, now: Int64) async throws {
        try await store.saveProfile(app: app, profile, now: now)
        cache.withLockedValue { $0.insert(profile, for: UserKey(app: app, user: profile.userId)) }
    }
}
