#if GStreamer
import CGStreamer
import NIOConcurrencyHelpers

// Thin Swift over the GStreamer C API: owned references, properties, promises and SDP.

/// GStreamer is initialised once per process, on first use.
enum GStreamer {
    static let initialized: Void = gst_init(nil, nil)

    /// The plugins every call uses, loaded once (making an element loads its plugin).
    static let preloaded: Void = {
        _ = initialized
        for factory in [
            "webrtcbin", "rtpbin", "nicesrc", "nicesink", "dtlssrtpenc", "dtlssrtpdec", "srtpenc", "opusenc", "opusdec",
            "rtpopuspay", "rtpopusdepay", "vp8enc", "vp8dec", "rtpvp8pay", "rtpvp8depay", "audiotestsrc", "videotestsrc",
            "level", "tee", "queue",
        ] {
            if let element = gst_element_factory_make(factory, nil) {
                gst_object_unref(gst_object_ref_sink(UnsafeMutableRawPointer(element)))
            }
        }
    }()

    /// `value` quoted for a gst-launch description (file names with spaces, quotes).
    static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// A string GStreamer allocated, copied, and the original freed.
    static func takeString(_ pointer: UnsafeMutablePointer<gchar>?) -> String? {
        guard let pointer else { return nil }
        defer { g_free(pointer) }
        return String(cString: pointer)
    }
}

/// Something GStreamer refused, with its message.
public struct GStreamerError: Error, CustomStringConvertible, Sendable {
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// A GObject's properties.
protocol HasProperties {
    var raw: gpointer { get }
}

extension HasProperties {
    /// Sets a property from its string form, as gst-launch does (numbers, enums by nick, caps).
    func set(_ property: String, _ value: String) {
        gst_util_set_object_arg(raw.assumingMemoryBound(to: GObject.self), property, value)
    }

    func set(_ property: String, _ value: Bool) { sb_set_bool(raw, property, value ? 1 : 0) }
    func set(_ property: String, _ value: Double) { sb_set_double(raw, property, value) }
    func set(_ property: String, _ value: Int32) { sb_set_int(raw, property, value) }
    func set(_ property: String, _ value: UInt32) { sb_set_uint(raw, property, value) }

    func set(_ property: String, caps description: String) {
        let caps = gst_caps_from_string(description)
        sb_set_caps(raw, property, caps)
        if let caps { gst_caps_unref(caps) }
    }

    func string(_ property: String) -> String? { GStreamer.takeString(sb_get_string(raw, property)) }
    func enumValue(_ property: String) -> Int32 { sb_get_enum(raw, property) }
}

/// An owned reference to a GStreamer object whose struct Swift does not see (a transceiver).
final class OpaqueObject: HasProperties, @unchecked Sendable {
    let raw: gpointer

    /// Takes over a (full) reference the caller owns.
    init(adopting raw: gpointer) { self.raw = raw }
    deinit { gst_object_unref(raw) }
}

/// An owned reference to a GStreamer object. GStreamer objects are reference counted and their
/// methods are thread-safe, so a reference may be used from any thread.
class ObjectRef<Object>: HasProperties, @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Object>

    /// Takes over a (full) reference the caller owns.
    init(adopting pointer: UnsafeMutablePointer<Object>) {
        self.pointer = pointer
    }

    /// Takes a newly made object's floating reference as a full one.
    init(sinking pointer: UnsafeMutablePointer<Object>) {
        self.pointer = UnsafeMutablePointer(OpaquePointer(gst_object_ref_sink(UnsafeMutableRawPointer(pointer))))
    }

    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }

    var raw: gpointer { UnsafeMutableRawPointer(pointer) }

    /// The object's name (unique among its siblings).
    var name: String { String(cString: sb_object_name(raw)) }
}

final class Element: ObjectRef<GstElement>, @unchecked Sendable {
    /// A new element of a factory (`queue`, `webrtcbin`…).
    static func make(_ factory: String, name: String? = nil) throws -> Element {
        _ = GStreamer.initialized
        guard let element = gst_element_factory_make(factory, name) else {
            throw GStreamerError("no GStreamer element \(factory) (is its plugin installed?)")
        }
        return Element(sinking: element)
    }

