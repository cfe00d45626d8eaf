/// A camera capture format as a device offers it (landscape: width ≥ height).
public struct CaptureFormat: Equatable, Sendable {
    public var width: Int
    public var height: Int
    /// The highest frame rate the format supports.
    public var maxFrameRate: Double

    public init(width: Int, height: Int, maxFrameRate: Double) {
        self.width = width
        self.height = height
        self.maxFrameRate = maxFrameRate
    }
}

extension VideoQuality {
    /// Which of a camera's formats captures this quality: the smallest that covers the quality's
    /// size at its frame rate (the encoder scales down, never up), else the smallest that covers
    /// the size at any rate, else the largest there is. Ties go to the higher frame rate, then to
    /// the first offered. Nil when the camera offers none.
    public func captureFormat(among formats: [CaptureFormat]) -> Int? {
        let indexed = Array(formats.enumerated())
        func covers(_ format: CaptureFormat) -> Bool { format.width >= width && format.height >= height }
        func area(_ format: CaptureFormat) -> Int { format.width * format.height }
        let smallestFirst = indexed.sorted {
            (area($0.element), -$0.element.maxFrameRate, $0.offset) < (area($1.element), -$1.element.maxFrameRate, $1.offset)
        }
        if let best = smallestFirst.first(where: { covers($0.element) && $0.element.maxFrameRate >= Double(frameRate) }) {
            return best.offset
        }
        if let best = smallestFirst.first(where: { covers($0.element) }) { return best.offset }
        return smallestFirst.last.map { last in
            // The largest area; among equals, the first of them in `smallestFirst` order.
            smallestFirst.first { area($0.element) == area(last.element) }!.offset
        }
    }

    /// The frame rate to capture `format` at: the quality's, or the format's highest when lower.
    public func captureFrameRate(for format: CaptureFormat) -> Int {
        max(1, min(frameRate, Int(format.maxFrameRate)))
    }
}
