import Foundation
@testable import SwitchboardProtocol
import SwitchboardTools
import Testing

struct UserSigTests {
    static let app: SdkAppID = 1_400_000_001
    static let secret = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e"
    static let issued: Int64 = 1_767_225_600

    /// Made by the project's own Python implementation of the TLS-sig v2 format
    /// (Fixtures/tls_sig_api_v2.py, not Tencent's code): `gen 1400000001 <secret> alice 86400 1767225600`.
    /// Tencent's own generator is tested in ``verifiesSigsFromTencentsOwnGenerator()``.
    static let pythonSig =
        "eJyrVgrxCdYrSy1SslJQMtIzUNJRAItkpqTmlWSmZUIkEnMyk1NhUsUp2YkFBZkpQAlDEwMIMITKpVYUZBalAmUszIBSUMGSzFyQkKG5mbmRkakZXLw4Mx1keLGruWN*lJGzcXGkd0RZWXmkqWNeSoqFdkViYnaBr0lZaaZRiWWufmagf7qtUi0AA58yYQ__"

    @Test func verifiesASigFromTheProjectsPythonGenerator() throws {
        let fields = try UserSig.verify(
            Self.pythonSig, sdkAppID: Self.app, secretKey: Self.secret, userID: "alice", now: Self.issued + 10)
        #expect(fields.identifier == "alice")
        #expect(fields.sdkAppID == Self.app)
        #expect(fields.time == Self.issued)
        #expect(fields.expire == 86_400)
        #expect(fields.userbuf == nil)
    }

    @Test func generatesAndVerifies() throws {
        let sig = UserSig.generate(sdkAppID: Self.app, secretKey: Self.secret, userID: "bob_2", time: Self.issued)
        let fields = try UserSig.verify(sig, sdkAppID: Self.app, secretKey: Self.secret, userID: "bob_2", now: Self.issued)
        #expect(fields.expire == UserSig.defaultExpire)
        #expect(!sig.contains("+") && !sig.contains("/") && !sig.contains("="))
    }

    @Test func userbufIsSignedToo() throws {
        let sig = UserSig.generate(
            sdkAppID: Self.app, secretKey: Self.secret, userID: "alice", time: Self.issued, userbuf: Data("room-1".utf8))
        let fields = try UserSig.verify(sig, sdkAppID: Self.app, secretKey: Self.secret, userID: "alice", now: Self.issued)
        #expect(fields.userbuf == Data("room-1".utf8).base64EncodedString())
    }

    struct Rejection: CustomTestStringConvertible, Sendable {
        var name: String
        var sig: String
        var app: SdkAppID = UserSigTests.app
        var secret: String = UserSigTests.secret
        var user: String? = "alice"
        var now: Int64 = UserSigTests.issued + 10
        var code: SwitchboardError.Code
        var testDescription: String { name }
    }

    static let rejections: [Rejection] = {
        let good = pythonSig
        let expired = UserSig.generate(sdkAppID: app, secretKey: secret, userID: "alice", expire: 60, time: issued)
        let future = UserSig.generate(sdkAppID: app, secretKey: secret, userID: "alice", time: issued + 3600)
        let forged = UserSig.generate(sdkAppID: app, secretKey: "not-the-secret", userID: "alice", time: issued)
        let otherApp = UserSig.generate(sdkAppID: 1_400_000_002, secretKey: secret, userID: "alice", time: issued)
        return [
            Rejection(name: "empty", sig: "", code: .userSigMalformed),
            Rejection(name: "not base64", sig: "!!!%%%", code: .userSigMalformed),
            Rejection(name: "base64 but not zlib", sig: "aGVsbG8gd29ybGQ_", code: .userSigMalformed),
            Rejection(name: "truncated", sig: String(good.prefix(40)), code: .userSigMalformed),
            Rejection(name: "too long", sig: String(repeating: "A", count: 5000), code: .userSigMalformed),
            Rejection(name: "forged", sig: forged, code: .userSigBadSignature),
            Rejection(name: "wrong secret", sig: good, secret: "another-secret", code: .userSigBadSignature),
            Rejection(name: "expired", sig: expired, now: issued + 61, code: .userSigExpired),
            Rejection(name: "not yet valid", sig: future, now: issued, code: .userSigNotYetValid),
            Rejection(name: "wrong app", sig: otherApp, code: .userSigWrongApp),
            Rejection(name: "wrong user", sig: good, user: "mallory", code: .userSigWrongUser),
        ]
    }()

