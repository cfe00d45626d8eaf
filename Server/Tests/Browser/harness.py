"""What every part of the browser tests shares: the run's arguments (`ARGS`) and the coturn and
Switchboard servers every test uses (`SERVER`), both set by run.py's main (group_bench.py sets them
too); free ports; the waits (for a condition, for a counter to grow or to stand still); and what
Chromium decoded from a member."""

import socket
import time

ARGS = None
SERVER = None


def free_port(kind=socket.SOCK_STREAM, host="127.0.0.1"):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_until(predicate, timeout=20.0, interval=0.2, what="condition"):
    """Polls `predicate` until it returns a truthy value (returned) or the time runs out."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as error:  # a page mid-render can throw; try again
            last_error = error
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last_error})" if last_error else ""))


def grows(page, peer, direction, kind, timeout=20):
    """Waits until the byte counter grows between two samples; returns the last value."""
    first = page.peer_stats(peer)[direction][kind]
    return wait_until(
        lambda: (lambda now: now if now > first else 0)(page.peer_stats(peer)[direction][kind]),
        timeout=timeout, interval=0.5, what=f"{page.user}'s {direction} {kind} bytes with {peer} to grow")


def stands_still(page, peer, direction, kind, timeout=20):
    """Waits until the byte counter no longer moves over a second."""
    samples = []

    def still():
        samples.append(page.peer_stats(peer)[direction][kind])
        return len(samples) >= 3 and samples[-1] == samples[-3]

    wait_until(still, timeout=timeout, interval=0.5, what=f"{page.user}'s {direction} {kind} bytes with {peer} to stop")
    return samples[-1]


def grows_by(read, what, timeout=20, minimum=1):
    """Waits until `read()` grows by at least `minimum` between two samples; returns the new value."""
    first = read()
    return wait_until(lambda: (lambda now: now if now >= first + minimum else 0)(read()),
                      timeout=timeout, interval=0.5, what=what)


def still(read, what, timeout=20):
    """Waits until `read()` no longer moves over a second; returns the value."""
    samples = []

    def check():
        samples.append(read())
        return len(samples) >= 3 and samples[-1] == samples[-3]

    wait_until(check, timeout=timeout, interval=0.5, what=what)
    return samples[-1]


def decoded(page, peer):
    """What Chromium decoded from `peer`: audio samples and energy, video and screen frames."""
    stats = page.peer_stats(peer) or {}
    return {"samples": stats.get("totalSamplesReceived", 0), "energy": stats.get("totalAudioEnergy", 0),
            "level": stats.get("receivedAudioLevel", 0), "video": stats.get("framesDecoded", {}).get("video", 0),
            "screen": stats.get("framesDecoded", {}).get("screen", 0),
            "width": stats.get("frameWidth", {}).get("video", 0)}


# Samples what `page` receives of `peer`'s audio every 50 ms (the bytes of its current connection:
# a new connection starts from 0, so any change counts as audio coming).
AUDIO_SAMPLER = """
  const peer = arguments[0];
  window.moveSamples = [];
  window.moveSampler = setInterval(async () => {
    const stats = await window.switchboard.stats();
    window.moveSamples.push([performance.now(), stats[peer]?.bytesReceived.audio ?? null]);
  }, 50);
"""


def longest_gap(samples):
    """The longest time (s) between two samples at which new audio had arrived."""
    fresh, last = [], None
    for at, value in samples:
        if value is not None and value != last:
            fresh.append(at)
        last = value
    return max((b - a for a, b in zip(fresh, fresh[1:])), default=0) / 1000
