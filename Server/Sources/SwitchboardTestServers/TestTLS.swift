import Crypto
import Foundation
import NIOCore
import NIOSSL
import SwiftASN1
import X509

/// A self-signed certificate for 127.0.0.1 and `localhost`, for the local stand-ins of push
/// services: the server under test is told to trust it (a CA file), as it would trust a real
/// service's chain.
struct TestTLS {
    /// The server side's configuration.
    let configuration: TLSConfiguration
    /// The PEM file of the certificate, to trust.
    let certificatePath: String

    static func make(name: String, file: String, directory: URL) throws -> TestTLS {
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName { CommonName(name) }
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 86_400, issuer: subject, subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                SubjectAlternativeNames([.ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])), .dnsName("localhost")])
            },
            issuerPrivateKey: .init(key))
        let certificatePath = directory.appendingPathComponent(file).path
        try certificate.serializeAsPEM().pemString.write(toFile: certificatePath, atomically: true, encoding: .utf8)
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        let configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(try NIOSSLCertificate(bytes: serializer.serializedBytes, format: .der))],
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(key.derRepresentation), format: .der)))
        return TestTLS(configuration: configuration, certificatePath: certificatePath)
    }
}
