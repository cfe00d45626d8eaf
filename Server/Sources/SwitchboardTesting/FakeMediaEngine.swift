import NIOConcurrencyHelpers
import Switchboard
import SwitchboardProtocol
import SwitchboardTools

/// A media engine for tests: it records what the SDK asks of it, in order, and plays WebRTC's
/// peer-connection rules with readable SDP ("offer alice→bob #1 ice=alice-1"), so negotiation
/// through a real server can be followed and checked. A connection counts as connected once both
/// descriptions are applied and a candidate of the peer's current ICE credentials arrived. Its
/// statistics are what the test sets (``statisticsToReport``); each read is recorded.
public final class FakeMediaEngine: SFUMediaEngine {
    public enum Call: Equatable, Sendable {
        case callConnected(CallID, CallMediaType)
        case callEnded(CallID)
        case startAudio
        case stopAudio
        case microphone(on: Bool)
        case camera(on: Bool, front: Bool)
        case microphoneVolume(Int)
        case videoQuality(VideoQuality)
        case audioOutput(AudioOutput)
        case screenShare(ScreenShareSource?)
        case mediaTypeChanged(CallID, CallMediaType)
        /// The SDK read the statistics (once a second while connected).
        case statisticsRead
        case opened(UserID, iceServers: [IceServer])
        case closed(UserID)
        case local(UserID, SessionDescription)
        case remote(UserID, SessionDescription)
        /// An offer arrived while this side's own offer was open: the own one was rolled back.
        case rolledBack(UserID)
        case remoteCandidate(UserID, IceCandidate)
        /// Media flows with `peer` using these ICE credentials (local, remote).
        case connected(UserID, local: String, remote: String)
        /// A connection with the SFU opened, closed, got a description or a candidate.
        case sfuOpened(SFUConnection)
        case sfuClosed(SFUConnection)
        case sfuLocal(SFUConnection, SessionDescription)
        case sfuRemote(SFUConnection, SessionDescription)
        case sfuCandidate(SFUConnection, IceCandidate)
        /// What the subscribe connection's sections carry, before the offer that has them.
        case sfuTracks([SFUTrack])
    }

    public struct FakePeerError: Error, CustomStringConvertible {
        public var description: String
    }

    private struct Connection {
        var events: PeerConnectionEvents
        var state = PeerSignalingState.stable
        var version = 0
        var iceGeneration = 1
        var localOffer: String?
        var localUfrag: String?
        var remoteUfrag: String?
        /// The remote ICE credentials the last answer was for: an offer with new ones restarts ICE here too.
        var answeredRemoteUfrag: String?
        var remoteCandidateUfrags: Set<String> = []
        /// An own offer was rolled back: once stable again, the connection still needs negotiation.
        var negotiationPending = false
        var connectedWith: (String, String)?
    }

    private let name: String
    /// The publish offer's SDP (a browser-like one when the test talks to a real SFU).
    private let publishSDP: String?
    private let sfu = NIOLockedValueBox<[SFUConnection: (events: PeerConnectionEvents, state: PeerSignalingState)]>([:])
    private let continuation: AsyncStream<Call>.Continuation
    private let connections = NIOLockedValueBox<[UserID: Connection]>([:])
    /// Members no connection reaches (``cutPath(to:)``).
    private let cut = NIOLockedValueBox<Set<UserID>>([])
    private let statistics = NIOLockedValueBox(MediaStatistics())
    /// While held, the connection steps the SDK awaits wait here (a slow engine).
    private let held = NIOLockedValueBox<[CheckedContinuation<Void, Never>]?>(nil)
    /// Everything asked so far.
    public let calls: Recorder<Call>

