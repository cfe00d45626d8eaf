#if canImport(WebRTC) && canImport(UIKit) && canImport(ReplayKit)
import CoreMedia
import Foundation
import ReplayKit
@preconcurrency import WebRTC

/// The app's own screen as video frames: ReplayKit's in-app capture (`RPScreenRecorder`) feeding
/// an `RTCVideoSource` made for screen casts. The whole device's screen (other apps too) needs a
/// broadcast upload extension, a separate process; docs/IOS.md says how it would connect.
final class ScreenCapture: @unchecked Sendable {
    private let source: RTCVideoSource
    private let capturer: RTCVideoCapturer

    init(source: RTCVideoSource) {
        self.source = source
        self.capturer = RTCVideoCapturer(delegate: source)
    }

    func start() {
        let (source, capturer) = (source, capturer)
        RPScreenRecorder.shared().isMicrophoneEnabled = false
        RPScreenRecorder.shared().startCapture(
            handler: { sample, type, error in
                guard error == nil, type == .video, let frame = Self.frame(sample) else { return }
                source.capturer(capturer, didCapture: frame)
            },
            completionHandler: { _ in
                // Refused (the user declined, or another app records): no frames come; the SDK
                // still says the member shares, and the others see no screen track.
            })
    }

    func stop() {
        RPScreenRecorder.shared().stopCapture(handler: nil)
    }

    static func frame(_ sample: CMSampleBuffer) -> RTCVideoFrame? {
        guard CMSampleBufferIsValid(sample), CMSampleBufferDataIsReady(sample),
            let pixels = CMSampleBufferGetImageBuffer(sample)
        else { return nil }
        let time = CMTimeGetSeconds(CMSampleBufferGetPresentationTimeStamp(sample))
        return RTCVideoFrame(
            buffer: RTCCVPixelBuffer(pixelBuffer: pixels), rotation: ._0, timeStampNs: Int64(time * 1_000_000_000))
    }
}
#endif
