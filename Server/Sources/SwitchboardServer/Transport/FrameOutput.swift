/// Where a connection's outgoing text frames go, and its outgoing budget, as a value: out; held
/// back until a login answer goes first (``hold()``), at most the budget's frames; or nowhere, once
/// the connection is closing (nothing more is written then). ``WebSocketConnectionHandler`` asks it
/// before each write and performs its answer.
///
/// A peer that does not read is closed: the bytes waiting for its socket over
/// ``budgetBytes``, or more than ``budgetFrames`` frames sent since the socket stopped taking more
/// (``ConnectionLimits/outgoingBudgetBytes`` and `Frames`). Frames held while nobody answers the
/// login count against the same frame budget.
struct FrameOutput: Equatable {
    enum Phase: Equatable {
        case open
        case holding([String])
        case closed
    }

    /// What to do with a frame.
    enum Decision: Equatable {
        case write
        /// Kept until ``release()``.
        case held
        /// The connection is closing: dropped.
        case drop
        /// Over the budget: close the connection now (its socket takes nothing, so a close frame
        /// would wait behind the rest).
        case close
    }

    private(set) var phase = Phase.open
    /// Frames written since the socket stopped taking more.
    private(set) var framesWhileUnwritable = 0
    let budgetBytes: Int
    let budgetFrames: Int

    init(budgetBytes: Int, budgetFrames: Int) {
        self.budgetBytes = budgetBytes
        self.budgetFrames = budgetFrames
    }

    var isClosed: Bool { phase == .closed }

    /// From now on frames are held (an open output only).
    mutating func hold() {
        if phase == .open { phase = .holding([]) }
    }

    /// Stops holding: the frames held, to write in order after the login answer (none if the
    /// output was not holding).
    mutating func release() -> [String] {
        guard case .holding(let waiting) = phase else { return [] }
        phase = .open
        return waiting
    }

    /// A frame to send while the socket is (or is not) `writable`.
    mutating func send(_ text: String, writable: Bool) -> Decision {
        switch phase {
        case .closed:
            return .drop
        case .holding(var waiting):
            // Out of the value while it grows, so that appending does not copy it.
            phase = .open
            waiting.append(text)
            guard waiting.count <= budgetFrames else {
                // Nobody answers the login in time and frames pile up: as for a peer that does not read.
                phase = .closed
                return .close
            }
            phase = .holding(waiting)
            return .held
        case .open:
            if !writable { framesWhileUnwritable += 1 }
            return .write
        }
    }

    /// A frame was written and `buffered` bytes wait for the socket: whether the peer is over
    /// budget (the output is then closed).
    mutating func wrote(buffered: Int) -> Bool {
        guard buffered > budgetBytes || framesWhileUnwritable > budgetFrames else { return false }
        phase = .closed
        return true
    }

    mutating func writabilityChanged(writable: Bool) {
        if writable { framesWhileUnwritable = 0 }
    }

    /// The connection is closing: whether it was open until now.
    mutating func close() -> Bool {
        defer { phase = .closed }
        return phase != .closed
    }
}
