import NIOConcurrencyHelpers

/// Counts the node's connections as they are accepted, log in and close, and turns away those
/// that would break a bound (``ConnectionLimits``): too many in all (the file descriptors kept in
/// reserve stay free), too many not logged in from one address. Past the bound on connections
/// not logged in from all addresses, the oldest of them is closed to make room: a flood cannot
/// keep newcomers out, and logged-in users keep their connections whatever happens.
final class ConnectionGate: Sendable {
    enum Admission: Equatable {
        case admitted
        /// Too many connections in all.
        case full
        /// Too many connections not logged in from this address.
        case addressFull
    }

    private struct Pending {
        var address: String
        var close: @Sendable () -> Void
    }

    private struct State {
        var total = 0
        var pending: [UInt64: Pending] = [:]
        var pendingByAddress: [String: Int] = [:]
        /// Pending connection ids in the order they came (some may be gone: skipped).
        var order: [UInt64] = []
        var orderHead = 0
    }

    let maxConnections: Int
    let maxPending: Int
    let maxPendingPerAddress: Int
    private let state = NIOLockedValueBox(State())

    init(limits: ConnectionLimits) {
        maxConnections = limits.effectiveMaxConnections
        maxPending = limits.effectiveMaxPending
        maxPendingPerAddress = limits.maxPendingPerAddress
    }

    /// A connection was accepted. When admitted it counts as pending until ``loggedIn(_:)``, and
    /// `close` may be called to make room for a newer one; ``closed(_:)`` must follow either way.
    func admit(_ id: UInt64, address: String, close: @escaping @Sendable () -> Void) -> Admission {
        let (admission, evicted) = state.withLockedValue { state -> (Admission, (@Sendable () -> Void)?) in
            guard state.total < maxConnections else { return (.full, nil) }
            guard state.pendingByAddress[address, default: 0] < maxPendingPerAddress else { return (.addressFull, nil) }
            var evicted: (@Sendable () -> Void)?
            if state.pending.count >= maxPending {
                evicted = evictOldest(&state)
            }
            state.total += 1
            state.pending[id] = Pending(address: address, close: close)
            state.pendingByAddress[address, default: 0] += 1
            state.order.append(id)
            return (.admitted, evicted)
        }
        evicted?()
        return admission
    }

    /// The connection logged in: it no longer counts as pending.
    func loggedIn(_ id: UInt64) {
        state.withLockedValue { state in removePending(&state, id) }
    }

    /// The connection closed.
    func closed(_ id: UInt64) {
        state.withLockedValue { state in
            removePending(&state, id)
            state.total -= 1
        }
    }

    /// Connections open and, of them, not logged in.
    var counts: (total: Int, pending: Int) {
        state.withLockedValue { ($0.total, $0.pending.count) }
    }

    private func evictOldest(_ state: inout State) -> (@Sendable () -> Void)? {
        while state.orderHead < state.order.count {
            let id = state.order[state.orderHead]
            state.orderHead += 1
            if let pending = state.pending[id] {
                removePending(&state, id)
                return pending.close
            }
        }
        return nil
    }

    private func removePending(_ state: inout State, _ id: UInt64) {
        guard let pending = state.pending.removeValue(forKey: id) else { return }
        let left = state.pendingByAddress[pending.address, default: 1] - 1
        state.pendingByAddress[pending.address] = left > 0 ? left : nil
        // The queue of ids is trimmed once most of it is stale.
        if state.orderHead > 1024 && state.orderHead * 2 > state.order.count {
            state.order.removeFirst(state.orderHead)
            state.orderHead = 0
        }
        if state.order.count - state.orderHead > 2 * state.pending.count + 1024 {
            state.order = state.order[state.orderHead...].filter { state.pending[$0] != nil }
            state.orderHead = 0
        }
    }
}
