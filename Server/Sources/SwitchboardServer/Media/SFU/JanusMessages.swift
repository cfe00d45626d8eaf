import Foundation
import SwitchboardProtocol

// The parts of Janus's API (WebSocket transport, subprotocol `janus-protocol`) and of its
// VideoRoom plugin that the server uses: Janus 1.1's `src/mainpage.dox` ("RESTful, WebSockets…
// API") and the header of `src/plugins/janus_videoroom.c`. Requests carry the API secret; every
// request has a transaction the answer repeats.

/// A request to Janus. Fields left nil are not sent.
struct JanusRequest: Encodable, Sendable {
    /// `create`, `attach`, `message`, `trickle`, `detach`, `keepalive`, `destroy`, `info`.
    var janus: String
    var transaction: String
    var apisecret: String?
    var session_id: UInt64?
    var handle_id: UInt64?
    var plugin: String?
    var body: VideoRoomRequest?
    var jsep: JanusJSEP?
    var candidate: JanusCandidate?
}

/// A session description as Janus carries it.
struct JanusJSEP: Codable, Equatable, Sendable {
    /// `offer` or `answer`.
    var type: String
    var sdp: String
}

/// A trickled candidate, or (`completed`) the end of the candidates.
struct JanusCandidate: Codable, Equatable, Sendable {
    var candidate: String?
    var sdpMid: String?
    var sdpMLineIndex: Int?
    var completed: Bool?

    init(_ candidate: IceCandidate) {
        if candidate.candidate.isEmpty {
            completed = true
        } else {
            self.candidate = candidate.candidate
            sdpMid = candidate.sdpMid
            sdpMLineIndex = candidate.sdpMLineIndex
        }
    }

    /// The candidate as clients take it (nil for Janus's `completed`).
    var iceCandidate: IceCandidate {
        IceCandidate(candidate: candidate ?? "", sdpMid: sdpMid, sdpMLineIndex: sdpMLineIndex)
    }
}

/// A VideoRoom request (the `body` of a `message`). Fields left nil are not sent.
struct VideoRoomRequest: Encodable, Sendable {
    /// `create`, `destroy`, `join`, `publish`, `configure`, `subscribe`, `update`, `start`, `leave`.
    var request: String
    var room: UInt64?
    var admin_key: String?
    var permanent: Bool?
    var is_private: Bool?
    var publishers: Int?
    var audiocodec: String?
    var videocodec: String?
    var fir_freq: Int?
    var bitrate: Int?
    var audiolevel_ext: Bool?
    var ptype: String?
    var display: String?
    var streams: [VideoRoomStreamRequest]?
    /// `update`: the streams to add to a subscription and to take out of it.
    var subscribe: [VideoRoomStreamRequest]?
    var unsubscribe: [VideoRoomStreamRequest]?
    var use_msid: Bool?
    var autoupdate: Bool?
    var private_id: UInt64?
    var restart: Bool?
    /// `create`: where the room's recordings go.
    var rec_dir: String?
    /// `publish`, `configure`: record the publisher's tracks (into `filename`-audio-0.mjr and so on, in the room's `rec_dir`).
    var record: Bool?
    var filename: String?
}

/// A stream in `join` (subscriber), `subscribe`, `update` and `configure` requests.
struct VideoRoomStreamRequest: Encodable, Equatable, Sendable {
    var feed: UInt64?
    var mid: String?
    var substream: Int?
}

/// Anything Janus sends on the WebSocket: answers (`success`, `ack`, `error`), plugin events
/// (`event`, with the transaction of the request they answer or none) and WebRTC events of a
/// handle (`webrtcup`, `media`, `slowlink`, `hangup`, `detached`, `trickle`, `timeout`).
struct JanusMessage: Decodable, Sendable {
    var janus: String
    var transaction: String?
    var session_id: UInt64?
    /// The handle an event is about.
    var sender: UInt64?
    /// `success` of `create` and `attach`: the new session's or handle's id.
    var data: IDData?
    var error: JanusError?
    var plugindata: PluginData?
    var jsep: JanusJSEP?
    var candidate: JanusCandidate?
    /// `hangup`: why the PeerConnection closed.
    var reason: String?

    struct IDData: Decodable, Sendable {
        var id: UInt64
    }

    struct PluginData: Decodable, Sendable {
        var plugin: String
        var data: VideoRoomEvent
    }
}

/// An error of the Janus API (`error.code`, `error.reason`) or of the plugin (`error_code`, `error`).
struct JanusError: Decodable, Error, Equatable, Sendable, CustomStringConvertible {
    var code: Int
    var reason: String

    var description: String { "Janus error \(code): \(reason)" }

    static let unauthorized = 403
    static let sessionNotFound = 458
    static let handleNotFound = 459
    /// VideoRoom: no such room.
    static let noSuchRoom = 426
    /// VideoRoom: a room with that id exists already.
    static let roomExists = 427
}

/// What the VideoRoom plugin says (`plugindata.data`).
struct VideoRoomEvent: Decodable, Sendable {
    /// `created`, `destroyed`, `joined`, `event`, `attached`, `updated`, `success`, `talking`…
    var videoroom: String?
    var room: UInt64?
    /// `joined`: the publisher's id in the room.
    var id: UInt64?
    var private_id: UInt64?
    /// `joined` and `event`: feeds that publish (all of them, or the ones that changed).
    var publishers: [Publisher]?
    /// `attached`, `updated`: the subscription's streams.
    var streams: [SubscriberStream]?
    /// `event`: a publisher stopped (its id; `"ok"` for one's own `unpublish`).
    var unpublished: IDOrText?
    /// `event`: a participant left (its id; `"ok"` for one's own `leave`).
    var leaving: IDOrText?
    var configured: String?
    var started: String?
    /// `exists`: whether the room exists.
    var exists: Bool?
    var error_code: Int?
    var error: String?

    struct Publisher: Decodable, Sendable {
        var id: UInt64
        var display: String?
        var streams: [PublisherStream]?
    }

    struct PublisherStream: Decodable, Sendable {
        var type: String
        var mid: String?
        var disabled: Bool?
        var simulcast: Bool?
    }

    struct SubscriberStream: Decodable, Sendable {
        var type: String
        var mid: String
        var active: Bool?
        var feed_id: UInt64?
        var feed_mid: String?
    }

    /// The plugin's error, if it reports one.
    var failure: JanusError? {
        error_code.map { JanusError(code: $0, reason: error ?? "") }
    }
}

/// A field that is a publisher's id or a word (`"ok"`).
enum IDOrText: Decodable, Sendable, Equatable {
    case id(UInt64)
    case text(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let id = try? container.decode(UInt64.self) {
            self = .id(id)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    var id: UInt64? { if case .id(let id) = self { id } else { nil } }
}
