import Foundation
import SwitchboardProtocol
import Testing

struct RandomUUIDTests {
    /// Call and device ids are random version 4 UUIDs, lowercased, and never repeat.
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
        #expect(DeviceID.random() != DeviceID.random())
    }
}
