import SwitchboardProtocol
import Testing

@testable import Switchboard

/// The media coordinator's rules as a table (``MediaCoordination``): each row plays a script of
/// inputs with an engine that can do peers and the SFU (unless the row says otherwise), then one
/// more, and compares that input's actions and the state it leaves, written on one line each.
///
/// Inputs (words separated by spaces):
/// - `mesh:c1:bob+carol` / `sfu:c1:bob+carol`: the device's connected call is `c1` with these other
///   members who accepted, media through peer connections or the SFU (`mesh:c1:bob:video` for a
///   video call); `none`: no connected call.
/// - `signal:c1:dave` (a media signal from dave in c1), `session:c1:2` (the server's SFU session 2),
///   `sfu-signal:c1:2`, `agreed:c1` (an agreed media-type change), `declined:c1`, `moved:c1:bob` (bob
///   is in the call on another device now).
/// - `external`, `automatic` (who controls audio), `active`, `inactive` (the system's audio session).
/// - `want:bob=big+carol=small` (the camera layers the device store wants), `reconnected`.
///
/// Actions: `reports(c1)`, `stop-reports`, `connected(c1)`, `ended(c1)`, `media(c1,video)`,
/// `audio-on`, `audio-off`, `open(bob)` or `open(bob,after-close)`, `close(bob)`, `forget(bob)`,
/// `bob<-signal`, `bob<-expect`, `bob<-network`, `open-sfu(2)` or `open-sfu(2,after-close)`,
/// `close-sfu`, `sfu<-signal`, `layer(bob=big)`, `drop(why)`.
struct MediaCoordinationTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var engine = MediaCoordination.Engine.sfu
        var setup: String = ""
        var input: String
        var result: String
        var state: String

        var testDescription: String { name }
    }

    static let rows: [Row] = [
        // The call the engine is in, and audio.
        Row(
            name: "a connected call starts its reports before the engine hears of it, then audio",
            input: "mesh:c1:bob", result: "reports(c1), connected(c1), audio-on, open(bob)",
            state: "call=c1 audio=on peers=bob"),
        Row(
            name: "the call ending closes its connections, stops reports and audio, then tells the engine",
            setup: "mesh:c1:bob+carol", input: "none",
            result: "close(bob), close(carol), stop-reports, audio-off, ended(c1)",
            state: "call=- audio=off closing=bob,carol"),
        Row(
            name: "another call ends the first one before it starts", setup: "mesh:c1:bob", input: "mesh:c2:bob",
            result: "close(bob), stop-reports, audio-off, ended(c1), reports(c2), connected(c2), audio-on, open(bob,after-close)",
            state: "call=c2 audio=on peers=bob"),
        Row(
            name: "with external control audio waits for the system's session", setup: "external", input: "mesh:c1:bob",
            result: "reports(c1), connected(c1), open(bob)", state: "call=c1 audio=off peers=bob"),
        Row(
            name: "and starts when the session is activated", setup: "external mesh:c1:bob", input: "active",
            result: "audio-on", state: "call=c1 audio=on peers=bob"),
        Row(
            name: "and stops when it is deactivated", setup: "external mesh:c1:bob active", input: "inactive",
            result: "audio-off", state: "call=c1 audio=off peers=bob"),
        Row(
            name: "an active session without a call plays nothing", setup: "external", input: "active", result: "",
            state: "call=- audio=off"),
        Row(
            name: "going back to automatic control starts audio in a call", setup: "external mesh:c1:bob",
            input: "automatic", result: "audio-on", state: "call=c1 audio=on peers=bob"),
        Row(
            name: "a change of media type in the same call reaches the engine", setup: "mesh:c1:bob",
            input: "mesh:c1:bob:video", result: "media(c1,video)", state: "call=c1 audio=on peers=bob"),
        Row(
            name: "an engine without peer connections gets the call and nothing more", engine: .media,
            input: "mesh:c1:bob", result: "reports(c1), connected(c1), audio-on", state: "call=c1 audio=on"),
        Row(
            name: "and no signals", engine: .media, setup: "mesh:c1:bob", input: "signal:c1:bob", result: "",
            state: "call=c1 audio=on"),

        // Peer connections.
        Row(
            name: "a member who joins gets a connection", setup: "mesh:c1:bob", input: "mesh:c1:bob+carol",
            result: "open(carol)", state: "call=c1 audio=on peers=bob,carol"),
        Row(
            name: "a member who leaves has theirs closed", setup: "mesh:c1:bob+carol", input: "mesh:c1:bob",
            result: "close(carol)", state: "call=c1 audio=on peers=bob closing=carol"),
        Row(
            name: "a member who comes back waits for the old connection to close", setup: "mesh:c1:bob+carol mesh:c1:bob",
            input: "mesh:c1:bob+carol", result: "open(carol,after-close)", state: "call=c1 audio=on peers=bob,carol"),
        Row(
            name: "a signal before the state shows its sender opens the connection first", setup: "mesh:c1:bob",
            input: "signal:c1:dave", result: "open(dave), dave<-signal", state: "call=c1 audio=on peers=bob,dave"),
        Row(
            name: "which stays when the state then shows the sender", setup: "mesh:c1:bob signal:c1:dave",
            input: "mesh:c1:bob+dave", result: "", state: "call=c1 audio=on peers=bob,dave"),
        Row(
            name: "a signal for an open connection goes to it", setup: "mesh:c1:bob", input: "signal:c1:bob",
            result: "bob<-signal", state: "call=c1 audio=on peers=bob"),
        Row(
            name: "a signal for a call not connected here is dropped", setup: "mesh:c1:bob", input: "signal:c9:bob",
            result: "drop(media-signal-not-connected)", state: "call=c1 audio=on peers=bob"),
        Row(
            name: "so is one after the call ended", setup: "mesh:c1:bob none", input: "signal:c1:bob",
            result: "drop(media-signal-not-connected)", state: "call=- audio=off closing=bob"),
        Row(
            name: "a signal from this device's own user opens nothing", setup: "mesh:c1:bob", input: "signal:c1:me",
            result: "", state: "call=c1 audio=on peers=bob"),
        Row(
            name: "an agreed media change tells every connection to expect the offer", setup: "mesh:c1:bob+carol",
            input: "agreed:c1", result: "bob<-expect, carol<-expect", state: "call=c1 audio=on peers=bob,carol"),
        Row(
            name: "a declined one tells none", setup: "mesh:c1:bob", input: "declined:c1", result: "",
            state: "call=c1 audio=on peers=bob"),
        Row(
            name: "an agreed change of another call tells none", setup: "mesh:c1:bob", input: "agreed:c9", result: "",
            state: "call=c1 audio=on peers=bob"),
        Row(
            name: "a member who moved to another device gets a new connection after the old one closed",
            setup: "mesh:c1:bob+carol", input: "moved:c1:bob", result: "close(bob), open(bob,after-close)",
            state: "call=c1 audio=on peers=bob,carol"),
        Row(
            name: "a move in another call changes nothing", setup: "mesh:c1:bob", input: "moved:c9:bob", result: "",
            state: "call=c1 audio=on peers=bob"),
        Row(
            name: "a move through the SFU opens no connection (the new device gets its own session)",
            setup: "sfu:c1:bob session:c1:1", input: "moved:c1:bob", result: "",
            state: "call=c1 sfu audio=on session=1"),
        Row(
            name: "a reconnect tells every connection the network changed", setup: "mesh:c1:bob+carol",
            input: "reconnected", result: "bob<-network, carol<-network", state: "call=c1 audio=on peers=bob,carol"),

        // The SFU.
        Row(
            name: "an SFU call has no peer connections", input: "sfu:c1:bob+carol",
            result: "reports(c1), connected(c1), audio-on", state: "call=c1 sfu audio=on"),
        Row(
            name: "a mesh call that becomes an SFU call closes them", setup: "mesh:c1:bob", input: "sfu:c1:bob+carol",
            result: "close(bob)", state: "call=c1 sfu audio=on closing=bob"),
        Row(
            // The route alone decides, not the call's type: a one-to-one call goes through the SFU
            // while the server records it, with the same two members.
            name: "a one-to-one call whose recording starts moves to the SFU too", setup: "mesh:c1:bob", input: "sfu:c1:bob",
            result: "close(bob)", state: "call=c1 sfu audio=on closing=bob"),
        Row(
            name: "and a signal from a member opens none", setup: "sfu:c1:bob", input: "signal:c1:bob", result: "",
            state: "call=c1 sfu audio=on"),
        Row(
            name: "the server's session opens the SFU connections", setup: "sfu:c1:bob", input: "session:c1:1",
            result: "open-sfu(1)", state: "call=c1 sfu audio=on session=1"),
        Row(
            name: "a newer session opens after the old one closed", setup: "sfu:c1:bob session:c1:1",
            input: "session:c1:2", result: "close-sfu, open-sfu(2,after-close)", state: "call=c1 sfu audio=on session=2"),
        Row(
            name: "a repeated session is ignored", setup: "sfu:c1:bob session:c1:2", input: "session:c1:2", result: "",
            state: "call=c1 sfu audio=on session=2"),
        Row(
            name: "an older one too", setup: "sfu:c1:bob session:c1:2", input: "session:c1:1", result: "",
            state: "call=c1 sfu audio=on session=2"),
        Row(
            name: "a session for a mesh call is dropped", setup: "mesh:c1:bob", input: "session:c1:1",
            result: "drop(sfu-session-not-connected)", state: "call=c1 audio=on peers=bob"),
        Row(
            name: "an engine that cannot do the SFU says so", engine: .peers, setup: "sfu:c1:bob", input: "session:c1:1",
            result: "drop(engine-cannot-sfu)", state: "call=c1 sfu audio=on"),
        Row(
            name: "the current session's signal goes to it", setup: "sfu:c1:bob session:c1:2", input: "sfu-signal:c1:2",
            result: "sfu<-signal", state: "call=c1 sfu audio=on session=2"),
        Row(
            name: "an old session's is dropped", setup: "sfu:c1:bob session:c1:2", input: "sfu-signal:c1:1",
            result: "drop(sfu-signal-for-no-session)", state: "call=c1 sfu audio=on session=2"),
        Row(
            name: "the call ending closes the session", setup: "sfu:c1:bob session:c1:2", input: "none",
            result: "close-sfu, stop-reports, audio-off, ended(c1)", state: "call=- audio=off"),
        Row(
            name: "the next call's first session opens after it closed", setup: "sfu:c1:bob session:c1:2 none sfu:c2:bob",
            input: "session:c2:1", result: "open-sfu(1,after-close)", state: "call=c2 sfu audio=on session=1"),

        // Camera layers.
        Row(
            name: "the wanted layers are asked for in an SFU call", setup: "sfu:c1:bob+carol",
            input: "want:bob=big+carol=small", result: "layer(bob=big), layer(carol=small)",
            state: "call=c1 sfu audio=on sent=bob:big,carol:small"),
        Row(
            name: "once per change", setup: "sfu:c1:bob+carol want:bob=big+carol=small", input: "want:bob=big+carol=big",
            result: "layer(carol=big)", state: "call=c1 sfu audio=on sent=bob:big,carol:big"),
        Row(
            name: "not for someone not in the call", setup: "sfu:c1:bob", input: "want:dave=big", result: "",
            state: "call=c1 sfu audio=on"),
        Row(
            name: "not in a mesh call", setup: "mesh:c1:bob", input: "want:bob=big", result: "",
            state: "call=c1 audio=on peers=bob"),
        Row(
            name: "wanted before the call became an SFU call, asked when it does", setup: "mesh:c1:bob want:bob=big",
            input: "sfu:c1:bob", result: "close(bob), layer(bob=big)", state: "call=c1 sfu audio=on closing=bob sent=bob:big"),
        Row(
            name: "a new call asks again", setup: "sfu:c1:bob want:bob=big none", input: "sfu:c2:bob",
            result: "reports(c2), connected(c2), audio-on, layer(bob=big)", state: "call=c2 sfu audio=on sent=bob:big"),
    ]

    @Test(arguments: rows)
    func rule(_ row: Row) {
        var rules = MediaCoordination(engine: row.engine)
        for word in row.setup.split(separator: " ") { _ = Self.play(String(word), on: &rules) }
        #expect(Self.describe(Self.play(row.input, on: &rules)) == row.result)
        #expect(Self.describe(rules) == row.state)
    }

    /// At most ``MediaCoordination/closingLimit`` closing connections are remembered: the oldest
    /// is forgotten, and a member whose closing was forgotten opens at once.
    @Test func closingConnectionsAreBounded() throws {
        var rules = MediaCoordination(engine: .peers)
        let members = (0...MediaCoordination.closingLimit).map { UserID(rawValue: "m\($0)") }
        _ = rules.connectionChanged(to: Self.connection("c1", members, media: nil))
        let actions = rules.connectionChanged(to: Self.connection("c1", [], media: nil))
        #expect(actions.filter { if case .closePeer = $0 { true } else { false } }.count == members.count)
        let forgotten = actions.compactMap { if case .forgetClosing(let user) = $0 { user } else { nil } }
        #expect(forgotten.count == 1)
        #expect(rules.closing.count == MediaCoordination.closingLimit)
        let user = try #require(forgotten.first)
        let again = rules.connectionChanged(to: Self.connection("c1", [user], media: nil))
        #expect(again == [.openPeer(user, callId: "c1", me: "me", afterClosing: false)])
    }

    // MARK: - the script

    static func connection(_ call: CallID, _ peers: [UserID], media: CallMediaRoute?, type: CallMediaType = .audio)
        -> MediaCoordination.Connection
    {
        MediaCoordination.Connection(
            callId: call, roomId: RoomID(rawValue: "room-\(call)"), mediaType: type, me: "me", peers: Set(peers),
            media: media)
    }

    static func play(_ word: String, on rules: inout MediaCoordination) -> [MediaCoordination.Action] {
        let parts = word.split(separator: ":").map(String.init)
        switch parts[0] {
        case "mesh", "sfu":
            let peers = parts[2].split(separator: "+").map { UserID(rawValue: String($0)) }
            let type: CallMediaType = parts.count > 3 && parts[3] == "video" ? .video : .audio
            return rules.connectionChanged(
                to: connection(CallID(rawValue: parts[1]), peers, media: parts[0] == "sfu" ? .sfu : nil, type: type))
        case "none": return rules.connectionChanged(to: nil)
        case "signal":
            return rules.serverEvent(
                .mediaSignal(MediaSignalEvent(callId: CallID(rawValue: parts[1]), from: UserID(rawValue: parts[2]), kind: .offer, sdp: "v=0")))
        case "session":
            return rules.serverEvent(.sfuSession(SFUSessionEvent(callId: CallID(rawValue: parts[1]), session: Int(parts[2])!)))
        case "sfu-signal":
            return rules.serverEvent(
                .sfuSignal(
                    SFUSignalEvent(callId: CallID(rawValue: parts[1]), session: Int(parts[2])!, connection: .subscribe, kind: .offer, sdp: "v=0")))
        case "agreed", "declined":
            return rules.serverEvent(
                .mediaTypeChangeResult(
                    MediaTypeChangeResultEvent(
                        callId: CallID(rawValue: parts[1]), transactionId: "t1", mediaType: .video, userId: "bob",
                        result: parts[0] == "agreed" ? .agreed : .declined)))
        case "moved":
            return rules.serverEvent(
                .memberMoved(MemberMovedEvent(callId: CallID(rawValue: parts[1]), userId: UserID(rawValue: parts[2]))))
        case "external": return rules.controlChanged(to: .external)
        case "automatic": return rules.controlChanged(to: .automatic)
        case "active": return rules.audioSession(active: true)
        case "inactive": return rules.audioSession(active: false)
        case "reconnected": return rules.reconnected()
        case "want":
            var layers: [UserID: VideoLayer] = [:]
            for pair in parts[1].split(separator: "+") {
                let kv = pair.split(separator: "=").map(String.init)
                layers[UserID(rawValue: kv[0])] = VideoLayer(rawValue: kv[1])!
            }
            return rules.layersWanted(layers)
        default:
            Issue.record("unknown input \(word)")
            return []
        }
    }

    static func describe(_ actions: [MediaCoordination.Action]) -> String {
        actions.map { action -> String in
            switch action {
            case .stopReports: "stop-reports"
            case .startAudio: "audio-on"
            case .stopAudio: "audio-off"
            case .engineCallEnded(let call): "ended(\(call))"
            case .startReports(let call): "reports(\(call))"
            case .engineCallConnected(let connection): "connected(\(connection.callId))"
            case .engineMediaTypeChanged(let call, let type): "media(\(call),\(type.rawValue))"
            case .openPeer(let user, _, _, let after): after ? "open(\(user),after-close)" : "open(\(user))"
            case .closePeer(let user): "close(\(user))"
            case .forgetClosing(let user): "forget(\(user))"
            case .toPeer(let user, let input): "\(user)<-\(describe(input))"
            case .openSFU(let session, let after): after ? "open-sfu(\(session.session),after-close)" : "open-sfu(\(session.session))"
            case .closeSFU: "close-sfu"
            case .toSFU(.signal): "sfu<-signal"
            case .toSFU(let input): "sfu<-\(input)"
            case .requestLayer(let request): "layer(\(request.userId)=\(request.layer.rawValue))"
            case .drop(let why): "drop(\(describe(why)))"
            }
        }.joined(separator: ", ")
    }

    static func describe(_ input: MediaCoordination.PeerInput) -> String {
        switch input {
        case .signal: "signal"
        case .expectOffer: "expect"
        case .networkChanged: "network"
        default: "\(input)"
        }
    }

    static func describe(_ why: MediaCoordination.Dropped) -> String {
        switch why {
        case .sfuSessionNotConnected: "sfu-session-not-connected"
        case .sfuSignalForNoSession: "sfu-signal-for-no-session"
        case .mediaSignalNotConnected: "media-signal-not-connected"
        case .engineCannotSFU: "engine-cannot-sfu"
        }
    }

    static func describe(_ rules: MediaCoordination) -> String {
        var words = ["call=\(rules.connected.map(\.callId.rawValue) ?? "-")"]
        if rules.connected?.media == .sfu { words.append("sfu") }
        words.append(rules.audioRunning ? "audio=on" : "audio=off")
        if !rules.peers.isEmpty { words.append("peers=" + rules.peers.map(\.rawValue).sorted().joined(separator: ",")) }
        if !rules.closing.isEmpty { words.append("closing=" + rules.closing.map(\.rawValue).joined(separator: ",")) }
        if let session = rules.sfuSession { words.append("session=\(session)") }
        if !rules.sentLayers.isEmpty {
            words.append(
                "sent=" + rules.sentLayers.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key):\($0.value.rawValue)" }
                    .joined(separator: ","))
        }
        return words.joined(separator: " ")
    }
}