    /// A bin from a gst-launch description; its unlinked pads become the bin's own (ghost) pads.
    /// With `output`, only that element's source pad does: a description with elements that link
    /// later (decodebin's pads appear once it knows the file) must not have their pads ghosted.
    static func bin(_ description: String, output: String? = nil) throws -> Element {
        _ = GStreamer.initialized
        var error: UnsafeMutablePointer<GError>?
        let bin = gst_parse_bin_from_description(description, output == nil ? 1 : 0, &error)
        if let error {
            let message = String(cString: error.pointee.message)
            g_error_free(error)
            if let bin { gst_object_unref(UnsafeMutableRawPointer(bin)) }
            throw GStreamerError("\(message): \(description)")
        }
        guard let bin else { throw GStreamerError("could not build \(description)") }
        let element = Element(sinking: bin)
        if let output {
            guard let target = element.child(output)?.staticPad("src"),
                let ghost = gst_ghost_pad_new("src", target.pointer), gst_element_add_pad(element.pointer, ghost) != 0
            else { throw GStreamerError("no output \(output) in \(description)") }
        }
        return element
    }

    /// A named element inside this bin.
    func child(_ name: String) -> Element? {
        sb_bin_by_name(pointer, name).map { Element(adopting: $0) }
    }

    func add(_ element: Element) throws {
        guard sb_bin_add(pointer, element.pointer) != 0 else { throw GStreamerError("could not add \(element.name)") }
    }

    func remove(_ element: Element) {
        _ = sb_bin_remove(pointer, element.pointer)
    }

    func staticPad(_ name: String) -> Pad? {
        gst_element_get_static_pad(pointer, name).map { Pad(adopting: $0) }
    }

    /// Requests a pad of a `sink_%u`-style template, with the caps it will carry.
    func requestPad(_ template: String, caps: String? = nil) throws -> Pad {
        guard let padTemplate = sb_pad_template(pointer, template) else {
            throw GStreamerError("\(name) has no pad template \(template)")
        }
        let gstCaps = caps.flatMap { gst_caps_from_string($0) }
        defer { if let gstCaps { gst_caps_unref(gstCaps) } }
        guard let pad = gst_element_request_pad(pointer, padTemplate, nil, gstCaps) else {
            throw GStreamerError("\(name) refused a \(template) pad")
        }
        return Pad(adopting: pad)
    }

    func releaseRequestPad(_ pad: Pad) {
        gst_element_release_request_pad(pointer, pad.pointer)
    }

    func link(to element: Element) throws {
        guard gst_element_link(pointer, element.pointer) != 0 else {
            throw GStreamerError("could not link \(name) to \(element.name)")
        }
    }

    @discardableResult
    func setState(_ state: GstState) -> GstStateChangeReturn {
        gst_element_set_state(pointer, state)
    }

    func syncStateWithParent() {
        _ = gst_element_sync_state_with_parent(pointer)
    }

}

final class Pad: ObjectRef<GstPad>, @unchecked Sendable {
    func link(to sink: Pad) throws {
        let result = gst_pad_link(pointer, sink.pointer)
        guard result == GST_PAD_LINK_OK else { throw GStreamerError("could not link pads (\(result.rawValue))") }
    }

    func unlink(from sink: Pad) {
        _ = gst_pad_unlink(pointer, sink.pointer)
    }

    /// The pad at the other end of the link.
    var peer: Pad? { gst_pad_get_peer(pointer).map { Pad(adopting: $0) } }

    /// Width and height of the current video caps.
    var videoSize: (width: Int, height: Int)? {
        var width: gint = 0
        var height: gint = 0
        guard sb_pad_video_size(pointer, &width, &height) != 0 else { return nil }
        return (Int(width), Int(height))
    }

    func send(_ event: UnsafeMutablePointer<GstEvent>) -> Bool {
        gst_pad_send_event(pointer, event) != 0
    }

