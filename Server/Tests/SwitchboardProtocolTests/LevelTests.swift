import SwitchboardProtocol
import Testing

struct LevelTests {
    @Test(arguments: [
        (0.0, 0, NetworkQuality.excellent), (0.9, 99, .excellent), (1.0, 50, .good), (0.5, 100, .good),
        (2.9, 199, .good), (3.0, 10, .poor), (0.0, 200, .poor), (7.9, 399, .poor), (8.0, 0, .bad),
        (0.0, 400, .bad), (14.9, 799, .bad), (15.0, 0, .veryBad), (0.0, 800, .veryBad), (100.0, 5000, .veryBad),
        // The worse of the two decides.
        (0.1, 450, .bad), (9.0, 20, .bad),
    ])
    func networkQualityThresholds(loss: Double, rtt: Int, expected: NetworkQuality) {
        #expect(NetworkQuality.from(packetLoss: loss, rtt: rtt) == expected)
    }

    @Test(arguments: [
        (0, true, VolumeLevel.mute), (1, true, VolumeLevel.low), (25, true, VolumeLevel.low), (26, true, .medium), (50, true, .medium),
        (51, true, .high), (75, true, .high), (76, true, .peak), (100, true, .peak), (150, true, .peak),
        (90, false, .mute), (-3, true, .mute),
    ])
    func volumeLevels(level: Int, microphoneOn: Bool, expected: VolumeLevel) {
        #expect(VolumeLevel.from(audioLevel: level, microphoneOn: microphoneOn) == expected)
    }

    @Test func levelsAreOrdered() {
        let qualities: [NetworkQuality] = [.excellent, .good, .poor, .bad, .veryBad, .down]
        #expect(qualities == qualities.sorted())
        let volumes: [VolumeLevel] = [.mute, .low, .medium, .high, .peak]
        #expect(volumes == volumes.sorted())
    }
}
