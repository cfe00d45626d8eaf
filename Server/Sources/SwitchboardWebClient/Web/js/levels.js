// The levels of SPEC §3 that a member reports each second: network quality from packet loss and
// round trip, volume from the microphone's level.

/** The quality levels of SPEC §3 from packet loss (%) and round-trip time (ms); the worse wins. */
export function networkQuality(packetLoss, rtt) {
  const levels = ["excellent", "good", "poor", "bad", "veryBad"];
  const lossLevel = packetLoss < 1 ? 0 : packetLoss < 3 ? 1 : packetLoss < 8 ? 2 : packetLoss < 15 ? 3 : 4;
  const rttLevel = rtt < 100 ? 0 : rtt < 200 ? 1 : rtt < 400 ? 2 : rtt < 800 ? 3 : 4;
  return levels[Math.max(lossLevel, rttLevel)];
}

/** The volume level of SPEC §3 for an audio level 0–100. */
export function volumeLevel(level, microphoneOn) {
  if (!microphoneOn || level <= 0) return "mute";
  return level <= 25 ? "low" : level <= 50 ? "medium" : level <= 75 ? "high" : "peak";
}
