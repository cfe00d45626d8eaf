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
///
/// Misses are read in batches: one read is in flight at a time, and the users that other sessions
/// miss meanwhile are read together by the next one (a storm of logins reads the store once per
/// few hundred logins instead of once per login; docs/BENCHMARKS.md).
final class ProfileDirectory: Sendable {
    private typealias Waiter = (
        app: SdkAppID, users: [UserID], continuation: CheckedContinuation<[UserID: UserProfile], any Error>
    )

    private struct Loads {
        var running = false
        /// Bounded by the sessions waiting: each waits for one load at a time.
        var waiting: [Waiter] = []
    }

    /// Most users one read asks for (a statement's parameters are limited).
    static let maxUsersPerRead = 500

    private let store: any ProfileStore
    private struct Cached {
        var profiles: BoundedCache<UserKey, UserProfile>
        /// Counts saves and forgets: a read that saw another count when it began may hold a
        /// profile older than one saved meanwhile, and is not cached.
        var changes: UInt64 = 0
    }

    private let cache: NIOLockedValueBox<Cached>
    private let loads = NIOLockedValueBox(Loads())

    init(store: any ProfileStore, capacity: Int = 200_000) {
        self.store = store
        self.cache = NIOLockedValueBox(Cached(profiles: BoundedCache(capacity: capacity)))
    }

    /// Profiles cached now.
    var cachedCount: Int { cache.withLockedValue { $0.profiles.count } }

    /// The profile cached for `user`, if any.
    func cached(_ user: UserKey) -> UserProfile? { cache.withLockedValue { $0.profiles.value(for: user) } }

    /// Sessions waiting for the next read.
    var waitingCount: Int { loads.withLockedValue { $0.waiting.count } }

    /// The profiles of these users; users without one get a bare profile.
    func profiles(app: SdkAppID, users: [UserID]) async throws -> [UserID: UserProfile] {
        var found: [UserID: UserProfile] = [:]
        let missing = cache.withLockedValue { cache in
            users.filter { user in
                guard let profile = cache.profiles.value(for: UserKey(app: app, user: user)) else { return true }
                found[user] = profile
                return false
            }
        }
        guard !missing.isEmpty else { return found }
        let loaded = try await withCheckedThrowingContinuation { continuation in
            let start = loads.withLockedValue { loads in
                loads.waiting.append((app, missing, continuation))
                defer { loads.running = true }
                return !loads.running
            }
            if start { Task { await self.runLoads() } }
        }
        return found.merging(loaded) { a, _ in a }
    }

    /// Reads what the waiting sessions missed, batch after batch, until nobody waits.
    private func runLoads() async {
        while true {
            let waiters = loads.withLockedValue { loads -> [Waiter] in
                if loads.waiting.isEmpty { loads.running = false }
                defer { loads.waiting = [] }
                return loads.waiting
            }
            guard !waiters.isEmpty else { return }
            for (app, group) in Dictionary(grouping: waiters, by: \.app) {
                do {
                    let fresh = try await load(app: app, users: Array(Set(group.flatMap(\.users))))
                    for waiter in group {
                        let own = waiter.users.compactMap { user in fresh[user].map { (user, $0) } }
                        waiter.continuation.resume(returning: Dictionary(own, uniquingKeysWith: { a, _ in a }))
                    }
                } catch {
                    for waiter in group { waiter.continuation.resume(throwing: error) }
                }
            }
        }
    }

    /// Reads the users' profiles (bare ones for those without) and caches them, unless a profile
    /// was saved or forgotten while they were read.
    private func load(app: SdkAppID, users: [UserID]) async throws -> [UserID: UserProfile] {
        let changes = cache.withLockedValue { $0.changes }
        var fresh = Dictionary(users.map { ($0, UserProfile(userId: $0)) }, uniquingKeysWith: { a, _ in a })
        for start in stride(from: 0, to: users.count, by: Self.maxUsersPerRead) {
            let chunk = Array(users[start..<min(start + Self.maxUsersPerRead, users.count)])
            for profile in try await store.loadProfiles(app: app, users: chunk) { fresh[profile.userId] = profile }
        }
        cache.withLockedValue { cache in
            guard cache.changes == changes else { return }
            for (user, profile) in fresh { cache.profiles.insert(profile, for: UserKey(app: app, user: user)) }
        }
        return fresh
    }

    /// Forgets a cached profile (another node of the cluster changed it).
    func forget(_ user: UserKey) {
        cache.withLockedValue { cache in
            cache.profiles.remove(user)
            cache.changes &+= 1
        }
    }

    /// Forgets every cached profile (this node may have missed other nodes' changes).
    func forgetAll() {
        cache.withLockedValue { cache in
            cache.profiles.removeAll()
            cache.changes &+= 1
        }
    }

    func save(app: SdkAppID, _ profile: UserProfile, now: Int64) async throws {
        try await store.saveProfile(app: app, profile, now: now)
        cache.withLockedValue { cache in
            cache.profiles.insert(profile, for: UserKey(app: app, user: profile.userId))
            cache.changes &+= 1
        }
    }
}
