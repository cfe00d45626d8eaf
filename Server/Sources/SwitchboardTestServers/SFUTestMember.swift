import Switchboard
import SwitchboardTesting
import SwitchboardTools

/// A member of a group call through the SFU in the SDK's tests: a client whose fake engine
/// publishes what a browser does (``FakeMediaEngine/browserLikePublishOffer()``), and a recorder
/// of its call events from login on.
public struct SFUTestMember: Sendable {
    public var client: SwitchboardClient
    public var media: FakeMediaEngine
    public var events: Recorder<CallStoreEvent>

    /// `user` logged in to `server`.
    public static func logIn(_ user: String, to server: TestServer) async throws -> SFUTestMember {
        let media = FakeMediaEngine(name: user, publishSDP: FakeMediaEngine.browserLikePublishOffer())
        let client = try await server.client(user, mediaEngine: media)
        return SFUTestMember(client: client, media: media, events: Recorder(client.callStore.events))
    }
}
