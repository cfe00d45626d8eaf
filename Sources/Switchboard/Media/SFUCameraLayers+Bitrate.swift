extension SFUCameraLayers {
    /// The most a layer scaled down by `scaleDown` may send for `quality`, kbps: the quality's
    /// bitrate in proportion to the layer's pixels (a quarter at half the width and height). With
    /// ``layers`` the camera then sends at most 1.25 times what one stream of it sends peer to
    /// peer, whatever the number of members. At least 1 kbps; scales count from 1 to 1,000.
    public static func bitrateKbps(_ quality: VideoQuality, scaleDown: Int) -> Int {
        let scale = min(1_000, max(1, scaleDown))
        return max(1, quality.bitrateKbps / (scale * scale))
    }
}