    @Test(arguments: rejections)
    func rejects(_ rejection: Rejection) {
        #expect(throws: SwitchboardError.self) {
            _ = try UserSig.verify(
                rejection.sig, sdkAppID: rejection.app, secretKey: rejection.secret, userID: rejection.user,
                now: rejection.now)
        }
        do {
            _ = try UserSig.verify(
                rejection.sig, sdkAppID: rejection.app, secretKey: rejection.secret, userID: rejection.user,
                now: rejection.now)
        } catch {
            #expect(error.code == rejection.code)
        }
    }

    @Test func allowsASmallClockSkew() throws {
        let sig = UserSig.generate(sdkAppID: Self.app, secretKey: Self.secret, userID: "alice", time: Self.issued + 60)
        _ = try UserSig.verify(sig, sdkAppID: Self.app, secretKey: Self.secret, userID: "alice", now: Self.issued)
    }

    @Test func numericStringFieldsAreAccepted() throws {
        // Some generators write TLS.time and TLS.expire as strings.
        let mac = try #require(Self.hmac("alice", time: Self.issued, expire: 600))
        let json = """
            {"TLS.ver":"2.0","TLS.identifier":"alice","TLS.sdkappid":"1400000001","TLS.expire":"600","TLS.time":"\(Self.issued)","TLS.sig":"\(mac)"}
            """
        let sig = Self.encode(json)
        let fields = try UserSig.verify(sig, sdkAppID: Self.app, secretKey: Self.secret, userID: "alice", now: Self.issued)
        #expect(fields.expire == 600)
    }

    /// Times and lifetimes are the client's numbers: the extremes are answered, never trapped on.
    @Test(arguments: [
        (Self.issued, Int64.max, nil as SwitchboardError.Code?),
        (Int64.max, Int64.max, .userSigNotYetValid),
        (Int64.min, Int64.max, .userSigExpired),
        (Int64.min, Int64.min, .userSigExpired),
        (Self.issued, Int64.min, .userSigExpired),
        (Int64.max, Int64.min, .userSigNotYetValid),
    ], [false, true])
    func extremeTimesAreAnsweredWithoutTrapping(times: (Int64, Int64, SwitchboardError.Code?), asStrings: Bool) throws {
        let (time, expire, code) = times
        let mac = try #require(Self.hmac("alice", time: time, expire: expire))
        let quote = asStrings ? "\"" : ""
        let json = """
            {"TLS.ver":"2.0","TLS.identifier":"alice","TLS.sdkappid":1400000001,\
            "TLS.expire":\(quote)\(expire)\(quote),"TLS.time":\(quote)\(time)\(quote),"TLS.sig":"\(mac)"}
            """
        do {
            let fields = try UserSig.verify(
                Self.encode(json), sdkAppID: Self.app, secretKey: Self.secret, userID: "alice", now: Self.issued)
            #expect(code == nil)
            #expect(fields.expiresAt == (expire > 0 && time > 0 ? Int64.max : time &+ expire))
        } catch {
            #expect(error.code == code)
        }
    }

    /// zlib streams are inflated whole and bounded: one cut short by even its checksum's last byte
    /// is not a UserSig, and nothing inflates past 16 KiB.
    @Test func zlibStreamsAreWholeAndBounded() throws {
        let json = Data(#"{"TLS.ver":"2.0"}"#.utf8)
        let compressed = zlibCompress(json)
        #expect(zlibDecompress(compressed, limit: 16 * 1024) == json)
        for cut in 1...4 {
            #expect(zlibDecompress(compressed.dropLast(cut), limit: 16 * 1024) == nil, "cut \(cut)")
        }
        var damaged = compressed
        damaged[damaged.count - 1] ^= 0x01
        #expect(zlibDecompress(damaged, limit: 16 * 1024) == nil)

        let full = Data(repeating: 0x20, count: 16 * 1024)
        #expect(zlibDecompress(zlibCompress(full), limit: 16 * 1024) == full)
        #expect(zlibDecompress(zlibCompress(full + [0x20]), limit: 16 * 1024) == nil)

        let wire = try #require(UserSig.decodeBase64URL(Self.pythonSig))
        let cutSig = UserSig.encodeBase64URL(wire.dropLast())
        #expect(throws: SwitchboardError(.userSigMalformed, "UserSig is not zlib data")) { _ = try UserSig.decode(cutSig) }
    }

    @Test func missingFieldIsMalformed() {
        let sig = Self.encode(#"{"TLS.ver":"2.0","TLS.identifier":"alice","TLS.sdkappid":1400000001}"#)
        #expect(throws: SwitchboardError(.userSigMalformed, "UserSig has no integer TLS.time")) {
            _ = try UserSig.decode(sig)
        }
    }

    /// Both directions against the project's Python implementation, run live.
    @Test(.enabled(if: UserSigTests.python != nil)) func interoperatesWithTheProjectsPythonGenerator() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let pythonMade = try Self.runPython(["gen", "1400000001", Self.secret, "carol-9", "600", String(now), "buf"])
        let fields = try UserSig.verify(pythonMade, sdkAppID: Self.app, secretKey: Self.secret, userID: "carol-9", now: now)
        #expect(fields.userbuf == Data("buf".utf8).base64EncodedString())

        let swiftMade = UserSig.generate(sdkAppID: Self.app, secretKey: Self.secret, userID: "dave", time: now)
        #expect(try Self.runPython(["verify", "1400000001", Self.secret, swiftMade]) == "dave")
    }

    /// Sigs made just now by Tencent's own generator (PyPI `tls-sig-api-v2`, module `TLSSigAPIv2`,
    /// which signs with the current time): `scripts/test` installs it in `.build-venv` and names
    /// that Python in `SWITCHBOARD_TENCENT_PYTHON`.
    @Test(.enabled(if: UserSigTests.tencentPython != nil, "needs SWITCHBOARD_TENCENT_PYTHON (scripts/test sets it)"))
    func verifiesSigsFromTencentsOwnGenerator() throws {
        let script = """
            import sys, TLSSigAPIv2
            api = TLSSigAPIv2.TLSSigAPIv2(int(sys.argv[1]), sys.argv[2])
            print(api.gen_sig("erin_7", 600))
            print(api.gen_sig_with_userbuf("frank", 86400, b"room-9"))
            """
        let before = Int64(Date().timeIntervalSince1970)
        let output = try Self.run(Self.tencentPython!, ["-c", script, "1400000001", Self.secret])
        let after = Int64(Date().timeIntervalSince1970)
        let sigs = output.split(separator: "\n").map(String.init)
        try #require(sigs.count == 2)

        let plain = try UserSig.verify(sigs[0], sdkAppID: Self.app, secretKey: Self.secret, userID: "erin_7", now: after)
        #expect(plain.identifier == "erin_7" && plain.sdkAppID == Self.app && plain.expire == 600)
        #expect((before...after).contains(plain.time))
        #expect(plain.userbuf == nil)
        let withBuffer = try UserSig.verify(sigs[1], sdkAppID: Self.app, secretKey: Self.secret, userID: "frank", now: after)
        #expect(withBuffer.userbuf == Data("room-9".utf8).base64EncodedString())
        #expect(withBuffer.expire == 86_400)

        // And each of the checks holds for them: another secret, user or app is refused.
        Self.expectRefusal(.userSigBadSignature) {
            _ = try UserSig.verify(sigs[0], sdkAppID: Self.app, secretKey: "another-secret", userID: "erin_7", now: after)
        }
        Self.expectRefusal(.userSigWrongUser) {
            _ = try UserSig.verify(sigs[0], sdkAppID: Self.app, secretKey: Self.secret, userID: "frank", now: after)
        }
        Self.expectRefusal(.userSigWrongApp) {
            _ = try UserSig.verify(sigs[0], sdkAppID: 1_400_000_002, secretKey: Self.secret, userID: "erin_7", now: after)
        }
        Self.expectRefusal(.userSigExpired) {
            _ = try UserSig.verify(sigs[0], sdkAppID: Self.app, secretKey: Self.secret, userID: "erin_7", now: after + 601)
        }
    }

    // MARK: helpers

    static func expectRefusal(
        _ code: SwitchboardError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        #expect(sourceLocation: sourceLocation) { try body() } throws: { ($0 as? SwitchboardError)?.code == code }
    }

    static let tencentPython: String? = ProcessInfo.processInfo.environment["SWITCHBOARD_TENCENT_PYTHON"].flatMap {
        $0.isEmpty ? nil : $0
    }

    static let python: String? = ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    static func runPython(_ arguments: [String]) throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls_sig_api_v2.py")
        return try run(python!, [script.path] + arguments)
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = try ChildProcess(executable: URL(fileURLWithPath: executable), arguments: arguments, output: .pipe)
        let output = process.output!.readDataToEndOfFile()
        let termination = process.waitForExit()
        guard termination == .exit(0) else {
            throw SwitchboardError(.userSigBadSignature, "\(executable) ended with \(termination)")
        }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func hmac(_ user: String, time: Int64, expire: Int64) -> String? {
        UserSig.hmac(secretKey: secret, identifier: user, sdkAppID: app, time: time, expire: expire, userbuf: nil)
    }

    /// A hand-made UserSig: zlib and the TLS base64 alphabet around arbitrary JSON.
    static func encode(_ json: String) -> String {
        UserSig.encodeBase64URL(zlibCompress(Data(json.utf8)))
    }
}

/// Sums and differences of numbers from the other side of the wire stop at the ends of Int64.
struct SaturatingArithmeticTests {
    @Test(arguments: [
        (Int64.max, Int64(1), Int64.max), (Int64.min, Int64(-1), Int64.min), (Int64(5), Int64(-7), Int64(-2)),
        (Int64.max, Int64.max, Int64.max), (Int64.min, Int64.min, Int64.min),
    ])
    func adding(a: Int64, b: Int64, expected: Int64) {
        #expect(a.clampedAdding(b) == expected)
    }

    @Test(arguments: [
        (Int64.min, Int64(1), Int64.min), (Int64.max, Int64(-1), Int64.max), (Int64(5), Int64(7), Int64(-2)),
        (Int64(0), Int64.min, Int64.max), (Int64(-1), Int64.max, Int64.min),
    ])
    func subtracting(a: Int64, b: Int64, expected: Int64) {
        #expect(a.clampedSubtracting(b) == expected)
    }
}
