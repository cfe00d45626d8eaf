#if canImport(WebRTC) && canImport(UIKit)
import AVFoundation
import CoreMedia
import UIKit
@preconcurrency import WebRTC

/// Renders WebRTC frames through an `AVSampleBufferDisplayLayer`: the one kind of video layer
/// the system's Picture in Picture window can show while the app is in the background. Camera and
/// hardware-decoded frames are pixel buffers already; software-decoded ones (VP8) are I420 and are
/// copied into an NV12 buffer first.
final class SampleBufferVideoView: UIView, RTCVideoRenderer {
    override class var layerClass: AnyClass { AVSampleBufferDisplayLayer.self }
    private var displayLayer: AVSampleBufferDisplayLayer { layer as! AVSampleBufferDisplayLayer }

    override init(frame: CGRect) {
        super.init(frame: frame)
        displayLayer.videoGravity = .resizeAspectFill
    }

    @available(*, unavailable)
    required init?(coder: NSCoder) { fatalError("not from a storyboard") }

    // MARK: RTCVideoRenderer (WebRTC's decoding thread)

    nonisolated func setSize(_ size: CGSize) {}

    nonisolated func renderFrame(_ frame: RTCVideoFrame?) {
        guard let frame, let pixels = Self.pixelBuffer(frame), let sample = Self.sampleBuffer(pixels) else { return }
        nonisolated(unsafe) let sampleBuffer = sample
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated {
                guard let layer = self?.displayLayer else { return }
                if layer.status == .failed { layer.flush() }
                layer.enqueue(sampleBuffer)
            }
        }
    }

    nonisolated static func pixelBuffer(_ frame: RTCVideoFrame) -> CVPixelBuffer? {
        if let buffer = frame.buffer as? RTCCVPixelBuffer { return buffer.pixelBuffer }
        let i420 = frame.buffer.toI420()
        var output: CVPixelBuffer?
        let attributes = [kCVPixelBufferIOSurfacePropertiesKey: [:]] as CFDictionary
        guard
            CVPixelBufferCreate(
                kCFAllocatorDefault, Int(i420.width), Int(i420.height), kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange,
                attributes, &output) == kCVReturnSuccess, let output
        else { return nil }
        CVPixelBufferLockBaseAddress(output, [])
        defer { CVPixelBufferUnlockBaseAddress(output, []) }
        guard let y = CVPixelBufferGetBaseAddressOfPlane(output, 0)?.assumingMemoryBound(to: UInt8.self),
            let uv = CVPixelBufferGetBaseAddressOfPlane(output, 1)?.assumingMemoryBound(to: UInt8.self)
        else { return nil }
        let yStride = CVPixelBufferGetBytesPerRowOfPlane(output, 0)
        let uvStride = CVPixelBufferGetBytesPerRowOfPlane(output, 1)
        for row in 0..<Int(i420.height) {
            (y + row * yStride).update(from: i420.dataY + row * Int(i420.strideY), count: Int(i420.width))
        }
        for row in 0..<Int(i420.chromaHeight) {
            let u = i420.dataU + row * Int(i420.strideU)
            let v = i420.dataV + row * Int(i420.strideV)
            let line = uv + row * uvStride
            for column in 0..<Int(i420.chromaWidth) {
                line[2 * column] = u[column]
                line[2 * column + 1] = v[column]
            }
        }
        return output
    }

    nonisolated static func sampleBuffer(_ pixels: CVPixelBuffer) -> CMSampleBuffer? {
        var format: CMVideoFormatDescription?
        guard CMVideoFormatDescriptionCreateForImageBuffer(
            allocator: kCFAllocatorDefault, imageBuffer: pixels, formatDescriptionOut: &format) == noErr, let format
        else { return nil }
        var timing = CMSampleTimingInfo(
            duration: .invalid, presentationTimeStamp: CMClockGetTime(CMClockGetHostTimeClock()), decodeTimeStamp: .invalid)
        var sample: CMSampleBuffer?
        guard CMSampleBufferCreateReadyWithImageBuffer(
            allocator: kCFAllocatorDefault, imageBuffer: pixels, formatDescription: format, sampleTiming: &timing,
            sampleBufferOut: &sample) == noErr, let sample
        else { return nil }
        // Shown as it comes, not at its timestamp.
        if let attachments = CMSampleBufferGetSampleAttachmentsArray(sample, createIfNecessary: true),
            CFArrayGetCount(attachments) > 0
        {
            let dictionary = unsafeBitCast(CFArrayGetValueAtIndex(attachments, 0), to: CFMutableDictionary.self)
            CFDictionarySetValue(
                dictionary, Unmanaged.passUnretained(kCMSampleAttachmentKey_DisplayImmediately).toOpaque(),
                Unmanaged.passUnretained(kCFBooleanTrue).toOpaque())
        }
        return sample
    }
}
#endif
