// The ringtone (an incoming call) and the ringback (the caller hears it ring), made with Web
// Audio: no sound files to ship. Browsers start audio only after the user interacted with the
// page, so the context is made (or resumed) on the first click or key press; until then a
// ring is `blocked` and the page says how to hear it.
//
// Patterns, in seconds: the ringtone is two short rising bursts each 3 s; the ringback is the
// familiar 440 + 480 Hz tone, 2 s on and 4 s off.

const PATTERNS = {
  ringtone: { period: 3, bursts: [[0, 0.4], [0.6, 1.0]], tones: [880, 1175], gain: 0.12 },
  ringback: { period: 6, bursts: [[0, 2]], tones: [440, 480], gain: 0.08 },
};

const MUTED_KEY = "switchboard.ringMuted";

export class Ringer {
  constructor() {
    this.context = null;
    this.playing = null; // { kind, nodes, timer }
    this.muted = localStorage.getItem(MUTED_KEY) === "1";
    this.onchange = () => {};
  }

  /** Makes or resumes the audio context; call from a user gesture. */
  unlock() {
    try {
      this.context ??= new AudioContext();
    } catch {
      return;
    }
    if (this.context.state === "suspended") this.context.resume().then(() => this.onchange(), () => {});
  }

  /** `off`, `muted`, `blocked` (waiting for a click) or `playing`. */
  get state() {
    if (!this.playing) return "off";
    if (this.muted) return "muted";
    return this.context?.state === "running" ? "playing" : "blocked";
  }

  get kind() {
    return this.playing?.kind ?? null;
  }

  /** Rings with `kind` (ringtone or ringback) until `stop()`; the same kind again changes nothing. */
  play(kind) {
    if (this.playing?.kind === kind) return;
    this.stop();
    this.unlock();
    const context = this.context;
    if (!context) return;
    const pattern = PATTERNS[kind];
    const master = context.createGain();
    master.gain.value = this.muted ? 0 : 1;
    const envelope = context.createGain();
    envelope.gain.value = 0;
    const analyser = context.createAnalyser();
    analyser.fftSize = 512;
    const oscillators = pattern.tones.map((frequency) => {
      const oscillator = context.createOscillator();
      oscillator.frequency.value = frequency;
      oscillator.connect(envelope);
      oscillator.start();
      return oscillator;
    });
    envelope.connect(master).connect(analyser).connect(context.destination);
    // Each period is scheduled just before it starts, so stopping leaves nothing queued for long.
    let next = context.currentTime + 0.05;
    const schedule = () => {
      while (next < context.currentTime + pattern.period) {
        for (const [from, to] of pattern.bursts) {
          envelope.gain.setTargetAtTime(pattern.gain, next + from, 0.01);
          envelope.gain.setTargetAtTime(0, next + to, 0.01);
        }
        next += pattern.period;
      }
    };
    schedule();
    const timer = setInterval(schedule, (pattern.period * 1000) / 2);
    this.playing = { kind, master, analyser, oscillators, envelope, timer };
    this.onchange();
  }

  stop() {
    const playing = this.playing;
    if (!playing) return;
    this.playing = null;
    clearInterval(playing.timer);
    for (const oscillator of playing.oscillators) oscillator.stop();
    playing.master.disconnect();
    this.onchange();
  }

  /** Silences ringing (kept for later calls in this browser); the call itself is unaffected. */
  setMuted(muted) {
    this.muted = muted;
    localStorage.setItem(MUTED_KEY, muted ? "1" : "0");
    if (this.playing) this.playing.master.gain.value = muted ? 0 : 1;
    this.onchange();
  }

  /** The loudness going to the speakers now, 0–1 (RMS): what tests listen to. */
  level() {
    const analyser = this.playing?.analyser;
    if (!analyser) return 0;
    const samples = new Float32Array(analyser.fftSize);
    analyser.getFloatTimeDomainData(samples);
    return Math.sqrt(samples.reduce((sum, s) => sum + s * s, 0) / samples.length);
  }
}
