import Crypto
import Foundation
import SwitchboardProtocol
import SwitchboardTesting
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// An app's push credentials through the admin API (`/v1/apps/{sdkAppID}/push`): kept in the
/// database with the app, never answered back, each falling back to the server's own.
struct PushCredentialsAdminTests {
    static func text(_ object: [String: Any]) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    @Test func credentialsAreSetReadWithoutSecretsKeptAndRemoved() async throws {
        let clock = TestClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-pushadmin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fcm = try await TestFCMServer.start(clock: clock, directory: directory)
        var server = try await TestServer.start(clock: clock, directory: directory)
        let path = "/v1/apps/\(server.app.sdkAppID)/push"

        let (denied, _) = try await WebPushTests.http(server, "GET", path, secret: nil)
        #expect(denied == 401)
        let (unknown, unknownBody) = try await WebPushTests.http(server, "GET", "/v1/apps/42/push")
        #expect(unknown == 404 && AdminAPITests.code(unknownBody) == SwitchboardError.Code.unknownApp.rawValue)

        // A new app has a generated VAPID key pair, the one the page subscribes with, and nothing else.
        var (status, view) = try await WebPushTests.http(server, "GET", path)
        let generated = try #require(view["webPush"] as? [String: Any])
        #expect(status == 200 && generated["source"] as? String == "generated")
        #expect(generated["publicKey"] as? String == (try await WebPushTests.webPushKey(server)))
        #expect(view["apns"] == nil && view["fcm"] == nil)

        // Bad credentials are refused and change nothing.
        for bad in [
            #"{"apns":{"privateKey":"not a key","keyId":"ABC123DEFG","teamId":"DEF123GHIJ"}}"#,
            #"{"fcm":{"serviceAccount":{"project_id":"p","client_email":"a@b","private_key":"nope"}}}"#,
            #"{"fcm":{"serviceAccount":{"client_email":"a@b"}}}"#,
            #"{"webPush":{"privateKey":"c2hvcnQ"}}"#,
            #"{"webPush":{"subject":"not a uri"}}"#,
            #"{"webPush":{}}"#,
        ] {
            let (refused, body) = try await WebPushTests.http(server, "PUT", path, body: Data(bad.utf8))
            #expect(refused == 400 && AdminAPITests.code(body) == SwitchboardError.Code.invalidParams.rawValue, "\(bad)")
        }
        #expect(try await WebPushTests.http(server, "GET", path).1 as NSDictionary == view as NSDictionary)

        // APNs and FCM for the app, and a contact for its VAPID key.
        let apnsKey = P256.Signing.PrivateKey().pemRepresentation
        let account = try #require(JSONSerialization.jsonObject(with: fcm.serviceAccountJSON) as? [String: Any])
        let change = try Self.text([
            "apns": ["privateKey": apnsKey, "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ"],
            "fcm": ["serviceAccount": account], "webPush": ["subject": "mailto:ops@example.com"],
        ])
        let (changed, answer) = try await WebPushTests.http(server, "PUT", path, body: Data(change.utf8))
        #expect(changed == 200)
        #expect((answer["apns"] as? [String: String]) == ["keyId": "ABC123DEFG", "teamId": "DEF123GHIJ", "source": "app"])
        #expect(
            (answer["fcm"] as? [String: String])
                == ["projectId": fcm.projectId, "clientEmail": fcm.serviceAccount.clientEmail, "source": "app"])
        let webPush = try #require(answer["webPush"] as? [String: Any])
        #expect(webPush["publicKey"] as? String == generated["publicKey"] as? String)
        #expect(webPush["subject"] as? String == "mailto:ops@example.com" && webPush["source"] as? String == "generated")
        // No private key ever comes back.
        let raw = try Self.text(answer)
        #expect(!raw.contains("PRIVATE") && !raw.contains("privateKey") && !raw.contains("private_key"))

        // Kept in the database: the same after a restart.
        await server.stopKeepingFiles()
        server = try await TestServer.start(clock: clock, directory: directory)
        #expect(try await WebPushTests.http(server, "GET", path).1 as NSDictionary == answer as NSDictionary)
        #expect(server.node.inspection.push.reaches(Self.token(server, .fcm)))

        // Removed: FCM falls back to the server's (none here), the VAPID key pair is replaced.
        (status, view) = try await WebPushTests.http(server, "DELETE", "\(path)/fcm")
        #expect(status == 200 && view["fcm"] == nil && view["apns"] != nil)
        #expect(!server.node.inspection.push.reaches(Self.token(server, .fcm)))
        (status, view) = try await WebPushTests.http(server, "DELETE", "\(path)/webPush")
        let replaced = try #require(view["webPush"] as? [String: Any])
        #expect(status == 200 && replaced["source"] as? String == "generated")
        #expect(replaced["publicKey"] as? String != generated["publicKey"] as? String)
        #expect(try await WebPushTests.http(server, "DELETE", "\(path)/bogus").0 == 404)
        await server.stop()
        await fcm.stop()
    }

    /// The server's flags stand in for what an app lacks; the app's own win.
    @Test func theServersCredentialsAreTheFallback() async throws {
        let clock = TestClock()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-pushadmin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let keyPath = directory.appendingPathComponent("AuthKey.p8").path
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: keyPath, atomically: true, encoding: .utf8)
        let vapid = VAPIDKey(privateKey: VAPIDKey.generate().privateKey, subject: "https://example.com/ops")
        let server = try await TestServer.start(clock: clock, directory: directory) { configuration in
            configuration.apns = APNsConfiguration(keyPath: keyPath, keyId: "SERVERKEY1", teamId: "SERVERTEAM")
            configuration.webPush.vapid = vapid
        }
        let path = "/v1/apps/\(server.app.sdkAppID)/push"
        var (_, view) = try await WebPushTests.http(server, "GET", path)
        #expect((view["apns"] as? [String: String]) == ["keyId": "SERVERKEY1", "teamId": "SERVERTEAM", "source": "server"])
        #expect((view["webPush"] as? [String: String])?["source"] == "server")
        #expect(try await WebPushTests.webPushKey(server) == vapid.publicKey)
        let own = VAPIDKey.generate()
        (_, view) = try await WebPushTests.http(
            server, "PUT", path, body: Data(#"{"webPush":{"privateKey":"\#(own.privateKey)","subject":"mailto:a@example.com"}}"#.utf8))
        #expect((view["webPush"] as? [String: String])?["source"] == "app")
        #expect(try await WebPushTests.webPushKey(server) == own.publicKey)
        await server.stop()
    }

    static func token(_ server: TestServer, _ kind: PushTokenKind) -> PushToken {
        PushToken(
            token: "t", user: UserKey(app: server.app.sdkAppID, user: "bob"), device: "d", kind: kind,
            environment: .production, bundleId: "", updatedAt: 0)
    }
}
