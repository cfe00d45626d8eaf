#if GStreamer
import Switchboard
import Testing

@testable import SwitchboardGStreamer

/// What a member sends for a send budget (no media: the budgets are made up).
struct SendProfileTests {
    struct Row: Sendable, CustomStringConvertible {
        var budget: Int
        var previous: SendProfile?
        var size: String
        var frameRate: Int
        var videoKbps: Int
        var audio: SendProfile.Audio
        var description: String { "\(budget) kbps after \(previous.map { "\($0.width)×\($0.height)@\($0.frameRate)" } ?? "none")" }
    }

    static func profile(_ width: Int, _ height: Int, _ frameRate: Int, _ audio: SendProfile.Audio) -> SendProfile {
        SendProfile(width: width, height: height, frameRate: frameRate, videoKbps: 0, audio: audio)
    }

    /// The 360p quality (500 kbps) from its ceiling down, with no profile before: size first, then
    /// frame rate, then audio; the video gets what audio and headers leave.
    static let descending: [Row] = [
        Row(budget: 563, size: "640×360", frameRate: 15, videoKbps: 500, audio: .full),
        Row(budget: 413, size: "640×360", frameRate: 15, videoKbps: 350, audio: .full),
        Row(budget: 412, size: "320×180", frameRate: 15, videoKbps: 349, audio: .full),
        Row(budget: 300, size: "320×180", frameRate: 15, videoKbps: 237, audio: .full),
        Row(budget: 150, size: "160×90", frameRate: 15, videoKbps: 87, audio: .full),
        Row(budget: 85, size: "160×90", frameRate: 15, videoKbps: 22, audio: .full),
        Row(budget: 84, size: "160×90", frameRate: 7, videoKbps: 25, audio: .full),
        Row(budget: 70, size: "160×90", frameRate: 7, videoKbps: 11, audio: .full),
        Row(budget: 69, size: "160×90", frameRate: 7, videoKbps: 26, audio: .economy),
        Row(budget: 54, size: "160×90", frameRate: 7, videoKbps: 11, audio: .economy),
        // Below every step: the last one, its video at the step's least.
        Row(budget: 10, size: "160×90", frameRate: 7, videoKbps: 11, audio: .economy),
    ]

    /// A step up needs 30 % more than the step itself; a step down none.
    static let hysteresis: [Row] = [
        Row(budget: 90, previous: profile(160, 90, 7, .economy), size: "160×90", frameRate: 7, videoKbps: 47, audio: .economy),
        Row(budget: 91, previous: profile(160, 90, 7, .economy), size: "160×90", frameRate: 7, videoKbps: 32, audio: .full),
        Row(budget: 151, previous: profile(160, 90, 15, .full), size: "160×90", frameRate: 15, videoKbps: 88, audio: .full),
        Row(budget: 197, previous: profile(160, 90, 15, .full), size: "320×180", frameRate: 15, videoKbps: 134, audio: .full),
        Row(budget: 150, previous: profile(320, 180, 15, .full), size: "160×90", frameRate: 15, videoKbps: 87, audio: .full),
        Row(budget: 413, previous: profile(640, 360, 15, .full), size: "640×360", frameRate: 15, videoKbps: 350, audio: .full),
        Row(budget: 536, previous: profile(320, 180, 15, .full), size: "320×180", frameRate: 15, videoKbps: 473, audio: .full),
        Row(budget: 537, previous: profile(320, 180, 15, .full), size: "640×360", frameRate: 15, videoKbps: 474, audio: .full),
    ]

    @Test(arguments: descending + hysteresis) func theBudgetChoosesTheProfile(_ row: Row) {
        let profile = SendProfile.choose(budgetKbps: row.budget, quality: .p360, previous: row.previous)
        #expect("\(profile.width)×\(profile.height)" == row.size)
        #expect(profile.frameRate == row.frameRate)
        #expect(profile.videoKbps == row.videoKbps)
        #expect(profile.audio == row.audio)
    }

    @Test func audioOnTheWireCountsItsPacketsHeaders() {
        // 50 packets a second of 60 bytes of headers: 24 kbps on top of 32 or 16.
        #expect(SendProfile.Audio.full.wireKbps == 56)
        #expect(SendProfile.Audio.economy.wireKbps == 40)
        #expect(SendProfile.minimumBudget(for: .p360) == 54)
        #expect(SendProfile.maximumBudget(for: .p360) == 563)
    }

    /// Each quality halves down to 90 lines or the last halving above them, then slows, then
    /// economizes; its ceiling is its own profile, which a budget climbing from the floor reaches
    /// (each step's margin included), and a budget falling from it passes every step.
    @Test(arguments: [
        (VideoQuality.p360, ["640×360@15", "320×180@15", "160×90@15", "160×90@7", "160×90@7 economy"]),
        (.p540, ["960×540@15", "480×270@15", "240×134@15", "240×134@7", "240×134@7 economy"]),
        (.p720, ["1280×720@15", "640×360@15", "320×180@15", "160×90@15", "160×90@7", "160×90@7 economy"]),
        (.p1080, ["1920×1080@15", "960×540@15", "480×270@15", "240×134@15", "240×134@7", "240×134@7 economy"]),
    ])
    func everyQualityHasALadderItClimbsBackUp(quality: VideoQuality, ladder: [String]) {
        let steps = SendProfile.steps(for: quality).map {
            "\($0.width)×\($0.height)@\($0.frameRate)" + ($0.audio == .economy ? " economy" : "")
        }
        #expect(steps == ladder)
        let full = SendProfile.full(quality)
        #expect(full == SendProfile(width: quality.width, height: quality.height, frameRate: quality.frameRate, videoKbps: quality.bitrateKbps, audio: .full))
        var profile = SendProfile.choose(budgetKbps: SendProfile.minimumBudget(for: quality), quality: quality, previous: nil)
        var seen = Set<String>()
        for budget in stride(from: SendProfile.minimumBudget(for: quality), through: SendProfile.maximumBudget(for: quality), by: 1) {
            profile = SendProfile.choose(budgetKbps: budget, quality: quality, previous: profile)
            seen.insert("\(profile.width)×\(profile.height)@\(profile.frameRate)" + (profile.audio == .economy ? " economy" : ""))
        }
        #expect(profile == full)
        #expect(seen == Set(ladder))
    }
}
#endif
