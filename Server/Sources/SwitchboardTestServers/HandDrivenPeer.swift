import Foundation
import Switchboard
import SwitchboardProtocol
import SwitchboardTools
import Synchronization

/// A member that drives its side of the media negotiation by hand, as an outside client or a
/// hostile probe does: a raw protocol connection as "aaron" (who sorts before every other test
/// user, so he is the offerer of each pair), whose descriptions come from a ``PeerMediaEngine``
/// of his own that no SDK drives. Candidates go both ways by themselves; offers, answers and
/// restarts go when the test says.
public final class HandDrivenPeer: Sendable {
    public static let id: UserID = "aaron"
    public let raw: RawClient
    public let engine: any PeerMediaEngine
    public let callId: CallID
    private let requests = Atomic(0)
    private let pump: Task<Void, Never>
    /// Local candidates gathered before aaron's first description to that peer went out: they
    /// follow it, as a WebRTC client trickles them (a candidate before any description is refused).
    private let held = Mutex<[UserID: [IceCandidate]]>([:])

    public struct Refused: Error, CustomStringConvertible {
        public var description: String
    }

    /// Logs in as aaron and calls `callees` (audio); `engine` carries aaron's side.
    public init(_ server: TestServer, calling callees: [UserID], engine: any PeerMediaEngine) async throws {
        raw = try await RawClient(url: server.url)
        self.engine = engine
        _ = try await raw.request(
            LoginRequest(sdkAppID: server.app.sdkAppID, userID: Self.id, userSig: server.userSig(Self.id.rawValue)),
            id: "login")
        let started = try await raw.request(StartCallRequest(participantIds: callees, mediaType: .audio), id: "start")
        guard let result = started["result"] as? [String: Any], let callId = result["callId"] as? String else {
            throw Refused(description: "call.start was refused: \(started)")
        }
        self.callId = CallID(rawValue: callId)
        engine.callConnected(callId: self.callId, roomId: "aaron-room", mediaType: .audio)
        engine.startAudio()
        engine.setMicrophone(on: true)
        // The peers' candidates go to aaron's engine as they come.
        let (raw, call) = (raw, self.callId)
        pump = Task {
            var position = 0
            while !Task.isCancelled, !raw.frames.isFinished {
                guard let frame = try? await raw.frames.first(from: position, timeout: .seconds(60), where: { _ in true })
                else { continue }
                position += 1
                guard case .mediaSignal(let signal)? = Self.event(frame), signal.callId == call, signal.kind == .candidate,
                    let candidate = signal.candidate
                else { continue }
                try? await engine.addRemoteCandidate(candidate, peer: signal.from)
            }
        }
    }

    deinit { pump.cancel() }

    static func event(_ frame: String) -> ServerEvent? {
        try? SwitchboardJSON.decode(ServerEvent.self, from: Data(frame.utf8))
    }

    private func nextRequestID() -> RequestID {
        RequestID(rawValue: "h\(requests.add(1, ordering: .relaxed).newValue)")
    }

    private func trickle(_ candidate: IceCandidate, to peer: UserID) {
        let request = SendMediaSignalRequest(callId: callId, to: peer, kind: .candidate, candidate: candidate)
        raw.send((try? SwitchboardJSON.encodeString(RequestEnvelope(id: nextRequestID(), data: request))) ?? "")
    }

    /// Opens aaron's connection to `peer`; his local candidates go to `peer` through the server,
    /// after his first description.
    public func open(_ peer: UserID) {
        held.withLock { $0[peer] = [] }
        engine.openPeer(
            peer, iceServers: [],
            events: PeerConnectionEvents(
                localCandidate: { [self] candidate in
                    let hold = held.withLock { held -> Bool in
                        guard held[peer] != nil else { return false }
                        held[peer]?.append(candidate)
                        return true
                    }
                    if !hold { trickle(candidate, to: peer) }
                },
                negotiationNeeded: {}, iceFailed: {}, iceConnected: {}))
    }

    /// Sends a signal to `peer`; throws if the server refuses it.
    public func send(_ request: SendMediaSignalRequest) async throws {
        let response = try await raw.request(request, id: nextRequestID().rawValue)
        guard response["result"] != nil else { throw Refused(description: "aaron's \(request.kind) was refused: \(response)") }
    }

    /// A new offer from aaron's engine to `peer`.
    public func offer(to peer: UserID) async throws {
        let offer = try await engine.setLocalDescription(peer: peer, iceRestart: false)
        guard offer.kind == .offer else { throw Refused(description: "aaron's engine made an \(offer.kind), not an offer") }
        try await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .offer, sdp: offer.sdp))
        for candidate in held.withLock({ $0.removeValue(forKey: peer) ?? [] }) { trickle(candidate, to: peer) }
    }

    /// Asks `peer` to restart ICE.
    public func restart(_ peer: UserID) async throws {
        try await send(SendMediaSignalRequest(callId: callId, to: peer, kind: .restart))
    }

    /// How many frames aaron has received so far: where a wait for what comes next starts.
    public var position: Int { raw.frames.values.count }

    /// The first signal of `kind` from `peer` received at or after `position`.
    @discardableResult
    public func next(_ kind: MediaSignalKind, from peer: UserID, after position: Int) async throws -> MediaSignalEvent {
        let callId = self.callId
        let frame = try await raw.frames.first(from: position, timeout: .seconds(30)) { frame in
            guard case .mediaSignal(let signal)? = Self.event(frame) else { return false }
            return signal.callId == callId && signal.from == peer && signal.kind == kind
        }
        guard case .mediaSignal(let signal)? = Self.event(frame) else { throw Refused(description: "not a signal: \(frame)") }
        return signal
    }

    /// Applies `peer`'s answer to aaron's engine.
    public func apply(_ answer: MediaSignalEvent) async throws {
        guard let sdp = answer.sdp else { throw Refused(description: "an answer without SDP") }
        try await engine.setRemoteDescription(SessionDescription(kind: .answer, sdp: sdp), peer: answer.from)
    }

    /// aaron's media ends and he disconnects.
    public func close() async {
        engine.callEnded(callId: callId)
        _ = await engine.statistics()
        raw.close()
    }
}

/// What an outside probe did to the polite side of a connection, each of which once froze the
/// Swift client with the GStreamer engine (issue 28).
public enum HostileNegotiation: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A valid offer, then a `restart` while the polite side's own offer is unanswered.
    case restartWhileOwnOfferIsOpen
    /// A second offer crossing the polite side's own.
    case offerCrossingOwnOffer
    /// Two `restart` requests, the second while the offer the first caused is unanswered.
    case twoRestarts

    public var description: String { rawValue }
}
