/// What a video track received from a member shows.
public enum ReceivedVideoRole: String, Sendable, Equatable {
    case camera
    case screen

    /// A member's video is their shared screen when its stream (`a=msid`) is not the stream of
    /// their microphone: senders keep microphone and camera in one stream and the screen in
    /// another (docs/IOS.md, section 8). A track with no stream is the camera.
    public static func of(streamId: String?, audioStreamId: String?) -> ReceivedVideoRole {
        guard let streamId else { return .camera }
        return streamId == audioStreamId ? .camera : .screen
    }
}
