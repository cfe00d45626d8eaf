import SwitchboardProtocol

extension SwitchboardError {
    /// A failure that may pass: the connection (dropped, timed out, not there yet), a rate limit,
    /// or the server's storage or restart. Worth the same request again a little later.
    public var isTransient: Bool {
        switch code {
        case .connectionFailed, .requestTimedOut, .notConnected, .connectionLost, .rateLimited, .storageUnavailable,
            .internalError, .shuttingDown:
            true
        default:
            false
        }
    }
}

/// How the SDK tries again a request that must not be lost to a passing failure (ending a call,
/// a push token): a few attempts, waiting longer each time (or as long as a rate limit says), on
/// the client's clock.
public struct RetryPolicy: Sendable {
    /// Tries in all, the first included.
    public var attempts: Int
    /// The wait before the second try; each next one waits twice as long.
    public var firstDelay: Duration

    public init(attempts: Int = 4, firstDelay: Duration = .seconds(1)) {
        self.attempts = attempts
        self.firstDelay = firstDelay
    }

    /// Runs `body` until it succeeds, fails for good (not ``SwitchboardError/isTransient``), or the
    /// attempts run out; throws the last error.
    public func run<T: Sendable>(
        clock: any SwitchboardClock, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        var delay = firstDelay.milliseconds
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch let error as SwitchboardError where error.isTransient && attempt < attempts {
                let wait = max(delay, error.retryAfter ?? 0)
                try await clock.sleep(until: clock.now().clampedAdding(wait))
                delay = delay.clampedAdding(delay)
                attempt += 1
            }
        }
    }
}
