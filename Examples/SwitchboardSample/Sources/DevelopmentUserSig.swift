import Foundation
import SwitchboardCallKit
import SwitchboardProtocol

/// A UserSig from a server in development mode (`GET /v1/dev/usersig?userID=…`, docs/PROTOCOL.md).
/// A production app gets its UserSig from its own backend instead, which signs with the app's key.
enum DevelopmentUserSig {
    struct Reply: Decodable {
        var sdkAppID: SdkAppID
        var userID: String
        var userSig: String
    }

    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    static func fetch(server: URL, userID: String) async throws -> CallKitAccount {
        var components = URLComponents(url: server, resolvingAgainstBaseURL: false) ?? URLComponents()
        components.path = "/v1/dev/usersig"
        components.queryItems = [URLQueryItem(name: "userID", value: userID)]
        guard let url = components.url else { throw Refused(description: "not a server address: \(server)") }
        let (data, response) = try await URLSession.shared.data(from: url)
        guard (response as? HTTPURLResponse)?.statusCode == 200 else {
            throw Refused(description: String(decoding: data, as: UTF8.self))
        }
        let reply = try JSONDecoder().decode(Reply.self, from: data)
        return CallKitAccount(sdkAppID: reply.sdkAppID, userID: reply.userID, userSig: reply.userSig)
    }
}