    /// A publish offer a real SFU takes (Janus checks its ICE credentials, fingerprint and codecs):
    /// the microphone and the camera (and a screen in a stream of its own), `sendonly`, as a
    /// browser offers them; no media follows.
    public static func browserLikePublishOffer(screen: Bool = false) -> String {
        let fingerprint = "sha-256 " + Array(repeating: "AB", count: 32).joined(separator: ":")
        func section(_ kind: String, _ mid: String, _ payload: Int, _ codec: String, _ msid: String, _ ssrc: Int) -> [String] {
            [
                "m=\(kind) 9 UDP/TLS/RTP/SAVPF \(payload)", "c=IN IP4 0.0.0.0", "a=rtcp:9 IN IP4 0.0.0.0",
                "a=ice-ufrag:abcd", "a=ice-pwd:abcdefghijklmnopqrstuvwx", "a=ice-options:trickle",
                "a=fingerprint:\(fingerprint)", "a=setup:actpass", "a=mid:\(mid)", "a=sendonly", "a=msid:\(msid)",
                "a=rtcp-mux", "a=rtpmap:\(payload) \(codec)", "a=ssrc:\(ssrc) cname:test",
            ]
        }
        var lines = [
            "v=0", "o=- 4611731400430051336 2 IN IP4 127.0.0.1", "s=-", "t=0 0",
            "a=group:BUNDLE 0 1" + (screen ? " 2" : ""), "a=msid-semantic: WMS local",
        ]
        lines += section("audio", "0", 111, "opus/48000/2", "local microphone", 1001)
        lines += section("video", "1", 96, "VP8/90000", "local camera", 2001)
        if screen { lines += section("video", "2", 96, "VP8/90000", "shared screen", 3001) }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// Whether `call` is the SFU's answer to the publish offer (Janus receives what the member sends).
    public static func isPublishAnswer(_ call: Call) -> Bool {
        if case .sfuRemote(.publish, let description) = call {
            description.kind == .answer && description.sdp.contains("a=recvonly")
        } else {
            false
        }
    }

    /// `name` goes into the fake SDP (the user's id reads best).
    public init(name: String = "me", publishSDP: String? = nil) {
        self.name = name
        self.publishSDP = publishSDP
        let (stream, continuation) = AsyncStream<Call>.makeStream()
        self.continuation = continuation
        self.calls = Recorder(stream)
    }

    // MARK: - MediaEngine

    public func callConnected(callId: CallID, roomId: RoomID, mediaType: CallMediaType) {
        continuation.yield(.callConnected(callId, mediaType))
    }

    public func callEnded(callId: CallID) { continuation.yield(.callEnded(callId)) }
    public func startAudio() { continuation.yield(.startAudio) }
    public func stopAudio() { continuation.yield(.stopAudio) }
    public func setMicrophone(on: Bool) { continuation.yield(.microphone(on: on)) }
    public func setCamera(on: Bool, front: Bool) { continuation.yield(.camera(on: on, front: front)) }
    public func setMicrophoneVolume(_ volume: Int) { continuation.yield(.microphoneVolume(volume)) }
    public func setVideoQuality(_ quality: VideoQuality) { continuation.yield(.videoQuality(quality)) }
    public func setAudioOutput(_ output: AudioOutput) { continuation.yield(.audioOutput(output)) }
    public func setScreenShare(_ source: ScreenShareSource?) { continuation.yield(.screenShare(source)) }

    public func callMediaTypeChanged(callId: CallID, mediaType: CallMediaType) {
        continuation.yield(.mediaTypeChanged(callId, mediaType))
    }

    public func statistics() async -> MediaStatistics {
        let current = statistics.withLockedValue { $0 }
        continuation.yield(.statisticsRead)
        return current
    }

    /// What ``statistics()`` returns from now on.
    public var statisticsToReport: MediaStatistics {
        get { statistics.withLockedValue { $0 } }
        set { statistics.withLockedValue { $0 = newValue } }
    }

    // MARK: - PeerMediaEngine

    public func openPeer(_ peer: UserID, iceServers: [IceServer], events: PeerConnectionEvents) {
        connections.withLockedValue { $0[peer] = Connection(events: events) }
        continuation.yield(.opened(peer, iceServers: iceServers))
    }

    public func closePeer(_ peer: UserID) {
        connections.withLockedValue { $0[peer] = nil }
        continuation.yield(.closed(peer))
    }

    public func setLocalDescription(peer: UserID, iceRestart: Bool) async throws -> SessionDescription {
        await waitWhileHeld()
        let (description, events, candidate, renegotiate) = try connections.withLockedValue { connections in
            guard var connection = connections[peer] else { throw FakePeerError(description: "no connection to \(peer)") }
            let remoteRestarted =
                connection.state == .haveRemoteOffer && connection.answeredRemoteUfrag != nil
                && connection.remoteUfrag != connection.answeredRemoteUfrag
            if iceRestart || remoteRestarted || connection.localUfrag == nil {
                if connection.localUfrag != nil { connection.iceGeneration += 1 }
                connection.localUfrag = "\(name)-\(connection.iceGeneration)"
                connection.connectedWith = nil
            }
            let ufrag = connection.localUfrag!
            let description: SessionDescription
            var renegotiate = false
            switch connection.state {
            case .haveRemoteOffer:
                connection.version += 1
                description = SessionDescription(
                    kind: .answer, sdp: "answer \(name)→\(peer.rawValue) #\(connection.version) ice=\(ufrag)")
                connection.state = .stable
                connection.answeredRemoteUfrag = connection.remoteUfrag
                renegotiate = connection.negotiationPending
                connection.negotiationPending = false
            case .stable:
                connection.version += 1
                let sdp = "offer \(name)→\(peer.rawValue) #\(connection.version) ice=\(ufrag)"
                description = SessionDescription(kind: .offer, sdp: sdp)
                connection.localOffer = sdp
                connection.state = .haveLocalOffer
            case .haveLocalOffer:
                description = SessionDescription(kind: .offer, sdp: connection.localOffer ?? "")
            case .closed:
                throw FakePeerError(description: "closed")
            }
            connections[peer] = connection
            let candidate = IceCandidate(
                candidate: "candidate:\(ufrag) 1 udp 1 127.0.0.1 9 typ host", sdpMid: "0", sdpMLineIndex: 0,
                usernameFragment: ufrag)
            return (description, connection.events, candidate, renegotiate)
        }
        continuation.yield(.local(peer, description))
        // Gathering starts once a local description is set.
        events.localCandidate(candidate)
        // As WebRTC fires negotiationneeded again for changes a rollback undid.
        if renegotiate { events.negotiationNeeded() }
        checkConnected(peer)
        return description
    }

    public func setRemoteDescription(_ description: SessionDescription, peer: UserID) async throws {
        await waitWhileHeld()
        let rolledBack = try connections.withLockedValue { connections -> Bool in
            guard var connection = connections[peer] else { throw FakePeerError(description: "no connection to \(peer)") }
            var rolledBack = false
            switch (description.kind, connection.state) {
            case (.offer, .stable):
                connection.state = .haveRemoteOffer
            case (.offer, .haveLocalOffer):
                rolledBack = true
                connection.localOffer = nil
                connection.negotiationPending = true
                connection.state = .haveRemoteOffer
            case (.answer, .haveLocalOffer):
                connection.state = .stable
            default:
                throw FakePeerError(description: "\(description.kind) in state \(connection.state)")
            }
            let ufrag = description.sdp.split(separator: "=").last.map(String.init)
            if ufrag != connection.remoteUfrag { connection.connectedWith = nil }
            connection.remoteUfrag = ufrag
            connections[peer] = connection
            return rolledBack
        }
        if rolledBack { continuation.yield(.rolledBack(peer)) }
        continuation.yield(.remote(peer, description))
        checkConnected(peer)
    }

    public func addRemoteCandidate(_ candidate: IceCandidate, peer: UserID) async throws {
        await waitWhileHeld()
        try connections.withLockedValue { connections in
            guard var connection = connections[peer] else { throw FakePeerError(description: "no connection to \(peer)") }
            guard connection.remoteUfrag != nil else { throw FakePeerError(description: "candidate before a remote description") }
            if let ufrag = candidate.usernameFragment { connection.remoteCandidateUfrags.insert(ufrag) }
            connections[peer] = connection
        }
        continuation.yield(.remoteCandidate(peer, candidate))
        checkConnected(peer)
    }

    public func signalingState(peer: UserID) async -> PeerSignalingState {
        await waitWhileHeld()
        return connections.withLockedValue { $0[peer]?.state ?? .closed }
    }

    // MARK: - SFUMediaEngine

    public func openSFU(_ connection: SFUConnection, iceServers: [IceServer], events: PeerConnectionEvents) {
        sfu.withLockedValue { $0[connection] = (events, .stable) }
        continuation.yield(.sfuOpened(connection))
    }

    public func closeSFU(_ connection: SFUConnection) {
        sfu.withLockedValue { $0[connection] = nil }
        continuation.yield(.sfuClosed(connection))
    }

    public func setLocalDescription(sfu connection: SFUConnection) async throws -> SessionDescription {
        await waitWhileHeld()
        let description = try sfu.withLockedValue { connections -> SessionDescription in
            guard let current = connections[connection] else { throw FakePeerError(description: "no \(connection) connection") }
            switch (connection, current.state) {
            case (.publish, .stable):
                connections[connection]?.state = .haveLocalOffer
                return SessionDescription(kind: .offer, sdp: publishSDP ?? "offer \(name) publish")
            case (.subscribe, .haveRemoteOffer):
                connections[connection]?.state = .stable
                return SessionDescription(kind: .answer, sdp: "answer \(name) subscribe")
            default:
                throw FakePeerError(description: "no description to make on \(connection) in \(current.state)")
            }
        }
        continuation.yield(.sfuLocal(connection, description))
        return description
    }

    public func setRemoteDescription(_ description: SessionDescription, sfu connection: SFUConnection) async throws {
        await waitWhileHeld()
        try sfu.withLockedValue { connections in
            guard let current = connections[connection] else { throw FakePeerError(description: "no \(connection) connection") }
            switch (connection, description.kind, current.state) {
            case (.publish, .answer, .haveLocalOffer): connections[connection]?.state = .stable
            case (.subscribe, .offer, .stable): connections[connection]?.state = .haveRemoteOffer
            default: throw FakePeerError(description: "\(description.kind) on \(connection) in \(current.state)")
            }
        }
        continuation.yield(.sfuRemote(connection, description))
    }

    public func addRemoteCandidate(_ candidate: IceCandidate, sfu connection: SFUConnection) async throws {
        continuation.yield(.sfuCandidate(connection, candidate))
    }

    public func signalingState(sfu connection: SFUConnection) async -> PeerSignalingState {
        await waitWhileHeld()
        return sfu.withLockedValue { $0[connection]?.state ?? .closed }
    }

    public func setSFUTracks(_ tracks: [SFUTrack]) {
        continuation.yield(.sfuTracks(tracks))
    }

    /// The app changed its tracks (a screen shared): the publish connection needs negotiation.
    public func needsSFUNegotiation() {
        sfu.withLockedValue { $0[.publish]?.events }?.negotiationNeeded()
    }

    /// ICE on one of the SFU connections failed.
    public func failSFUICE(_ connection: SFUConnection) {
        sfu.withLockedValue { $0[connection]?.events }?.iceFailed()
    }

    // MARK: - a slow engine

    /// From now on every connection step the SDK awaits (descriptions, candidates, the signaling
    /// state) waits until ``releaseOperations()``, as a busy engine's would.
    public func holdOperations() {
        held.withLockedValue { if $0 == nil { $0 = [] } }
    }

    /// Lets the waiting steps go on, in the order they came.
    public func releaseOperations() {
        held.withLockedValue { waiting in
            let resumed = waiting ?? []
            waiting = nil
            return resumed
        }.forEach { $0.resume() }
    }

    private func waitWhileHeld() async {
        await withCheckedContinuation { continuation in
            let wait = held.withLockedValue { waiting -> Bool in
                guard waiting != nil else { return false }
                waiting!.append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
    }

    // MARK: - what a test does to the network

    /// The app changed its tracks (a camera added): the connection needs negotiation.
    public func needsNegotiation(with peer: UserID) {
        connections.withLockedValue { $0[peer]?.events }?.negotiationNeeded()
    }

    /// ICE to `peer` failed (the network changed).
    public func failICE(with peer: UserID) {
        let events = connections.withLockedValue { connections -> PeerConnectionEvents? in
            connections[peer]?.connectedWith = nil
            return connections[peer]?.events
        }
        events?.iceFailed()
    }

    /// No path to `peer` (true) or a path again (false): a connection to them negotiates, but ICE
    /// never connects; ``failICE(with:)`` then reports its failure, as a real engine's timers would.
    public func cutPath(to peer: UserID, _ cut: Bool) {
        self.cut.withLockedValue { if cut { $0.insert(peer) } else { $0.remove(peer) } }
    }

    private func checkConnected(_ peer: UserID) {
        guard !cut.withLockedValue({ $0.contains(peer) }) else { return }
        let connected = connections.withLockedValue { connections -> (String, String, PeerConnectionEvents)? in
            guard var connection = connections[peer], connection.state == .stable,
                let local = connection.localUfrag, let remote = connection.remoteUfrag,
                connection.remoteCandidateUfrags.contains(remote), connection.connectedWith == nil
            else { return nil }
            connection.connectedWith = (local, remote)
            connections[peer] = connection
            return (local, remote, connection.events)
        }
        guard let (local, remote, events) = connected else { return }
        continuation.yield(.connected(peer, local: local, remote: remote))
        events.iceConnected()
    }
}
