import Crypto
import Foundation

/// Message encryption for Web Push (RFC 8291) in the `aes128gcm` content coding (RFC 8188), one
/// record: what the browser's push service carries is opaque to it, and only the subscription's
/// owner, holding the private key of `p256dh` and the `auth` secret, can read it.
enum WebPushEncryption {
    /// The record size written in the header. The whole body must fit one record.
    static let recordSize = 4096
    /// The header: salt (16), record size (4), key id length (1), the server's ephemeral public key (65).
    static let headerSize = 16 + 4 + 1 + 65
    /// Push services take bodies of at least 4,096 bytes (RFC 8030 §7.2): the header, the
    /// plaintext, its delimiter (1) and the AEAD tag (16) must fit.
    static let maxPlaintext = 4096 - headerSize - 1 - 16

    enum Failure: Error {
        case badSubscriptionKey
        case tooLarge
    }

    /// The body of a push carrying `plaintext` to the subscription with these keys.
    ///
    /// - Parameters:
    ///   - p256dh: the user agent's public key, uncompressed (65 bytes).
    ///   - auth: the subscription's authentication secret (16 bytes).
    ///   - ephemeral, salt: fresh for every message; given only to reproduce a known vector.
    static func encrypt(
        _ plaintext: Data, p256dh: Data, auth: Data,
        ephemeral: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: Data = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
    ) throws -> Data {
        guard plaintext.count <= maxPlaintext else { throw Failure.tooLarge }
        guard auth.count == 16, salt.count == 16,
            let userAgentKey = try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)
        else { throw Failure.badSubscriptionKey }
        let serverPublic = ephemeral.publicKey.x963Representation
        let secret = try ephemeral.sharedSecretFromKeyAgreement(with: userAgentKey)
        // IKM = HKDF(salt: auth, ikm: ECDH secret, info: "WebPush: info" ‖ 0 ‖ ua_public ‖ as_public).
        let keyInfo = Data("WebPush: info".utf8) + [0] + userAgentKey.x963Representation + serverPublic
        let ikm = secret.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: keyInfo, outputByteCount: 32)
        // The content-encryption key and nonce of RFC 8188, from the message's salt.
        let key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: ikm, salt: salt, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        // One record, the last: the plaintext, then the delimiter 2, no padding.
        let sealed = try AES.GCM.seal(
            plaintext + [2], using: key, nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
        var body = salt
        body.append(contentsOf: withUnsafeBytes(of: UInt32(recordSize).bigEndian) { Array($0) })
        body.append(UInt8(serverPublic.count))
        body.append(serverPublic)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }
}
