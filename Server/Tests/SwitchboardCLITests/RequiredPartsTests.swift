import Foundation
import SwitchboardTestServers
import Testing

/// Suites that need an outside part (PostgreSQL, Janus, the GStreamer engine, Tencent's generator, the
/// soak's minute) skip where it is missing, so that `swift test` works on any machine. In CI
/// (`CI=true`, or `SWITCHBOARD_REQUIRE_ALL=1`) a skip would hide a whole area from the run: there
/// each missing part fails here, by name.
struct RequiredPartsTests {
    static let environment = ProcessInfo.processInfo.environment
    static let required = environment["CI"] == "true" || environment["SWITCHBOARD_REQUIRE_ALL"] == "1"

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
            TestNetwork.unavailableReason == nil,
            "network namespaces cannot be made (\(TestNetwork.unavailableReason ?? "")): NetworkFailureTests were skipped (run as root with iproute2)")
        #expect(
            NetworkPostgres.binaries != nil,
            "PostgreSQL is not installed: LeaderDatabaseCutTests were skipped (scripts/postgres install)")
        #expect(
            Self.environment["SWITCHBOARD_SOAK"] == "1",
            "SWITCHBOARD_SOAK is not 1: the soak suites were skipped (scripts/test sets it for the whole suite)")
    }
}
