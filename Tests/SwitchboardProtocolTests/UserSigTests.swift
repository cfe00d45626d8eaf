import Foundation
@testable import SwitchboardProtocol
import Testing

struct UserSigTests {
    static let app: SdkAppID = 1_400_000_001
    static let secret = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e"
    static let issued: Int64 = 1_767_225_600

    /// Made by the Python implementation of TLSSigAPIv2 (Fixtures/tls_sig_api_v2.py):
    /// `gen 1400000001 <secret> alice 86400 1767225600`.
    static let pythonSig =
        "eJyrVgrxCdYrSy1SslJQMtIzUNJRAItkpqTmlWSmZUIkEnMyk1NhUsUp2YkFBZkpQAlDEwMIMITKpVYUZBalAmUszIBSUMGSzFyQkKG5mbmRkakZXLw4Mx1keLGruWN*lJGzcXGkd0RZWXmkqWNeSoqFdkViYnaBr0lZaaZRiWWufmagf7qtUi0AA58yYQ__"

    @Test func verifiesASigFromTheReferenceGenerator() throws {
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

    @Test func missingFieldIsMalformed() {
        let sig = Self.encode(#"{"TLS.ver":"2.0","TLS.identifier":"alice","TLS.sdkappid":1400000001}"#)
        #expect(throws: SwitchboardError(.userSigMalformed, "UserSig has no integer TLS.time")) {
            _ = try UserSig.decode(sig)
        }
    }

    /// Both directions against the Python implementation, run live.
    @Test(.enabled(if: UserSigTests.python != nil)) func interoperatesWithThePythonGenerator() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let pythonMade = try Self.runPython(["gen", "1400000001", Self.secret, "carol-9", "600", String(now), "buf"])
        let fields = try UserSig.verify(pythonMade, sdkAppID: Self.app, secretKey: Self.secret, userID: "carol-9", now: now)
        #expect(fields.userbuf == Data("buf".utf8).base64EncodedString())

        let swiftMade = UserSig.generate(sdkAppID: Self.app, secretKey: Self.secret, userID: "dave", time: now)
        #expect(try Self.runPython(["verify", "1400000001", Self.secret, swiftMade]) == "dave")
    }

    // MARK: helpers

    static let python: String? = ["/usr/bin/python3", "/usr/local/bin/python3"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    static func runPython(_ arguments: [String]) throws -> String {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/tls_sig_api_v2.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python!)
        process.arguments = [script.path] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SwitchboardError(.userSigBadSignature, "python refused") }
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
