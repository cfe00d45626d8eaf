import SwitchboardProtocol
import Testing

/// Text that others see — nicknames, push titles and bodies — shows what it says (issue 28): a
/// caller cannot reorder or hide what the callee's lock screen shows. Each class of character
/// that could is refused; text in any script, and emoji sequences, pass.
struct DisplayTextTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var testDescription: String { name }
    }

    static let refused: [Case] = [
        Case(name: "right-to-left override U+202E", text: "Bank\u{202E}gnp.exe"),
        Case(name: "left-to-right override U+202D", text: "a\u{202D}b"),
        Case(name: "embeddings U+202A, U+202B and their end U+202C", text: "\u{202A}a\u{202B}b\u{202C}"),
        Case(name: "right-to-left isolate U+2067", text: "Alice\u{2067}ecilA"),
        Case(name: "first-strong isolate U+2068 and its end U+2069", text: "\u{2068}x\u{2069}"),
        Case(name: "left-to-right isolate U+2066", text: "\u{2066}x"),
        Case(name: "right-to-left mark U+200F", text: "Alice\u{200F}"),
        Case(name: "left-to-right mark U+200E", text: "\u{200E}Alice"),
        Case(name: "Arabic letter mark U+061C", text: "\u{061C}Alice"),
        Case(name: "zero-width space U+200B", text: "Your bank\u{200B}"),
        Case(name: "word joiner U+2060", text: "a\u{2060}b"),
        Case(name: "byte-order mark U+FEFF", text: "\u{FEFF}Alice"),
        Case(name: "soft hyphen U+00AD", text: "Al\u{00AD}ice"),
        Case(name: "invisible tag characters (Cf)", text: "Alice\u{E0041}\u{E0042}"),
        Case(name: "invisible times U+2062 (Cf)", text: "a\u{2062}b"),
        Case(name: "interlinear annotation U+FFF9 (Cf)", text: "a\u{FFF9}b\u{FFFB}"),
        Case(name: "line separator U+2028", text: "Missed call\u{2028}from your bank"),
        Case(name: "paragraph separator U+2029", text: "a\u{2029}b"),
        Case(name: "a control character", text: "a\u{7}b"),
        Case(name: "a newline", text: "line\nbreak"),
        Case(name: "a C1 control", text: "a\u{85}b"),
    ]

    static let allowed: [Case] = [
        Case(name: "Latin with accents", text: "Zoë Ångström"),
        Case(name: "combining marks", text: "e\u{0301}"),
        Case(name: "Arabic", text: "سارة"),
        Case(name: "Hebrew", text: "שרה"),
        Case(name: "Chinese", text: "王小明"),
        Case(name: "an emoji sequence with zero-width joiners", text: "👨‍👩‍👧 Family"),
        Case(name: "a flag", text: "🇫🇷"),
        Case(name: "Persian with a zero-width non-joiner", text: "می‌خواهم"),
        Case(name: "spaces and punctuation", text: "Dr. Alice (work) – 9:00"),
    ]

    @Test(arguments: refused) func refusedEverywhereText(_ item: Case) {
        #expect(!item.text.isBoundedText(maxBytes: 512))
        #expect(PushConfig(title: item.text).problem?.code == .invalidPushConfig)
        #expect(PushConfig(body: item.text).problem?.code == .invalidPushConfig)
        #expect(UserProfile(userId: "alice", nickname: item.text).displayableNickname == nil)
    }

    @Test(arguments: allowed) func allowedText(_ item: Case) {
        #expect(item.text.isBoundedText(maxBytes: 512))
        #expect(PushConfig(title: item.text, body: item.text).problem == nil)
        #expect(UserProfile(userId: "alice", nickname: item.text).displayableNickname == item.text)
    }
}
