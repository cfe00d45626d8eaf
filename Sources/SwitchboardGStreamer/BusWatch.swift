#if GStreamer
import CGStreamer
import Foundation
import NIOConcurrencyHelpers

/// What the pipeline's bus says that the engine acts on.
enum BusMessage: Sendable {
    /// An element failed (the message, the element's name, and its path in the pipeline).
    case error(String, source: String, path: String)
    case warning(String, source: String)
    /// A `level` element measured its last interval: the loudest channel's RMS, dB (≤ 0).
    case level(source: String, rms: Double)
}

/// Reads a pipeline's bus on a thread of its own and hands each message to `handle`: the GLib
/// side never waits for Swift, and Swift never blocks a GStreamer thread. Stopped by ``stop()``,
/// which returns once the thread has left.
final class BusWatch: Sendable {
    private let running = NIOLockedValueBox(true)
    private let done = NIOLockedValueBox<(finished: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    init(pipeline: Element, handle: @escaping @Sendable (BusMessage) -> Void) {
        let bus = BusRef(sb_pipeline_bus(pipeline.pointer))
        let thread = Thread { [running, done] in
            while running.withLockedValue({ $0 }) {
                // A tenth of a second at most, so stop() is answered quickly.
                guard let message = gst_bus_timed_pop(bus.pointer, 100_000_000) else { continue }
                if let parsed = Self.parse(message) { handle(parsed) }
                gst_message_unref(message)
            }
            let waiters = done.withLockedValue { state in
                state.finished = true
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
        }
        thread.name = "switchboard-gstreamer-bus"
        thread.start()
    }

    func stop() async {
        running.withLockedValue { $0 = false }
        await withCheckedContinuation { continuation in
            let finished = done.withLockedValue { state in
                if !state.finished { state.waiters.append(continuation) }
                return state.finished
            }
            if finished { continuation.resume() }
        }
    }

    private static func parse(_ message: UnsafeMutablePointer<GstMessage>) -> BusMessage? {
        let source = String(cString: sb_message_source_name(message))
        switch sb_message_type(message) {
        case GST_MESSAGE_ERROR, GST_MESSAGE_WARNING:
            var error: UnsafeMutablePointer<GError>?
            var debug: UnsafeMutablePointer<gchar>?
            let isError = sb_message_type(message) == GST_MESSAGE_ERROR
            if isError { gst_message_parse_error(message, &error, &debug) } else { gst_message_parse_warning(message, &error, &debug) }
            let text = error.map { String(cString: $0.pointee.message) } ?? "unknown"
            if let error { g_error_free(error) }
            let details = GStreamer.takeString(debug).map { " (\($0))" } ?? ""
            let path = GStreamer.takeString(sb_message_source_path(message)) ?? source
            return isError ? .error(text + details, source: source, path: path) : .warning(text + details, source: source)
        case GST_MESSAGE_ELEMENT:
            guard let structure = gst_message_get_structure(message), gst_structure_has_name(structure, "level") != 0 else {
                return nil
            }
            return .level(source: source, rms: sb_level_rms(structure))
        default:
            return nil
        }
    }
}

/// The bus, owned for the watch thread's life.
private final class BusRef: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<GstBus>
    init(_ pointer: UnsafeMutablePointer<GstBus>) { self.pointer = pointer }
    deinit { gst_object_unref(UnsafeMutableRawPointer(pointer)) }
}
#endif
