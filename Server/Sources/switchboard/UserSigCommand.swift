import ArgumentParser
import Foundation
import SwitchboardProtocol

struct UserSigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "usersig", abstract: "Make and check UserSigs (Tencent TLS-sig v2).",
        subcommands: [Generate.self, Verify.self])

    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "gen", abstract: "Print a UserSig.")

        @Option(name: .customLong("app-id"), help: "The app's sdkAppID.")
        var appID: Int64

        @Option(help: "The app's secretKey.")
        var secret: String

        @Option(help: "The userID to sign for.")
        var user: String

        @Option(help: "Lifetime in seconds (default 180 days).")
        var expire: Int64 = UserSig.defaultExpire

        func run() throws {
            guard UserID.isValid(user) else {
                throw ValidationError("userID must be 1-32 letters, digits, '-' or '_'")
            }
            guard expire > 0 else { throw ValidationError("expire must be positive") }
            print(UserSig.generate(sdkAppID: SdkAppID(appID), secretKey: secret, userID: user, expire: expire))
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Decode and check a UserSig; exits non-zero with the reason when it is not valid.")

        @Option(name: .customLong("app-id"), help: "The app's sdkAppID.")
        var appID: Int64

        @Option(help: "The app's secretKey.")
        var secret: String

        @Option(help: "The UserSig to check.")
        var sig: String

        @Option(help: "The userID it must be for (any when left out).")
        var user: String?

        func run() throws {
            let now = Int64(Date().timeIntervalSince1970)
            if let fields = try? UserSig.decode(sig) {
                print("identifier \(fields.identifier)")
                print("sdkappid   \(fields.sdkAppID)")
                print("time       \(fields.time) (\(Date(timeIntervalSince1970: TimeInterval(fields.time))))")
                print("expire     \(fields.expire) s, until \(Date(timeIntervalSince1970: TimeInterval(fields.expiresAt)))")
                if let userbuf = fields.userbuf { print("userbuf    \(userbuf)") }
            }
            do {
                _ = try UserSig.verify(sig, sdkAppID: SdkAppID(appID), secretKey: secret, userID: user, now: now)
                print("valid")
            } catch {
                print("invalid: \(error.code.name) (\(error.code.rawValue)): \(error.message)")
                throw ExitCode(1)
            }
        }
    }
}
