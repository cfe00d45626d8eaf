#!/usr/bin/env python3
"""End-to-end tests of the browser client in real headless Chromium.

Starts coturn and the Switchboard server (the debug binary) on 127.0.0.1, opens Chromium sessions
with fake media devices through chromedriver, and drives the page like a user: log in, call,
answer, talk, mute, hang up, look at the records. Everything stays on 127.0.0.0/8: Chromium
resolves no host names, gathers only loopback host candidates (the page's ?loopback=1) and uses
the local coturn for the relay-only run.

Usage: run.py --binary .build/debug/switchboard --web Web --golden Tests/SwitchboardProtocolTests/Golden
              --artifacts .build/browser-artifacts
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ARGS = None
SERVER = None
TURN_SECRET = "browser-test-turn-secret"


def free_port(kind=socket.SOCK_STREAM):
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
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


class Servers:
    """coturn and the Switchboard server, each in its own process, on free loopback ports."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="switchboard-browser-")
        self.turn_port = free_port(socket.SOCK_DGRAM)
        self.port = free_port()
        self.processes = []

    def start(self):
        turn_log = open(os.path.join(self.directory, "turn.log"), "w")
        self.files = [turn_log]
        self.processes.append(subprocess.Popen(
            ["turnserver", "-n", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
             f"--listening-port={self.turn_port}", "--min-port=49160", "--max-port=49400",
             "--use-auth-secret", f"--static-auth-secret={TURN_SECRET}", "--realm=switchboard.test",
             "--no-tls", "--no-dtls", "--no-cli", "--no-multicast-peers",
             # Test only: the peers are on loopback. Production denies private and loopback peers
             # (docs/OPERATIONS.md).
             "--allow-loopback-peers",
             f"--pidfile={self.directory}/turn.pid", f"--userdb={self.directory}/turndb",
             "--log-file=stdout", "--simple-log"],
            stdout=turn_log, stderr=subprocess.STDOUT))
        server_log = open(os.path.join(self.directory, "server.log"), "w")
        self.files.append(server_log)
        self.processes.append(subprocess.Popen(
            [ARGS.binary, "serve", "--port", str(self.port), "--database", f"{self.directory}/switchboard.sqlite",
             "--web-root", ARGS.web, "--turn-url", f"turn:127.0.0.1:{self.turn_port}?transport=udp",
             "--turn-secret", TURN_SECRET, "--log-level", "warning"],
            stdout=server_log, stderr=subprocess.STDOUT))
        wait_until(self.healthy, timeout=30, what="the server to answer /health")

    def healthy(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as response:
            return response.status == 200

    def url(self, query=""):
        return f"http://127.0.0.1:{self.port}/?loopback=1{query}"

    def stop(self):
        for process in reversed(self.processes):
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        for file in self.files:
            file.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def logs(self):
        text = []
        for name in ("server.log", "turn.log"):
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                with open(path) as f:
                    text.append(f"--- {name} (last lines)\n" + "".join(f.readlines()[-30:]))
        return "\n".join(text)


def browser():
    options = Options()
    options.binary_location = ARGS.chromium
    for flag in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1100,900",
        "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
        "--autoplay-policy=no-user-gesture-required", "--allow-loopback-in-peer-connection",
        "--disable-features=WebRtcHideLocalIpsWithMdns",
        # Nothing leaves the machine: no name resolves except loopback, no background traffic.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--no-first-run", "--disable-domain-reliability",
        "--disable-client-side-phishing-detection", "--metrics-recording-only",
    ]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(ARGS.chromedriver), options=options)


class Page:
    """One user in one Chromium session."""

    def __init__(self, user, query=""):
        self.user = user
        self.driver = browser()
        self.driver.get(SERVER.url(query))
        wait_until(lambda: self.js("return !!window.switchboard"), what=f"{user}'s page to load")

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def stats(self):
        return self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1]; window.switchboard.stats().then(done, e => done({error: String(e)}));")

    def peer_stats(self, peer):
        return self.stats().get(peer)

    def element(self, element_id):
        return self.driver.find_element(By.ID, element_id)

    def visible(self, element_id):
        return self.element(element_id).is_displayed()

    def click(self, element_id):
        wait_until(lambda: self.visible(element_id), what=f"#{element_id} on {self.user}'s page")
        self.element(element_id).click()

    def log_in(self):
        field = self.element("user-id")
        field.clear()
        field.send_keys(self.user)
        self.click("login-dev")
        wait_until(lambda: self.visible("home-view"), what=f"{self.user} to be logged in")

    def call(self, callee, media):
        field = self.element("callee")
        field.clear()
        field.send_keys(callee)
        self.click("call-video" if media == "video" else "call-audio")

    def screenshot(self, name):
        os.makedirs(ARGS.artifacts, exist_ok=True)
        path = os.path.join(ARGS.artifacts, f"{name}.png")
        self.driver.save_screenshot(path)
        return path

    def console(self):
        try:
            return [entry["message"] for entry in self.driver.get_log("browser")]
        except Exception:
            return []

    def close(self):
        self.driver.quit()


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