    /// Calls `body` for every buffer that passes (from the streaming thread).
    func onBuffer(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Callback(body)).toOpaque()
        gst_pad_add_probe(
            pointer, GST_PAD_PROBE_TYPE_BUFFER,
            { _, _, data in
                Unmanaged<Callback>.fromOpaque(data!).takeUnretainedValue().body()
                return GST_PAD_PROBE_OK
            }, box, { data in Unmanaged<Callback>.fromOpaque(data!).release() })
    }

    /// Calls `body` once no data flows through the pad (at once when idle), from whichever thread
    /// sees it idle; what it does must not wait for the streaming thread.
    func whenIdle(_ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Callback(body)).toOpaque()
        gst_pad_add_probe(
            pointer, GST_PAD_PROBE_TYPE_IDLE,
            { _, _, data in
                Unmanaged<Callback>.fromOpaque(data!).takeUnretainedValue().body()
                return GST_PAD_PROBE_REMOVE
            }, box, { data in Unmanaged<Callback>.fromOpaque(data!).release() })
    }
}

/// A Swift closure carried through a C callback's user data.
final class Callback: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

// MARK: - promises

/// Waits for a GstPromise's reply without blocking a thread; the reply is read in the change
/// callback (on the replying thread) while the promise is alive.
class PromiseWaiter: @unchecked Sendable {
    func complete(_ reply: UnsafePointer<GstStructure>?) {}
    func abandon() {}
}

final class TypedPromiseWaiter<Value: Sendable>: PromiseWaiter, @unchecked Sendable {
    private let continuation: NIOLockedValueBox<CheckedContinuation<Value, any Error>?>
    private let extract: @Sendable (UnsafePointer<GstStructure>?) throws -> Value

    init(
        _ continuation: CheckedContinuation<Value, any Error>,
        extract: @escaping @Sendable (UnsafePointer<GstStructure>?) throws -> Value
    ) {
        self.continuation = NIOLockedValueBox(continuation)
        self.extract = extract
    }

    private func take() -> CheckedContinuation<Value, any Error>? {
        continuation.withLockedValue { value in
            defer { value = nil }
            return value
        }
    }

    override func complete(_ reply: UnsafePointer<GstStructure>?) {
        take()?.resume(with: Result { try extract(reply) })
    }

    override func abandon() {
        take()?.resume(throwing: GStreamerError("the promise was dropped without a reply"))
    }
}

/// Runs `start` with a new promise and waits for its reply, read by `extract`. A promise freed
/// without a reply (its element shut down) throws instead of waiting forever.
func awaitPromise<Value: Sendable>(
    extract: @escaping @Sendable (UnsafePointer<GstStructure>?) throws -> Value,
    start: (UnsafeMutablePointer<GstPromise>) -> Void
) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        let waiter: PromiseWaiter = TypedPromiseWaiter(continuation, extract: extract)
        let promise = gst_promise_new_with_change_func(
            { promise, data in
                Unmanaged<PromiseWaiter>.fromOpaque(data!).takeUnretainedValue().complete(gst_promise_get_reply(promise))
            }, Unmanaged.passRetained(waiter).toOpaque(),
            { data in
                let waiter = Unmanaged<PromiseWaiter>.fromOpaque(data!)
                waiter.takeUnretainedValue().abandon()
                waiter.release()
            })!
        start(promise)
        gst_promise_unref(promise)
    }
}

/// A reply's error, if it carries one.
func replyError(_ reply: UnsafePointer<GstStructure>?) -> GStreamerError? {
    GStreamer.takeString(sb_reply_error(reply)).map(GStreamerError.init)
}

// MARK: - session descriptions

extension GStreamer {
    /// A WebRTC session description from SDP text (owned by the caller).
    static func description(
        _ type: GstWebRTCSDPType, sdp text: String
    ) throws -> UnsafeMutablePointer<GstWebRTCSessionDescription> {
        var message: UnsafeMutablePointer<GstSDPMessage>?
        guard gst_sdp_message_new_from_text(text, &message) == GST_SDP_OK, let message else {
            throw GStreamerError("unreadable SDP")
        }
        guard let description = gst_webrtc_session_description_new(type, message) else {
            throw GStreamerError("no session description")
        }
        return description
    }

    /// The SDP text of a session description.
    static func text(of description: UnsafeMutablePointer<GstWebRTCSessionDescription>) -> String {
        takeString(gst_sdp_message_as_text(description.pointee.sdp)) ?? ""
    }
}
#endif
