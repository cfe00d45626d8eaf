extension Int64 {
    /// `self + other`, pinned to `Int64.min`/`Int64.max` instead of trapping: for numbers the other
    /// side of the wire chose (times, lifetimes, offsets), where overflow means "far away", never a crash.
    public func clampedAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, pinned to `Int64.min`/`Int64.max` instead of trapping.
    public func clampedSubtracting(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}
