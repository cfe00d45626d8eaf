import Foundation
import SwitchboardProtocol
import SwitchboardServer
import SwitchboardTestServers
import Testing

/// Settings an app's backend changed through the admin API outlive a restart: a recording policy
/// of `always` that a deploy turned back to `off` would record nothing without a word. Only the
/// settings the operator gives as flags replace the stored ones at each start.
struct AppSettingsRestartTests {
    @Test func settingsChangedThroughTheAdminAPIOutliveARestartButForTheOperatorsFlags() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-\(UUID().uuidString)")
        let first = try await TestServer.start(directory: directory)
        let app = first.app.sdkAppID.rawValue
        let changed = try await first.http(
            "PUT", "/v1/apps/\(app)/settings",
            json: [
                "recording": ["policy": "always", "control": "members", "retentionDays": 30] as [String: any Sendable], "callPull": true,
                "busyPolicy": "callWaiting", "maxParticipants": 8,
            ])
        #expect(changed.status == 200)
        await first.stopKeepingFiles()

        // The operator starts it again with one flag: that one wins, the rest is as stored.
        let second = try await TestServer.start(directory: directory) { $0.appSettingOverrides.maxParticipants = 4 }
        #expect(second.app.sdkAppID.rawValue == app)
        let read = try await second.http("GET", "/v1/apps/\(app)/settings")
        let settings = try #require(try JSONSerialization.jsonObject(with: read.body) as? [String: Any])
        let recording = try #require(settings["recording"] as? [String: Any])
        #expect(recording["policy"] as? String == "always")
        #expect(recording["control"] as? String == "members")
        #expect(recording["retentionDays"] as? Int == 30)
        #expect(settings["callPull"] as? Bool == true)
        #expect(settings["busyPolicy"] as? String == "callWaiting")
        #expect(settings["maxParticipants"] as? Int == 4)
        await second.stop()
    }
}
