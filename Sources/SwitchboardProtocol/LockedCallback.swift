import NIOConcurrencyHelpers

/// A closure that one thread sets and others read and call: use this instead of a lock box whose
/// value is the closure itself.
///
/// A lock box hands its value to the body as `inout`. Where the value is a function type (or an
/// optional or a tuple holding one), Swift converts the function from the box's generic
/// representation to the caller's on the way in and back on the write-back, wrapping it in two new
/// thunks each time, even for a read that changes nothing. The wrapped closure is what is stored,
/// so the chain grows with every access: after n reads a call goes through 2n frames, and the
/// thunks are never freed (the load generator's frame handler, read for every frame, spent 40 % of
/// its CPU there). Here a read is a getter: one conversion, returned and not kept.
public final class LockedCallback<Function: Sendable>: Sendable {
    private let box: NIOLockedValueBox<Function>

    public init(_ function: Function) {
        box = NIOLockedValueBox(function)
    }

    /// The closure as set last.
    public var function: Function {
        get { box.withLockedValue { $0 } }
        set { box.withLockedValue { $0 = newValue } }
    }
}
