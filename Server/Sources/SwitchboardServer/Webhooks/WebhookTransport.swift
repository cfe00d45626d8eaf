import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SwitchboardProtocol

/// What one attempt to deliver an event came to.
enum WebhookAttempt: Equatable, Sendable {
    /// The receiver answered 2xx.
    case delivered(status: Int)
    /// The receiver answered something else; `retryAfter` (ms) if it said when to come back.
    case refused(status: Int, retryAfter: Int64?)
    /// The receiver answered 410 Gone: it wants no more (the endpoint is paused).
    case gone
    /// No answer: the address is not allowed, the connection failed, or the timeout passed.
    case failed(String)
}

/// Sends one delivery: how the dispatcher reaches receivers (the tests of the dispatcher's rules
/// plug in a stand-in).
protocol WebhookSender: Sendable {
    func send(url: String, headers: [(String, String)], body: Data, timeout: Duration) async -> WebhookAttempt
    func shutdown() async
}

/// Posts deliveries with AsyncHTTPClient, to addresses the ``WebhookAddressPolicy`` checked.
///
/// Each host is resolved and checked before a connection is made, and the connection goes to the
/// checked address (AsyncHTTPClient's `dnsOverride`, which keeps the host name for TLS): one client
/// per host and address, made when first needed and closed when unused for ten minutes. Redirects
/// are not followed (Standard Webhooks: a 3xx is a failure), and only the first 4 KiB of an
/// answer's body are read. The timeout runs on the server's clock.
actor WebhookTransport: WebhookSender {
    private struct Pinned {
        var client: HTTPClient
        var lastUsed: Int64
        var inFlight = 0
    }

    private struct Resolution {
        var target: WebhookAddressPolicy.Target
        var at: Int64
    }

    private let policy: WebhookAddressPolicy
    private let clock: any SwitchboardClock
    private var clients: [String: Pinned] = [:]
    private var resolutions: [String: Resolution] = [:]
    /// How long a host's checked address is used before it is resolved again.
    private let resolutionLifetime: Int64 = 60_000
    private let idleClientLifetime: Int64 = 600_000

    init(policy: WebhookAddressPolicy, clock: any SwitchboardClock) {
        self.policy = policy
        self.clock = clock
    }

    func send(url: String, headers: [(String, String)], body: Data, timeout: Duration) async -> WebhookAttempt {
        let now = clock.now()
        closeIdleClients(now: now)
        guard let host = URLComponents(string: url)?.host else { return .failed("invalid URL") }
        let target: WebhookAddressPolicy.Target
        if let known = resolutions[host], now - known.at < resolutionLifetime {
            target = known.target
        } else {
            switch await policy.check(url) {
            case .failure(let error): return .failed(error.message)
            case .success(let checked):
                target = checked
                resolutions[host] = Resolution(target: checked, at: now)
            }
        }
        let key = target.host + "|" + target.address
        if clients[key] == nil {
            var configuration = HTTPClient.Configuration(
                redirectConfiguration: .disallow,
                timeout: .init(connect: .milliseconds(timeout.milliseconds), read: .milliseconds(timeout.milliseconds)))
            configuration.decompression = .disabled
            if !target.isLiteral { configuration.dnsOverride = [target.host: target.address] }
            clients[key] = Pinned(client: HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration), lastUsed: now)
        }
        clients[key]?.inFlight += 1
        clients[key]?.lastUsed = now
        let client = clients[key]!.client
        defer { clients[key]?.inFlight -= 1 }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: "user-agent", value: "Switchboard-Webhooks/1")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let attempt = await Self.post(request, client: client, timeout: timeout, clock: clock)
        if case .failed = attempt { resolutions[host] = nil }
        return attempt
    }

    /// The request, or the timeout on `clock`, whichever comes first (the request is cancelled then).
    private static func post(
        _ request: HTTPClientRequest, client: HTTPClient, timeout: Duration, clock: any SwitchboardClock
    ) async -> WebhookAttempt {
        await withTaskGroup(of: WebhookAttempt?.self) { group in
            group.addTask {
                do {
                    // AsyncHTTPClient's own deadline only backs up the clock's.
                    let response = try await client.execute(request, timeout: .milliseconds(timeout.milliseconds * 2 + 1000))
                    let status = Int(response.status.code)
                    _ = try? await response.body.collect(upTo: 4096)
                    if (200..<300).contains(status) { return .delivered(status: status) }
                    if status == 410 { return .gone }
                    let retryAfter = response.headers.first(name: "retry-after").flatMap { Int64($0) }.map { $0 * 1000 }
                    return .refused(status: status, retryAfter: retryAfter)
                } catch {
                    if Task.isCancelled { return nil }
                    return .failed(Self.describe(error))
                }
            }
            group.addTask {
                try? await clock.sleep(for: timeout)
                return Task.isCancelled ? nil : .failed("timed out after \(timeout.milliseconds) ms")
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failed("cancelled")
        }
    }

    /// A short reason without the receiver's words.
    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)".prefix(120).description }
        return String(describing: type(of: error)) + ": " + "\(error)".prefix(100)
    }

    /// Closes clients unused for ``idleClientLifetime`` and forgets resolutions past their
    /// lifetime: both maps hold only the hosts of endpoints in use (an endpoint whose URL changed
    /// leaves nothing behind).
    private func closeIdleClients(now: Int64) {
        resolutions = resolutions.filter { now - $0.value.at < resolutionLifetime }
        for (key, pinned) in clients where pinned.inFlight == 0 && now - pinned.lastUsed > idleClientLifetime {
            clients[key] = nil
            let client = pinned.client
            Task { try? await client.shutdown() }
        }
    }

    func shutdown() async {
        let all = clients.values.map(\.client)
        clients = [:]
        for client in all { try? await client.shutdown() }
    }
}