class BrowserTests(unittest.TestCase):
    def setUp(self):
        self.pages = []

    def tearDown(self):
        failed = any(error for _, error in (self._outcome.result.errors + self._outcome.result.failures)
                     if _ is self) if hasattr(self._outcome, "result") else False
        for page in self.pages:
            if failed:
                page.screenshot(f"failed-{self._testMethodName}-{page.user}")
                print(f"--- console of {page.user}", *page.console()[-20:], sep="\n", file=sys.stderr)
            page.close()
        if failed:
            print(SERVER.logs(), file=sys.stderr)

    def page(self, user, query=""):
        page = Page(user, query)
        self.pages.append(page)
        return page

    # MARK: the protocol

    def test_the_golden_files_parse_in_the_browser(self):
        """The browser's protocol module reads every golden message the Swift tests read."""
        page = self.page("golden")
        golden = {}
        for name in sorted(os.listdir(ARGS.golden)):
            if name.endswith(".json") and not name.startswith("push."):  # pushes go to PushKit, not browsers
                with open(os.path.join(ARGS.golden, name)) as f:
                    golden[name[:-5]] = f.read()
        result = page.driver.execute_async_script("""
            const [golden, done] = arguments;
            import('/js/protocol.js').then(({parseFrame, frameObject, REQUESTS}) => {
              const report = {};
              for (const [name, text] of Object.entries(golden)) {
                const parts = name.split('.');
                let type;
                if (parts[0] === 'response') {
                  const rest = parts.slice(1).join('.');
                  type = Object.keys(REQUESTS).find(t => t === rest);
                  if (!type && rest !== 'empty' && !rest.startsWith('error')) { report[name] = ['no request type for ' + rest]; continue; }
                }
                const parsed = parseFrame(text, () => type);
                const problems = [...parsed.problems];
                const kind = {request: 'request', response: 'response', event: 'event'}[parts[0]];
                if (parsed.kind !== kind) problems.push(`parsed as ${parsed.kind}, not ${kind}`);
                const same = JSON.stringify(frameObject(parsed)) === JSON.stringify(JSON.parse(text));
                if (!same) problems.push('does not round-trip');
                report[name] = problems;
              }
              done(report);
            }, error => done({import: [String(error)]}));
        """, golden)
        self.assertEqual(set(result), set(golden))
        self.assertEqual({name: problems for name, problems in result.items() if problems}, {})
        # A message that breaks the schema is caught.
        broken = page.driver.execute_async_script("""
            const done = arguments[0];
            import('/js/protocol.js').then(({parseFrame}) => done(parseFrame(
              '{"event":"callEnded","data":{"callId":"c","mediaType":"hologram","reason":"hangup"}}').problems));
        """)
        self.assertEqual(broken, ['$.data.mediaType: "hologram" is not a MediaType'])

    # MARK: calls

    def video_call(self, query, caller, callee, shots):
        alice = self.page(caller, query)
        bob = self.page(callee, query)
        alice.log_in()
        bob.log_in()

        alice.call(callee, "video")
        wait_until(lambda: bob.visible("incoming"), what=f"{callee}'s incoming call screen")
        self.assertIn(caller, bob.element("incoming-caller").text)
        self.assertEqual(bob.element("incoming-media").text, "video")
        bob.click("accept")
        wait_until(lambda: alice.visible("call-view") and bob.visible("call-view"), what="both in the call")

        # Audio and video flow both ways.
        wait_until(lambda: alice.peer_stats(callee) and bob.peer_stats(caller), what="peer connections")
        for page, peer in ((alice, callee), (bob, caller)):
            for kind in ("audio", "video"):
                grows(page, peer, "bytesReceived", kind)
                grows(page, peer, "bytesSent", kind)
        # The live timer runs on both sides.
        wait_until(lambda: alice.element("timer").text not in ("", "00:00", "Calling…"), what="the timer")
        self.assertRegex(bob.element("timer").text, r"^\d\d:\d\d$")
        # Each side shows the other's video in the float layout's large tile.
        tiles = alice.js("return window.switchboard.tiles()")
        self.assertEqual({tile["user"]: tile["role"] for tile in tiles}, {callee: "main", caller: "floating"})
        wait_until(lambda: bob.js(
            "return document.querySelector(`.tile[data-user='" + caller + "'] video`).videoWidth > 0"),
            what="alice's video to play on bob's page")
        # Each side sees the other's network quality and volume, from the other's status reports.
        def indicator(page, user, name):
            return page.js(f"return document.querySelector(`.tile[data-user='{user}'] .indicators`).dataset.{name}")
        wait_until(lambda: indicator(alice, callee, "quality") == "excellent", what="bob's network quality on alice's page")
        wait_until(lambda: indicator(alice, callee, "volume") not in ("mute", None), what="bob's volume on alice's page")
        for page in (alice, bob):
            page.screenshot(f"{shots}-{page.user}-in-call")

        # A tap on the small tile swaps the two.
        alice.driver.find_element(By.CSS_SELECTOR, ".tile.floating").click()
        wait_until(lambda: {t["user"]: t["role"] for t in alice.js("return window.switchboard.tiles()")}
                   == {caller: "main", callee: "floating"}, what="the swapped tiles")

        # Mute: alice sends no more audio, bob receives no more, and sees her microphone off.
        alice.click("mute")
        stands_still(alice, callee, "bytesSent", "audio")
        stands_still(bob, caller, "bytesReceived", "audio")
        grows(alice, callee, "bytesSent", "video")
        wait_until(lambda: bob.js(
            "return document.querySelector(`.tile[data-user='" + caller + "'] .indicators`).dataset.microphone") == "off",
            what="bob to see alice's microphone off")
        alice.click("mute")
        grows(bob, caller, "bytesReceived", "audio")

        # Camera off: bob sends no video, alice shows his camera off.
        bob.click("camera")
        stands_still(bob, caller, "bytesSent", "video")
        wait_until(lambda: indicator(alice, callee, "camera") == "off", what="alice to see bob's camera off")
        bob.click("camera")
        grows(alice, callee, "bytesReceived", "video")
        wait_until(lambda: indicator(alice, callee, "camera") == "on", what="alice to see bob's camera on")

        # The grid layout on request.
        alice.js("const s = document.getElementById('layout'); s.value = 'grid'; s.dispatchEvent(new Event('change'));")
        wait_until(lambda: {t["role"] for t in alice.js("return window.switchboard.tiles()")} == {"grid"},
                   what="the grid layout")
        stats = {caller: alice.peer_stats(callee), callee: bob.peer_stats(caller)}

        # Hang up: both sides end with the reason, and both records appear.
        call_id = alice.js("return window.switchboard.activeCall().info.callId")
        alice.click("hangup")
        for page in (alice, bob):
            wait_until(lambda: page.visible("end-reason"), what=f"the end on {page.user}'s page")
            self.assertEqual(page.element("end-reason").get_attribute("data-reason"), "hangup")
        self.assertIn(f"by {caller}", bob.element("end-reason").text)
        for page in (alice, bob):
            wait_until(lambda: page.driver.find_elements(By.CSS_SELECTOR, f"#records li[data-call-id='{call_id}']"),
                       what=f"the record on {page.user}'s page")
            record = page.driver.find_element(By.CSS_SELECTOR, f"#records li[data-call-id='{call_id}']")
            self.assertEqual(record.get_attribute("data-result"), "answered")
        alice.screenshot(f"{shots}-{caller}-after")
        return stats

    def test_a_video_call_between_two_browsers(self):
        self.video_call("", "alice", "bob", "direct")

    def test_a_video_call_relayed_through_turn(self):
        stats = self.video_call("&relay=1", "carol", "dave", "relay")
        for user, entry in stats.items():
            self.assertEqual(entry["localCandidateType"], "relay", f"{user}'s selected candidate")

    def test_a_rejected_audio_call(self):
        erin = self.page("erin")
        frank = self.page("frank")
        erin.log_in()
        frank.log_in()
        erin.call("frank", "audio")
        wait_until(lambda: frank.visible("incoming"), what="frank's incoming call screen")
        self.assertEqual(frank.element("incoming-media").text, "audio")
        frank.click("reject")
        wait_until(lambda: erin.visible("end-reason"), what="the rejection on erin's page")
        self.assertEqual(erin.element("end-reason").get_attribute("data-reason"), "reject")
        wait_until(lambda: erin.driver.find_elements(By.CSS_SELECTOR, "#records li[data-result='rejected']"),
                   what="erin's record")


def main():
    global ARGS, SERVER
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--web", required=True)
    parser.add_argument("--golden", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    ARGS, rest = parser.parse_known_args()
    SERVER = Servers()
    SERVER.start()
    try:
        program = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False)
        ok = program.result.wasSuccessful()
    finally:
        SERVER.stop()
    print(f"screenshots in {ARGS.artifacts}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
