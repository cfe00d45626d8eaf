#if GStreamer
import Switchboard

/// What a member sends for a given send budget (``SendRateController``'s rate: audio and video
/// together, packet headers included): the camera's size and frame rate, the video encoder's
/// bitrate, and the microphone's Opus bitrate and frame length. A pure function of the budget,
/// the app's quality and the profile sent before (for hysteresis).
///
/// Degradation follows WebRTC's "balanced" preference, in this order: the picture halves in size
/// (360p → 180p → 90p for the 360p quality), then its frame rate halves, and only then audio goes
/// to its economy profile (16 kbps Opus instead of 32). Its frame length stays 20 ms although
/// longer frames would save headers: one change fewer to a playing encoder while a narrow-link
/// stall after the audio switch is not understood (docs/BENCHMARKS.md). Lowering the bitrate
/// alone does not work: VP8 at its coarsest quantizer still makes about 0.07–0.12 bits per pixel
/// per frame of the test pattern (measured: 237 kbps at 360p and 15 fps for a target of 20,
/// 76 at 180p, 27 at 90p), so a 360p camera floods a 64 kbit/s link whatever its target.
struct SendProfile: Equatable, Sendable {
    struct Audio: Equatable, Sendable {
        var kbps: Int

        static let full = Audio(kbps: 32)
        static let economy = Audio(kbps: 16)
        /// Opus frame length, ms (one RTP packet each).
        static let frameMs = 20

        /// Its cost on the wire, kbps: the Opus bitrate and a packet's headers per frame.
        var wireKbps: Int { kbps + SendProfile.packetOverheadBits * (1000 / Self.frameMs) / 1000 }
    }

    var width: Int
    var height: Int
    var frameRate: Int
    var videoKbps: Int
    var audio: Audio

    /// Per packet: IPv4 20, UDP 8, RTP 12, SRTP's tag 10, header extensions and padding about 10 bytes.
    static let packetOverheadBits = 60 * 8
    /// The share of the quality's bitrate per pixel and frame a step needs: a size and frame
    /// rate are sent when the video bitrate reaches this share of what the quality gives as many
    /// pixels a second (for the 360p quality, 0.1 bits per pixel: about what VP8 makes at its
    /// coarsest, measured above).
    static let minimumShare = 0.7
    /// The smallest picture height the ladder goes down to (or the last halving above it).
    static let smallestHeight = 90
    /// A step up (a larger picture, a higher frame rate, full audio) is taken only when the budget
    /// exceeds what the step needs by this factor: the rate controller probes upwards until a queue
    /// appears and then cuts by 30 %, and the profile must not flap with it (each new size costs a
    /// key frame).
    static let stepUpMargin = 1.3

    /// The least budget any profile runs on: the last step's need. The rate controller's floor.
    static func minimumBudget(for quality: VideoQuality) -> Int { steps(for: quality).last!.neededKbps }

    /// The largest budget worth sending: the quality's own profile with full audio.
    static func maximumBudget(for quality: VideoQuality) -> Int {
        quality.bitrateKbps + Audio.full.wireKbps + videoOverheadKbps(frameRate: quality.frameRate)
    }

    /// The quality's own profile: what is sent before any receiver report, and on a wide path.
    static func full(_ quality: VideoQuality) -> SendProfile {
        choose(budgetKbps: maximumBudget(for: quality), quality: quality, previous: nil)
    }

    /// The profile for a budget: the best step the budget carries (a step above `previous` only
    /// with ``stepUpMargin`` to spare), its video bitrate what the budget leaves after audio and
    /// headers, at most the quality's. Below every step, the last one.
    static func choose(budgetKbps: Int, quality: VideoQuality, previous: SendProfile?) -> SendProfile {
        let steps = steps(for: quality)
        let previousIndex = previous.flatMap { previous in steps.firstIndex { $0.matches(previous) } }
        let index =
            steps.indices.first { index in
                let margin = previousIndex.map { index < $0 } == true ? stepUpMargin : 1
                return Double(budgetKbps) >= Double(steps[index].neededKbps) * margin
            } ?? steps.count - 1
        let step = steps[index]
        let left = budgetKbps - step.audio.wireKbps - videoOverheadKbps(frameRate: step.frameRate)
        return SendProfile(
            width: step.width, height: step.height, frameRate: step.frameRate,
            videoKbps: min(quality.bitrateKbps, max(step.minimumVideoKbps, left)), audio: step.audio)
    }

    /// One rung of the ladder, best first.
    struct Step: Equatable {
        var width: Int
        var height: Int
        var frameRate: Int
        var audio: Audio
        var minimumVideoKbps: Int

        init(width: Int, height: Int, frameRate: Int, audio: Audio, quality: VideoQuality) {
            (self.width, self.height, self.frameRate, self.audio) = (width, height, frameRate, audio)
            let share = Double(width * height * frameRate) / Double(quality.width * quality.height * quality.frameRate)
            minimumVideoKbps = Int((Double(quality.bitrateKbps) * SendProfile.minimumShare * share).rounded(.up))
        }

        var neededKbps: Int { minimumVideoKbps + audio.wireKbps + SendProfile.videoOverheadKbps(frameRate: frameRate) }

        func matches(_ profile: SendProfile) -> Bool {
            (width, height, frameRate, audio) == (profile.width, profile.height, profile.frameRate, profile.audio)
        }
    }

    /// The quality's size halved down to ``smallestHeight`` at its frame rate, then the smallest
    /// at half the rate, then that with economy audio.
    static func steps(for quality: VideoQuality) -> [Step] {
        var steps: [Step] = []
        var (width, height) = (quality.width, quality.height)
        while true {
            steps.append(Step(width: width, height: height, frameRate: quality.frameRate, audio: .full, quality: quality))
            guard height / 2 >= smallestHeight else { break }
            // Even sizes: I420 halves the chroma planes.
            (width, height) = (width / 2 / 2 * 2, height / 2 / 2 * 2)
        }
        let smallest = steps.last!
        let slowRate = max(1, quality.frameRate / 2)
        return steps + [Audio.full, .economy].map { audio in
            Step(width: smallest.width, height: smallest.height, frameRate: slowRate, audio: audio, quality: quality)
        }
    }

    /// Headers of one packet per frame (a frame at these rates fits in one).
    static func videoOverheadKbps(frameRate: Int) -> Int { frameRate * packetOverheadBits / 1000 }
}
#endif
