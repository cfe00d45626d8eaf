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
        try await contract.run(check)
    }
}
#endif
