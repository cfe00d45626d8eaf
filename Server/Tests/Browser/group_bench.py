#!/usr/bin/env python3
"""What a member of a group video call sends and spends, as a mesh and through the SFU (issue 31).

Runs real Chromium pages (the browser tests' harness, harness.py and pages.py: fake camera at
640x360, 15 frames a second, loopback ICE) in three calls, one after the other, on the same machine:

- `one-to-one`: two pages, peer to peer (the floor: what one member sends to one other);
- `mesh`: N pages in a group call on a server without an SFU (each page sends its camera once per
  other member);
- `sfu`: N pages in a group call on a server with `--sfu` and a local Janus (each page sends its
  camera once, in two simulcast layers, and Janus forwards it).

For each call it waits until every page decodes every other member's audio and video, lets the
encoders settle, then measures over a window: each page's upload (the RTP bytes its connections
sent, from getStats), the CPU time of each page's whole Chromium (every process under its
chromedriver, from /proc), and Janus's CPU time. It prints one JSON line per call and a table of
medians over the members, with the upload and CPU as ratios to the one-to-one call measured in the
same run.

Usage: group_bench.py --binary Server/.build/debug/switchboard --web Server/Sources/SwitchboardWebClient/Web
                      --golden Server/Tests/SwitchboardProtocolTests/Golden --artifacts /tmp/group-bench
                      [--members 6] [--settle 10] [--window 20]
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import harness
from harness import decoded, wait_until
from pages import Page
from servers import JanusServer, Servers

TICKS = os.sysconf("SC_CLK_TCK")


def children():
    """Every process's parent: pid → ppid."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                parents[int(name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                pass
    return parents


def tree(root, parents):
    """`root` and every process under it."""
    found, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return found


def cpu_seconds(pid):
    """User and system CPU time of one process, in seconds (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS
    except (OSError, IndexError, ValueError):
        return 0.0


class Member:
    """A page and the processes of its Chromium."""

    def __init__(self, user, url):
        self.page = Page(user, url=url)
        self.page.driver.set_script_timeout(120)
        wait_until(lambda: self.page.js("return !!window.switchboard"), what=f"{user}'s page to load")
        self.page.log_in()
        self.root = self.page.driver.service.process.pid

    def cpu(self):
        """The CPU time of every process of this Chromium now, by pid (the window counts the
        processes alive at both of its ends; Chromium starts or ends none while a call goes on)."""
        return {pid: cpu_seconds(pid) for pid in tree(self.root, children())}

    def bytes_sent(self):
        """Every RTP byte this page's connections sent so far."""
        sent = self.page.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.switchboard.publishStats().then(done, e => done({error: String(e)}));")
        if sent is not None:
            return sent["bytesSent"]
        return sum(sum(peer["bytesSent"].values()) for peer in self.page.stats().values())

    def close(self):
        """Quits the page's Chromium; what a quit under load left running is killed."""
        left = tree(self.root, children()) - {self.root}
        try:
            self.page.close()
        finally:
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


