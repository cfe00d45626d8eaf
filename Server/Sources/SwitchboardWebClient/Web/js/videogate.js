// Whether one connection's link out can carry this side's video, from Chromium's estimate of the
// bandwidth out (`availableOutgoingBitrate` of the selected candidate pair), read once a second.
//
// A link much narrower than a call's video (64 kbit/s here) does not degrade gracefully in
// Chromium: its congestion control lowers the camera's target, but the retransmissions of the
// dropped video, the pacer's backlog and padding go on filling the link, the audio breaks up and
// the page's own signaling starves until the server ends the call (docs/BENCHMARKS.md, "The
// browser in a namespace"). So when the estimate stays under the floor, this side stops its video
// on the connection and thins its audio (peer.js); after a while it tries video again, and
// pauses again, for twice as long each time up to half a minute, unless the estimate reaches the
// floor during the trial. A trial on a link that is still narrow costs a few seconds of broken
// audio; the bound on the pause is what a person waits for video once the link is wide again.
//
// Measured with the pages in network namespaces: the estimate reads 3,700–4,000 kbit/s on an open
// link, 190–330 on a 300 kbit/s one, 84 with video and 23–54 with audio only on a 64 kbit/s one.
// Sending video again on a link just widened, it passed the floor within 2–4 s in most trials
// (Chromium probes), not in some (77 → 93 in 5 s; a trial that began as the link widened); on the
// 64 kbit/s link it stayed under 70.
//
// Phases: `open` (video on; how many low readings in a row), `paused` (until when), `trial`
// (video on again since when). `sample` returns what the connection must do: "pause" (video off),
// "resume" (video on, on trial), "open" (the trial passed) or null. `pause` is how long the next
// pause lasts: it doubles with each pause and starts again from the first once the estimate
// reaches the floor.

/** Under this estimate (kbit/s) video does not fit beside the audio and the signaling. */
export const VIDEO_FLOOR_KBPS = 120;
/** Readings in a row under the floor (one a second) before video pauses. */
export const LOW_SAMPLES_TO_PAUSE = 3;
/** The first pause (ms), and the longest. */
export const FIRST_PAUSE = 10_000;
export const LONGEST_PAUSE = 30_000;
/** How long a trial lasts (ms). */
export const TRIAL = 5_000;

export class VideoGate {
  constructor() {
    this.phase = { name: "open", low: 0 };
    this.pause = FIRST_PAUSE;
  }

  /** Whether video is paused now. */
  get paused() {
    return this.phase.name === "paused";
  }

  /** Whether the link is in doubt: video paused, or on trial. */
  get narrow() {
    return this.phase.name !== "open";
  }

  /**
   * One reading at `now` (ms): `kbps` is the estimate, or null when there is none (no selected
   * pair yet, or no video to send on the connection).
   */
  sample(now, kbps) {
    const phase = this.phase;
    const good = kbps !== null && kbps >= VIDEO_FLOOR_KBPS;
    switch (phase.name) {
      case "open":
        if (kbps === null) return null;
        if (good) {
          this.phase = { name: "open", low: 0 };
          this.pause = FIRST_PAUSE;
          return null;
        }
        if (phase.low + 1 < LOW_SAMPLES_TO_PAUSE) {
          this.phase = { name: "open", low: phase.low + 1 };
          return null;
        }
        return this.pauseNow(now);
      case "paused":
        if (now < phase.until) return null;
        this.phase = { name: "trial", since: now };
        return "resume";
      case "trial":
        if (good) {
          this.phase = { name: "open", low: 0 };
          this.pause = FIRST_PAUSE;
          return "open";
        }
        return now - phase.since < TRIAL ? null : this.pauseNow(now);
    }
    return null;
  }

  pauseNow(now) {
    this.phase = { name: "paused", until: now + this.pause };
    this.pause = Math.min(this.pause * 2, LONGEST_PAUSE);
    return "pause";
  }
}
