import Foundation
import SwitchboardProtocol
import Testing

struct RandomUUIDTests {
    /// The ids the server makes (call, device, media-change transaction) are random version 4
    /// UUIDs in lowercase, as docs/PROTOCOL.md says, and never repeat.
    @Test func idsAreVersionFourUUIDsThatDoNotRepeat() throws {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = CallID.random().rawValue
            let uuid = try #require(UUID(uuidString: id))
            #expect(id == id.lowercased())
            let bytes = withUnsafeBytes(of: uuid.uuid) { Array($0) }
            #expect(bytes[6] >> 4 == 4)
            #expect(bytes[8] >> 6 == 0b10)
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
        for made in [DeviceID.random().rawValue, TransactionID.random().rawValue] {
            #expect(made.utf8.count == 36 && made == made.lowercased() && UUID(uuidString: made) != nil)
        }
        #expect(DeviceID.random() != DeviceID.random())
    }
}