def measure(name, url, count, settle, window, janus=None):
    users = [f"{name}{index}" for index in range(count)]
    members = {user: Member(user, url) for user in users}
    try:
        caller = members[users[0]].page
        caller.call(",".join(users[1:]), "video")
        # Every callee answers as soon as it rings, all at once: one after the other, the last
        # ones on a loaded machine rang out while the first ones' media started.
        def answer(page):
            wait_until(lambda: page.visible("incoming"), timeout=60, what=f"{page.user}'s incoming call screen")
            page.click("accept")
        with ThreadPoolExecutor(len(users) - 1) as pool:
            for answered in [pool.submit(answer, members[user].page) for user in users[1:]]:
                answered.result()
        for member in members.values():
            page = member.page
            peers = sorted(set(users) - {page.user})
            wait_until(lambda: all(decoded(page, p)["video"] > 0 and decoded(page, p)["samples"] > 0 for p in peers),
                       timeout=180, interval=1, what=f"{page.user} decoding {peers}")
        media = caller.js("return window.switchboard.activeCall().info.media ?? 'peer to peer'")
        time.sleep(settle)

        start_bytes = {user: m.bytes_sent() for user, m in members.items()}
        start_cpu = {user: m.cpu() for user, m in members.items()}
        janus_start = cpu_seconds(janus.processes[0].pid) if janus else None
        started = time.monotonic()
        time.sleep(window)
        end_bytes = {user: m.bytes_sent() for user, m in members.items()}
        end_cpu = {user: m.cpu() for user, m in members.items()}
        janus_end = cpu_seconds(janus.processes[0].pid) if janus else None
        elapsed = time.monotonic() - started

        upload = {user: round((end_bytes[user] - start_bytes[user]) * 8 / elapsed / 1000) for user in users}
        cpu = {user: round(100 * sum(end_cpu[user][pid] - start_cpu[user].get(pid, end_cpu[user][pid])
                                     for pid in end_cpu[user]) / elapsed, 1) for user in users}
        widths = {user: decoded(members[users[0]].page, user)["width"] for user in users[1:]}
        # Through the SFU: what the first member sent on each stream (the camera's layers apart).
        layers = members[users[0]].page.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.switchboard.publishStats().then(done, e => done({error: String(e)}));")
        streams = [{key: stream[key] for key in ("source", "rid", "frameWidth", "bytesSent")}
                   for stream in layers["streams"]] if layers else None
        result = {"call": name, "members": count, "capture": url.split("capture=")[-1],
                  "camera": "noisy" if os.environ.get("SWITCHBOARD_FAKE_VIDEO") else "drawn", "media": media, "window": round(elapsed, 1),
                  "uploadKbps": upload, "cpuPercent": cpu, "decodedWidthsAtFirstMember": widths,
                  "firstMemberStreams": streams,
                  "janusCpuPercent": round(100 * (janus_end - janus_start) / elapsed, 1) if janus else None,
                  "loadAverage": os.getloadavg()[0]}
        print(json.dumps(result), flush=True)
        for member in list(members.values())[1:]:
            member.page.click("hangup")
        return result
    finally:
        for member in members.values():
            member.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--web", required=True)
    parser.add_argument("--golden", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--members", type=int, default=6)
    parser.add_argument("--capture", default="640x360@15", help="every page's camera, WIDTHxHEIGHT@FPS")
    parser.add_argument("--settle", type=float, default=10, help="seconds between decoding and measuring")
    parser.add_argument("--window", type=float, default=20, help="seconds measured")
    parser.add_argument("--camera", choices=["drawn", "noisy"], default="drawn",
                        help="drawn: Chromium's own test picture (compresses to little); noisy: a moving ball under "
                             "a film of noise, made with GStreamer, which costs an encoder about what a real camera does")
    parser.add_argument("--only", choices=["one-to-one", "mesh", "sfu"], action="append")
    args = parser.parse_args()
    harness.ARGS = args
    if args.camera == "noisy":
        width, height, rate = (int(part) for part in args.capture.replace("@", "x").split("x"))
        clip = os.path.join(args.artifacts, f"camera-{width}x{height}@{rate}.y4m")
        os.makedirs(args.artifacts, exist_ok=True)
        caps = f"video/x-raw,width={width},height={height},framerate={rate}/1"
        subprocess.run(
            ["gst-launch-1.0", "-q", "compositor", "name=mix", "sink_1::alpha=0.12", "!",
             f"video/x-raw,format=I420,width={width},height={height},framerate={rate}/1", "!", "y4menc", "!",
             "filesink", f"location={clip}",
             "videotestsrc", f"num-buffers={rate * 10}", "pattern=ball", "motion=sweep", "!", caps, "!", "mix.",
             "videotestsrc", f"num-buffers={rate * 10}", "pattern=snow", "!", caps, "!", "mix."], check=True)
        os.environ["SWITCHBOARD_FAKE_VIDEO"] = clip
    harness.SERVER = Servers()
    harness.SERVER.start()
    janus = JanusServer()
    janus.start()
    wanted = args.only or ["one-to-one", "mesh", "sfu"]
    capture = f"&capture={args.capture}"
    results = {}
    try:
        if "one-to-one" in wanted:
            results["one-to-one"] = measure("pair", harness.SERVER.url(capture), 2, args.settle, args.window)
        if "mesh" in wanted:
            results["mesh"] = measure("mesh", harness.SERVER.url(capture), args.members, args.settle, args.window)
        if "sfu" in wanted:
            results["sfu"] = measure("sfu", janus.url(capture), args.members, args.settle, args.window, janus)
    finally:
        janus.stop()
        harness.SERVER.stop()

    floor = results.get("one-to-one")
    floor_upload = statistics.median(floor["uploadKbps"].values()) if floor else None
    floor_cpu = statistics.median(floor["cpuPercent"].values()) if floor else None
    print("| call | members | upload per member, median (kbit/s) | × one-to-one | Chromium CPU per member, median | "
          "× one-to-one | Janus CPU |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, result in results.items():
        upload = statistics.median(result["uploadKbps"].values())
        cpu = statistics.median(result["cpuPercent"].values())
        janus_cpu = f"{result['janusCpuPercent']} %" if result["janusCpuPercent"] is not None else "–"
        print(f"| {name} | {result['members']} | {upload:.0f} | "
              f"{upload / floor_upload:.2f} | {cpu:.1f} % | {cpu / floor_cpu:.2f} | {janus_cpu} |"
              if floor else f"| {name} | {result['members']} | {upload:.0f} | – | {cpu:.1f} % | – | {janus_cpu} |")


if __name__ == "__main__":
    sys.exit(main())
