import Crypto
import Foundation

/// A push's content sealed for one device, so that the push service (APNs, FCM, a browser's push
/// service) carries it without seeing names or user data: only the device that registered the
/// matching X25519 key (``RegisterPushTokenRequest/sealingKey``) can open it.
///
/// The box, version 1 (docs/PROTOCOL.md, "Sealed pushes"), is base64url without padding of
/// `ephemeral public key (32) ‖ ciphertext ‖ tag (16)`:
/// 1. the server makes a fresh X25519 key pair for each push and agrees a shared secret with the
///    device's public key;
/// 2. the key is HKDF-SHA256 of that secret, salt `ephemeral public key ‖ device public key`, info
///    `switchboard sealed push v1`, 32 bytes;
/// 3. the content (the UTF-8 JSON of the push's `switchboard` object) is encrypted with
///    ChaCha20-Poly1305 under that key, nonce 12 zero bytes (each key seals one message only), no
///    associated data.
public enum SealedPush {
    /// The HKDF info string of version 1.
    public static let info = Data("switchboard sealed push v1".utf8)
    /// What the box adds to the content: the ephemeral key and the tag.
    public static let overhead = 32 + 16

    /// Seals `content` for the device whose public key is `recipient` (32 bytes, base64url).
    ///
    /// - Parameter ephemeralKey: the ephemeral private key's 32 bytes; a fresh random one when nil
    ///   (always, but for test vectors).
    public static func seal(_ content: Data, to recipient: String, ephemeralKey: Data? = nil) throws -> String {
        guard let raw = Base64URL.decode(recipient), raw.count == 32,
            let publicKey = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: raw)
        else { throw SwitchboardError(.invalidParams, "a sealing key is 32 bytes of base64url") }
        let ephemeral = try ephemeralKey.map { try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: $0) }
            ?? Curve25519.KeyAgreement.PrivateKey()
        let key = try Self.key(ephemeral: ephemeral, deviceKey: publicKey, ephemeralPublic: ephemeral.publicKey)
        let box = try ChaChaPoly.seal(content, using: key, nonce: ChaChaPoly.Nonce(data: Data(count: 12)))
        return Base64URL.encode(ephemeral.publicKey.rawRepresentation + box.ciphertext + box.tag)
    }

    /// Opens a box sealed for `privateKey`; throws `pushNotSealedForThisDevice` when it was sealed
    /// for another key, was changed, or is not a box.
    public static func open(_ sealed: String, with privateKey: Curve25519.KeyAgreement.PrivateKey) throws -> Data {
        guard let bytes = Base64URL.decode(sealed), bytes.count >= overhead,
            let ephemeral = try? Curve25519.KeyAgreement.PublicKey(rawRepresentation: bytes.prefix(32))
        else { throw SwitchboardError(.pushNotSealedForThisDevice, "not a sealed push") }
        do {
            let sharedSecret = try privateKey.sharedSecretFromKeyAgreement(with: ephemeral)
            let key = derive(sharedSecret, ephemeral: ephemeral, device: privateKey.publicKey)
            let box = try ChaChaPoly.SealedBox(
                nonce: ChaChaPoly.Nonce(data: Data(count: 12)), ciphertext: bytes.dropFirst(32).dropLast(16),
                tag: bytes.suffix(16))
            return try ChaChaPoly.open(box, using: key)
        } catch {
            throw SwitchboardError(.pushNotSealedForThisDevice, "the sealed push does not open with this device's key")
        }
    }

    private static func key(
        ephemeral: Curve25519.KeyAgreement.PrivateKey, deviceKey: Curve25519.KeyAgreement.PublicKey,
        ephemeralPublic: Curve25519.KeyAgreement.PublicKey
    ) throws -> SymmetricKey {
        derive(try ephemeral.sharedSecretFromKeyAgreement(with: deviceKey), ephemeral: ephemeralPublic, device: deviceKey)
    }

    private static func derive(
        _ secret: SharedSecret, ephemeral: Curve25519.KeyAgreement.PublicKey, device: Curve25519.KeyAgreement.PublicKey
    ) -> SymmetricKey {
        secret.hkdfDerivedSymmetricKey(
            using: SHA256.self, salt: ephemeral.rawRepresentation + device.rawRepresentation, sharedInfo: info,
            outputByteCount: 32)
    }
}

/// A device's key for sealed pushes: made once on the device and kept there (the Keychain on
/// iOS), its public half registered with the device's push tokens
/// (``RegisterPushTokenRequest/sealingKey``).
public struct PushSealingKey: Equatable, Sendable {
    /// The 32 bytes to keep. The value holds these rather than the key itself because CryptoKit's
    /// keys are not `Sendable` in the iOS SDKs this package supports (swift-crypto re-exports
    /// CryptoKit there); every init checks that they make a key, so ``key`` cannot fail.
    public let rawRepresentation: Data

    /// A new random key.
    public init() { rawRepresentation = Curve25519.KeyAgreement.PrivateKey().rawRepresentation }

    /// The key kept from before (``rawRepresentation``).
    public init(rawRepresentation: Data) throws {
        guard let key = try? Curve25519.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation) else {
            throw SwitchboardError(.invalidParams, "a sealing key is 32 bytes")
        }
        self.rawRepresentation = key.rawRepresentation
    }

    private var key: Curve25519.KeyAgreement.PrivateKey {
        try! Curve25519.KeyAgreement.PrivateKey(rawRepresentation: rawRepresentation)
    }

    /// The public half, base64url, as ``RegisterPushTokenRequest/sealingKey`` takes it.
    public var publicKey: String { Base64URL.encode(key.publicKey.rawRepresentation) }

    /// Opens a box sealed for this key (``SealedPush``).
    public func open(_ sealed: String) throws -> Data { try SealedPush.open(sealed, with: key) }
}
