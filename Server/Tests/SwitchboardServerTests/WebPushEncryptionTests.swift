import Crypto
import Foundation
import JWTKit
import SwitchboardProtocol
import SwitchboardTestServers
import Testing

@testable import SwitchboardServer

/// The Web Push sender's cryptography against published vectors and an independent reader.
struct WebPushEncryptionTests {
    /// RFC 8291, Appendix A (the example of section 5), its line breaks removed.
    enum RFC8291 {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let serverPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let serverPublic =
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let userAgentPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let userAgentPublic =
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let auth = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let body =
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    func bytes(_ text: String) throws -> Data { try #require(Base64URL.decode(text)) }

    @Test func theEncryptorReproducesRFC8291sExample() throws {
        let ephemeral = try P256.KeyAgreement.PrivateKey(rawRepresentation: try bytes(RFC8291.serverPrivate))
        #expect(Base64URL.encode(ephemeral.publicKey.x963Representation) == RFC8291.serverPublic)
        let body = try WebPushEncryption.encrypt(
            Data(RFC8291.plaintext.utf8), p256dh: try bytes(RFC8291.userAgentPublic), auth: try bytes(RFC8291.auth),
            ephemeral: ephemeral, salt: try bytes(RFC8291.salt))
        #expect(Base64URL.encode(body) == RFC8291.body)
    }

    /// The local push service's reader (the browser's side) opens the RFC's body, and what the
    /// sender makes with fresh keys; a wrong auth secret or a changed byte does not open.
    @Test func theBrowsersSideReadsTheRFCsExampleAndTheSendersMessages() throws {
        let userAgent = try P256.KeyAgreement.PrivateKey(rawRepresentation: try bytes(RFC8291.userAgentPrivate))
        let opened = try TestWebPushServer.decrypt(try bytes(RFC8291.body), privateKey: userAgent, auth: try bytes(RFC8291.auth))
        #expect(String(decoding: opened, as: UTF8.self) == RFC8291.plaintext)

        let browser = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let message = Data(String(repeating: "é", count: 1000).utf8)
        let body = try WebPushEncryption.encrypt(message, p256dh: browser.publicKey.x963Representation, auth: auth)
        #expect(body.count <= 4096)
        #expect(try TestWebPushServer.decrypt(body, privateKey: browser, auth: auth) == message)
        #expect(throws: (any Error).self) {
            try TestWebPushServer.decrypt(body, privateKey: browser, auth: Data(repeating: 0, count: 16))
        }
        var changed = body
        changed[changed.count - 20] ^= 1
        #expect(throws: (any Error).self) { try TestWebPushServer.decrypt(changed, privateKey: browser, auth: auth) }
        // The largest plaintext fills one 4,096-byte body; one byte more is refused before sending.
        let largest = Data(repeating: 0x61, count: WebPushEncryption.maxPlaintext)
        #expect(try WebPushEncryption.encrypt(largest, p256dh: browser.publicKey.x963Representation, auth: auth).count == 4096)
        #expect(throws: (any Error).self) {
            try WebPushEncryption.encrypt(largest + [0x61], p256dh: browser.publicKey.x963Representation, auth: auth)
        }
        // A subscription key that is not a P-256 point.
        #expect(throws: (any Error).self) {
            try WebPushEncryption.encrypt(message, p256dh: Data(repeating: 4, count: 65), auth: auth)
        }
    }

    /// RFC 8292: an ES256 JWT for the push service's origin, valid for less than a day, with the
    /// contact, and the public key beside it.
    @Test func theVAPIDHeaderIsASignedJWTForThePushServicesOrigin() async throws {
        let key = P256.Signing.PrivateKey()
        let now: Int64 = 1_767_225_600_000
        let endpoint = try #require(URL(string: "https://push.example.net:8443/wpush/v2/abc?x=1"))
        let header = try VAPID.authorization(endpoint: endpoint, key: key, subject: "mailto:ops@example.com", now: now)
        let parts = header.dropFirst("vapid ".count).components(separatedBy: ", ")
        #expect(header.hasPrefix("vapid t=") && parts.count == 2)
        let jwt = String(parts[0].dropFirst(2))
        #expect(parts[1] == "k=" + Base64URL.encode(key.publicKey.x963Representation))
        struct Claims: JWTPayload {
            var aud: AudienceClaim
            var exp: ExpirationClaim
            var sub: SubjectClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let verifier = JWTKeyCollection()
        await verifier.add(ecdsa: try ES256PublicKey(backing: key.publicKey))
        let claims = try await verifier.verify(jwt, as: Claims.self)
        #expect(claims.aud.value == ["https://push.example.net:8443"])
        #expect(claims.sub.value == "mailto:ops@example.com")
        let exp = Int64(claims.exp.value.timeIntervalSince1970)
        #expect(exp > now / 1000 && exp <= now / 1000 + 86_400)
        // Signed by another key, it does not verify.
        let other = JWTKeyCollection()
        await other.add(ecdsa: try ES256PublicKey(backing: P256.Signing.PrivateKey().publicKey))
        await #expect(throws: (any Error).self) { try await other.verify(jwt, as: Claims.self) }
        #expect(VAPID.audience(of: try #require(URL(string: "https://fcm.googleapis.com/fcm/send/x"))) == "https://fcm.googleapis.com")
    }

    /// A VAPID key is 32 bytes of base64url or PEM, and its public key is what browsers take.
    @Test func vapidKeys() throws {
        let generated = VAPIDKey.generate()
        #expect(generated.problem == nil && generated.generated == true)
        let publicKey = try bytes(try #require(generated.publicKey))
        #expect(publicKey.count == 65 && publicKey.first == 4)
        let pem = VAPIDKey(privateKey: P256.Signing.PrivateKey().pemRepresentation, subject: "https://example.com/contact")
        #expect(pem.problem == nil)
        #expect(VAPIDKey(privateKey: "short", subject: "mailto:a@b").problem?.code == .invalidParams)
        #expect(VAPIDKey(privateKey: generated.privateKey, subject: "ops@example.com").problem?.code == .invalidParams)
        #expect(VAPIDKey(privateKey: generated.privateKey, subject: "http://example.com").problem?.code == .invalidParams)
    }
}

/// Which Web Push endpoints the server sends to (SSRF): public hosts on port 443, or hosts the
/// operator allows.
struct WebPushEndpointPolicyTests {
    @Test(arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc", nil),
        ("https://updates.push.services.mozilla.com/wpush/v2/abc", nil),
        ("https://web.push.apple.com:443/QGuQ", nil),
        ("https://8.8.8.8/x", nil),
        ("https://[2606:4700::1111]/x", nil),
        ("https://127.0.0.1/x", SwitchboardError.Code.pushEndpointNotAllowed),
        ("https://127.1.2.3/x", .pushEndpointNotAllowed),
        ("https://10.0.0.5/x", .pushEndpointNotAllowed),
        ("https://172.20.1.1/x", .pushEndpointNotAllowed),
        ("https://192.168.1.10/x", .pushEndpointNotAllowed),
        ("https://169.254.169.254/latest/meta-data", .pushEndpointNotAllowed),
        ("https://100.64.0.1/x", .pushEndpointNotAllowed),
        ("https://0.0.0.0/x", .pushEndpointNotAllowed),
        ("https://[::1]/x", .pushEndpointNotAllowed),
        ("https://[::ffff:127.0.0.1]/x", .pushEndpointNotAllowed),
        ("https://[fd00::1]/x", .pushEndpointNotAllowed),
        ("https://[fe80::1]/x", .pushEndpointNotAllowed),
        ("https://localhost/x", .pushEndpointNotAllowed),
        ("https://push.localhost/x", .pushEndpointNotAllowed),
        ("https://printer.local/x", .pushEndpointNotAllowed),
        ("https://metadata.google.internal/x", .pushEndpointNotAllowed),
        ("https://intranet/x", .pushEndpointNotAllowed),
        ("https://push.example.net:8443/x", .pushEndpointNotAllowed),
        ("https://push.example.net:22/x", .pushEndpointNotAllowed),
    ] as [(String, SwitchboardError.Code?)])
    func registration(_ endpoint: String, _ expected: SwitchboardError.Code?) throws {
        let policy = try WebPushEndpointPolicy(allowedHosts: [])
        #expect(policy.problem(endpoint)?.code == expected, "\(endpoint)")
    }

    @Test func anAllowedHostIsSentToOnAnyPort() async throws {
        let policy = try WebPushEndpointPolicy(allowedHosts: ["127.0.0.1", "push.corp.example"])
        #expect(policy.problem("https://127.0.0.1:8443/push/x") == nil)
        #expect(policy.problem("https://push.corp.example:9000/x") == nil)
        #expect(policy.problem("https://127.0.0.2/x")?.code == .pushEndpointNotAllowed)
        #expect(await policy.resolvesPublicly(try #require(URL(string: "https://127.0.0.1:8443/push/x"))))
        #expect(throws: SwitchboardError.self) { try WebPushEndpointPolicy(allowedHosts: ["127.0.0.1:80"]) }
    }

    /// Before each push the name is resolved: one that points into the network is refused.
    @Test func aNameThatResolvesIntoTheNetworkIsRefusedAtSendTime() async throws {
        let policy = try WebPushEndpointPolicy(allowedHosts: [])
        #expect(!(await policy.resolvesPublicly(try #require(URL(string: "https://localhost/x")))))
        #expect(!(await policy.resolvesPublicly(try #require(URL(string: "https://10.1.2.3/x")))))
        #expect(await policy.resolvesPublicly(try #require(URL(string: "https://1.1.1.1/x"))))
    }
}
