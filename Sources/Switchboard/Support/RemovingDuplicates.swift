extension AsyncSequence where Self: Sendable, Element: Sendable {
    /// The values of `key` for each element, without repeats.
    func removingDuplicates<Key: Equatable & Sendable>(
        _ key: @escaping @Sendable (Element) -> Key
    ) -> AsyncStream<Key> {
        AsyncStream { continuation in
            let task = Task {
                var last: Key?
                do {
                    for try await element in self {
                        let value = key(element)
                        if value != last { continuation.yield(value) }
                        last = value
                    }
                } catch {}
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
