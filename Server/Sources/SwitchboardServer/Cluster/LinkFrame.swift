/// How messages are written on a node link (``PeerLink`` → ``NodeLinks``): one WebSocket text frame
/// holds one or more numbered messages, each as `<number> <length>\n<body>` (the length in UTF-8
/// bytes, the body as ``NodeMessage/body()`` writes it), in number order. What the writer finds
/// waiting goes in one frame (an answer and the events a request caused, for the same node, are
/// queued together), so the receiver hands them over and acknowledges them at once.
enum LinkFrame {
    /// A frame holds at most this many bytes of bodies (at least one message, whatever its size).
    static let bodyBytes = 1 << 20

    static func encode(_ messages: some Collection<(number: UInt64, body: String)>) -> String {
        var frame = ""
        for (number, body) in messages {
            frame += String(number)
            frame += " "
            frame += String(body.utf8.count)
            frame += "\n"
            frame += body
        }
        return frame
    }

    /// The messages of a frame, in order; throws ``NodeLinkError/unreadable`` for anything else.
    static func decode(_ frame: String) throws -> [(number: UInt64, body: String)] {
        let utf8 = frame.utf8
        var messages: [(number: UInt64, body: String)] = []
        var index = utf8.startIndex
        while index < utf8.endIndex {
            guard let space = utf8[index...].firstIndex(of: UInt8(ascii: " ")),
                let newline = utf8[space...].firstIndex(of: UInt8(ascii: "\n")),
                let number = UInt64(Substring(utf8[index..<space])),
                let length = Int(Substring(utf8[utf8.index(after: space)..<newline])), length >= 0,
                let end = utf8.index(utf8.index(after: newline), offsetBy: length, limitedBy: utf8.endIndex),
                let body = String(utf8[utf8.index(after: newline)..<end])
            else { throw NodeLinkError.unreadable }
            messages.append((number, body))
            index = end
        }
        guard !messages.isEmpty else { throw NodeLinkError.unreadable }
        return messages
    }
}
