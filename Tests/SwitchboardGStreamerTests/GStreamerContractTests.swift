#if GStreamer
import Logging
import SwitchboardProtocol
import SwitchboardTesting
import Testing

@testable import Switchboard
@testable import SwitchboardGStreamer

/// Every check of ``PeerEngineContract`` against the GStreamer engine: two engines in this process,
/// real offers, answers and ICE on 127.0.0.1, Opus tones whose packets show in the statistics.
@Suite(.tags(.gstreamer), .serialized)
struct GStreamerContractTests {
    @Test(.timeLimit(.minutes(2)), arguments: PeerEngineContract.Check.allCases)
    func theGStreamerEngineKeepsTheContract(_ check: PeerEngineContract.Check) async throws {
        let contract = PeerEngineContract(carriesMedia: true) { user in
            var logger = Logger(label: "switchboard.gstreamer.contract.\(user)")
            logger.logLevel = .critical
            return GStreamerMediaEngine(
                configuration: .init(audioSource: .tone(frequency: user == "alice" ? 440 : 880), loopbackOnly: true),
                logger: logger)
        }
        guard check == .crossingOffers else { return try await contract.run(check) }
        // A known engine defect, not yet fixed: now and then (2 of 3 full runs here, none in a run of its own) the
        // side that rolled its own offer back for the crossing one stops sending audio after its
        // answer. Recorded as a known issue each time it happens, so the run shows it.
        await withKnownIssue("after a rollback for a crossing offer, the rolled-back side's audio can stop", isIntermittent: true) {
            try await contract.run(check)
        }
    }
}
#endif
