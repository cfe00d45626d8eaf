import Foundation
import NIOConcurrencyHelpers
import NIOCore

/// Hands one connection's messages to its ``SignalingSession`` one at a time, in order, and then
/// its disconnection. A task runs only while there is something to handle (no task waits on an
/// idle connection); it prefers the connection's event loop, so a request is read, handled and
/// answered on the thread that owns the socket.
///
/// Bounded: past ``pauseAt`` waiting messages the socket is no longer read (TCP pushes back on
/// the peer), and reading resumes once the session has caught up to ``resumeAt``.
final class SessionRunner: MessageReceiver {
    private enum Input {
        case message(Data)
        case disconnected
    }

    private struct State {
        var inputs: [Input] = []
        var head = 0
        var running = false
        var paused = false
    }

    static let pauseAt = 64
    static let resumeAt = 16

    private let session: SignalingSession
    private let channel: any Channel
    private let executor: EventLoopTaskExecutor
    private let state = NIOLockedValueBox(State())

    /// - Parameter executor: the executor of `channel`'s event loop, shared by its connections.
    init(session: SignalingSession, channel: any Channel, executor: EventLoopTaskExecutor) {
        precondition(executor.eventLoop === channel.eventLoop, "a session runs on its connection's loop")
        self.session = session
        self.channel = channel
        self.executor = executor
    }

    /// A logged-in session is ended by the server at shutdown, with `sessionEnded`; the
    /// connection closes any other at once.
    var endsItselfAtShutdown: Bool { session.connection.isLoggedIn }

    func received(_ message: Data) { push(.message(message)) }

    func disconnected() { push(.disconnected) }

    private func push(_ input: Input) {
        let (start, pause) = state.withLockedValue { state -> (Bool, Bool) in
            state.inputs.append(input)
            let pause = !state.paused && state.inputs.count - state.head >= Self.pauseAt
            if pause { state.paused = true }
            defer { state.running = true }
            return (!state.running, pause)
        }
        if pause { channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in } }
        if start {
            Task(executorPreference: executor) { await self.run() }
        }
    }

    private func run() async {
        while let input = next() {
            switch input {
            case .message(let data): await session.receive(data)
            case .disconnected: await session.disconnected()
            }
        }
    }

    /// The next input, or nil (and not running) when there is none.
    private func next() -> Input? {
        let (input, resume) = state.withLockedValue { state -> (Input?, Bool) in
            guard state.head < state.inputs.count else {
                state.inputs = []
                state.head = 0
                state.running = false
                return (nil, false)
            }
            let input = state.inputs[state.head]
            state.head += 1
            if state.head > 64 && state.head * 2 > state.inputs.count {
                state.inputs.removeFirst(state.head)
                state.head = 0
            }
            let resume = state.paused && state.inputs.count - state.head <= Self.resumeAt
            if resume { state.paused = false }
            return (input, resume)
        }
        if resume { channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in } }
        return input
    }
}
