#if canImport(WebRTC) && canImport(UIKit)
import AVFoundation
import Foundation
import Switchboard
@preconcurrency import WebRTC

/// The local tracks: the microphone, the camera (`RTCCameraVideoCapturer`, front or back, in the
/// format ``VideoQuality/captureFormat(among:)`` picks) and the shared screen (ReplayKit). Used on
/// the engine's queue only.
final class LocalMedia {
    private let factory: RTCPeerConnectionFactory
    private(set) var microphoneTrack: RTCAudioTrack?
    private(set) var cameraTrack: RTCVideoTrack?
    private(set) var screenTrack: RTCVideoTrack?
    private var capturer: RTCCameraVideoCapturer?
    private var screenCapture: ScreenCapture?
    /// What the camera captures now: nil when it is stopped.
    private var capturing: CameraChoice?

    struct CameraChoice: Equatable {
        var front: Bool
        var quality: VideoQuality
    }

    init(factory: RTCPeerConnectionFactory) {
        self.factory = factory
    }

    func makeMicrophone(on: Bool) {
        if microphoneTrack == nil {
            let constraints = RTCMediaConstraints(mandatoryConstraints: nil, optionalConstraints: nil)
            microphoneTrack = factory.audioTrack(with: factory.audioSource(with: constraints), trackId: "microphone")
        }
        microphoneTrack?.isEnabled = on
    }

    func makeCamera() {
        guard cameraTrack == nil else { return }
        let source = factory.videoSource()
        capturer = RTCCameraVideoCapturer(delegate: source)
        cameraTrack = factory.videoTrack(with: source, trackId: "camera")
    }

    /// Captures from the front or back camera in the quality's format, or stops capturing.
    func setCamera(on: Bool, front: Bool, quality: VideoQuality) {
        guard let capturer else { return }
        let wanted = on ? CameraChoice(front: front, quality: quality) : nil
        guard wanted != capturing else { return }
        capturing = wanted
        cameraTrack?.isEnabled = on
        guard let wanted else {
            capturer.stopCapture()
            return
        }
        let position: AVCaptureDevice.Position = wanted.front ? .front : .back
        let devices = RTCCameraVideoCapturer.captureDevices()
        guard let device = devices.first(where: { $0.position == position }) ?? devices.first else { return }
        let formats = RTCCameraVideoCapturer.supportedFormats(for: device)
        let offered = formats.map { format in
            let size = CMVideoFormatDescriptionGetDimensions(format.formatDescription)
            return CaptureFormat(
                width: Int(max(size.width, size.height)), height: Int(min(size.width, size.height)),
                maxFrameRate: format.videoSupportedFrameRateRanges.map(\.maxFrameRate).max() ?? 0)
        }
        guard let index = wanted.quality.captureFormat(among: offered) else { return }
        capturer.startCapture(
            with: device, format: formats[index], fps: wanted.quality.captureFrameRate(for: offered[index]))
    }

    func stopCamera() {
        setCamera(on: false, front: capturing?.front ?? true, quality: capturing?.quality ?? .p720)
        cameraTrack = nil
        capturer = nil
    }

    /// Shares the app's own screen (ReplayKit's in-app capture).
    func startScreen() {
        guard screenTrack == nil else { return }
        let source = factory.videoSource(forScreenCast: true)
        let capture = ScreenCapture(source: source)
        screenCapture = capture
        screenTrack = factory.videoTrack(with: source, trackId: "screen")
        capture.start()
    }

    func stopScreen() {
        screenCapture?.stop()
        screenCapture = nil
        screenTrack = nil
    }

    func stopAll() {
        stopCamera()
        stopScreen()
        microphoneTrack = nil
    }
}
#endif
