import Testing

@testable import Switchboard

/// What a stalled subscriber to the SDK's state holds.
struct ObservingBoundTests {
    @Test func aSubscriberThatFallsBehindKeepsTheNewestValuesOnly() async {
        let cell = StateCell(0)
        let stream = cell.subscribe()
        // Nobody reads while the state changes far more often than the bound.
        for value in 1...(observingBufferLimit + 500) { cell.update { $0 = value } }
        var iterator = stream.makeAsyncIterator()
        // The oldest values (the first 501, the initial one included) were dropped; the newest kept.
        #expect(await iterator.next() == 501)
        var last = 501
        var count = 1
        while last < observingBufferLimit + 500, let value = await iterator.next() {
            #expect(value == last + 1)
            last = value
            count += 1
        }
        #expect(count == observingBufferLimit)
    }
}
