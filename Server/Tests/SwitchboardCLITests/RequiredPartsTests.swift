import Foundation
import SwitchboardTestServers
import Testing

/// Suites that need an outside part (PostgreSQL, Janus, the GStreamer engine, Tencent's generator, the
/// soak's minute, Chromium for the browser tests, the iOS kit for the type-check) skip where it is
/// missing, so that `swift test` works on any machine. In CI (`CI=true`, or `SWITCHBOARD_REQUIRE_ALL=1`,
/// which `.ci/run` sets itself) a skip would hide a whole area from the run: there each missing part
/// fails here, by name.
struct RequiredPartsTests {
    static let environment = ProcessInfo.processInfo.environment
    static let required = environment["CI"] == "true" || environment["SWITCHBOARD_REQUIRE_ALL"] == "1"

    /// Where scripts/ios-typecheck finds the iPhoneOS SDK and WebRTC headers: $SWITCHBOARD_IOS_KIT, or
    /// ../shared/ios beside the repository (this file is Server/Tests/SwitchboardCLITests/…).
    static let iosKit = environment["SWITCHBOARD_IOS_KIT"]
        ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("shared/ios").path

    @Test(.enabled(if: required)) func everySuiteRunsInCI() {
        #expect(
            PostgresTestDatabase.isAvailable,
            "SWITCHBOARD_TEST_POSTGRES is not set: the cluster and PostgreSQL suites were skipped (scripts/test starts one)")
        #if !GStreamer
        Issue.record("built without the GStreamer trait: the media engine's suites were not compiled (scripts/media-deps)")
        #endif
        #expect(
            Self.environment["SWITCHBOARD_TENCENT_PYTHON"] != nil,
            "SWITCHBOARD_TENCENT_PYTHON is not set: the test against Tencent's generator was skipped (scripts/python-deps)")
        #expect(
            JanusProcess.isAvailable,
            "janus is not installed: the SFU suites (group calls through Janus) were skipped (scripts/janus install)")
        #expect(
            ["/usr/bin/janus-pp-rec", "/usr/bin/ffmpeg", "/usr/bin/ffprobe"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) },
            "janus-pp-rec or ffmpeg is not installed: the recording suite was skipped (scripts/janus install)")
        #expect(
            TestNetwork.unavailableReason == nil,
            "network namespaces cannot be made (\(TestNetwork.unavailableReason ?? "")): NetworkFailureTests were skipped (run as root with iproute2)")
        #expect(
            NetworkPostgres.binaries != nil,
            "PostgreSQL is not installed: LeaderDatabaseCutTests were skipped (scripts/postgres install)")
        #expect(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"),
            "Chromium or chromedriver is not installed: the browser tests cannot run (scripts/browser-deps)")
        #expect(
            FileManager.default.fileExists(atPath: Self.iosKit),
            "no iOS kit at \(Self.iosKit): the Apple-only code is not type-checked (set SWITCHBOARD_IOS_KIT)")
        #expect(
            Self.environment["SWITCHBOARD_SOAK"] == "1",
            "SWITCHBOARD_SOAK is not 1: the soak suites were skipped (scripts/test sets it for the whole suite)")
    }
}
