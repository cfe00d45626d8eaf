#!/usr/bin/env python3
"""End-to-end tests of the browser client in real headless Chromium, and of the Swift SDK's
GStreamer engine (`switchboard call`) against it.

Starts coturn and the Switchboard server (the debug binary, built with the GStreamer trait) on
127.0.0.1, opens Chromium sessions with fake media devices through chromedriver, and drives the
page like a user: log in, call, answer, talk, mute, share a screen, switch to video, hang up, look
at the records. Other members are `switchboard call` processes driven through stdin, read through
their JSON lines. Each side proves it decoded the other's media: Chromium's framesDecoded,
totalSamplesReceived and audio energy from getStats, the Swift engine's frames and levels.
Everything stays on 127.0.0.0/8: Chromium resolves no host names, gathers only loopback host
candidates (the page's ?loopback=1), the Swift engine gathers on 127.0.0.1 only (--loopback), and
the relay-only runs use the local coturn.

Usage: run.py --binary .build/debug/switchboard --web Web --golden Tests/SwitchboardProtocolTests/Golden
              --artifacts .build/browser-artifacts
"""

import argparse
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
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


class Servers:
    """coturn and the Switchboard server, each in its own process, on free loopback ports."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="switchboard-browser-")
        self.turn_port = free_port(socket.SOCK_DGRAM)
        self.port = free_port()
        # The one server besides its own that the page may use: this server again, through a
        # forwarder on another loopback address (another origin), started by the test that uses it.
        self.listed_host = "127.0.0.3"
        self.listed_port = free_port(host=self.listed_host)
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
        self.start_switchboard()

    def start_switchboard(self):
        server_log = open(os.path.join(self.directory, "server.log"), "a")
        self.files.append(server_log)
        self.processes.append(subprocess.Popen(
            [ARGS.binary, "serve", "--port", str(self.port), "--database", f"{self.directory}/switchboard.sqlite",
             "--web-root", ARGS.web, "--turn-url", f"turn:127.0.0.1:{self.turn_port}?transport=udp",
             "--turn-secret", TURN_SECRET, "--log-level", "warning",
             "--web-allowed-servers", f"ws://{self.listed_host}:{self.listed_port}"],
            stdout=server_log, stderr=subprocess.STDOUT))
        wait_until(self.healthy, timeout=30, what="the server to answer /health")

    def restart_switchboard(self):
        """A deploy: SIGTERM (a graceful shutdown), then a new process on the same port and database."""
        server = self.processes.pop()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        self.start_switchboard()

    def health(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as response:
            return json.load(response) if response.status == 200 else None

    def healthy(self):
        return self.health() is not None

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
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.*",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--no-first-run", "--disable-domain-reliability",
        "--disable-client-side-phishing-detection", "--metrics-recording-only",
    ]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(ARGS.chromedriver), options=options)


class Page:
    """One user in one Chromium session."""

    def __init__(self, user, query="", url=None):
        self.user = user
        self.violations_expected = False
        self.driver = browser()
        # Every Content-Security-Policy violation of every document, from before its first script.
        self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
            window.cspViolations = [];
            document.addEventListener("securitypolicyviolation",
              (e) => window.cspViolations.push(`${e.effectiveDirective} ${e.blockedURI}`));"""})
        self.driver.get(url or SERVER.url(query))
        if url is None:
            wait_until(lambda: self.js("return !!window.switchboard"), what=f"{user}'s page to load")

    def csp_violations(self):
        """The policy violations the page has seen, and those Chromium logged."""
        self.driver.switch_to.default_content()
        seen = self.js("return window.cspViolations ?? []")
        logged = [line for line in self.console() if "Content Security Policy" in line]
        return seen + logged

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

    def record_result(self, call_id):
        """The result of the call's record in the list, once it shows."""
        selector = f"#records li[data-call-id='{call_id}']"
        wait_until(lambda: self.driver.find_elements(By.CSS_SELECTOR, selector), what=f"the record on {self.user}'s page")
        return self.driver.find_element(By.CSS_SELECTOR, selector).get_attribute("data-result")

    def screenshot(self, name):
        os.makedirs(ARGS.artifacts, exist_ok=True)
        path = os.path.join(ARGS.artifacts, f"{name}.png")
        self.driver.save_screenshot(path)
        return path

    def console(self):
        """Everything the browser logged so far."""
        try:
            self.logged = getattr(self, "logged", []) + [entry["message"] for entry in self.driver.get_log("browser")]
        except Exception:
            pass
        return getattr(self, "logged", [])

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


class SwiftCall:
    """A `switchboard call` process: the Swift SDK with the GStreamer engine as one member of a
    call. Commands go to its stdin; its JSON lines (events, a status each second, the summary
    last) are collected as they come."""

    def __init__(self, user, *arguments, relay=False):
        self.user = user
        with urllib.request.urlopen(f"http://127.0.0.1:{SERVER.port}/v1/dev/usersig?userID={user}") as response:
            credentials = json.load(response)
        self.lines = []
        self.log = open(os.path.join(SERVER.directory, f"call-{user}.log"), "w")
        self.process = subprocess.Popen(
            [ARGS.binary, "call", "--server", f"ws://127.0.0.1:{SERVER.port}/v1/ws",
             "--app-id", str(credentials["sdkAppID"]), "--user-sig", credentials["userSig"], "--user", user,
             "--json", "--loopback", "--log-level", os.environ.get("SWITCHBOARD_CALL_LOG", "warning"),
             *(["--relay"] if relay else []), *arguments],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.process.stdout:
            try:
                self.lines.append(json.loads(line))
            except ValueError:
                self.lines.append({"event": "unreadable", "text": line})

    def send(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def saw(self, text):
        """Waits for an event line whose summary contains `text`."""
        return wait_until(lambda: any(text in line.get("summary", "") for line in self.lines),
                          timeout=30, what=f"{self.user}'s switchboard call to report '{text}'")

    def member(self, peer):
        """The last status line's view of `peer` (quality, volume, audio level, frames), as numbers."""
        for line in reversed(self.lines):
            if line.get("event") == "status" and peer in line.get("members", {}):
                return {key: (int(value) if value.isdigit() else value) for key, value in line["members"][peer].items()}
        return None

    def value(self, peer, key):
        return (self.member(peer) or {}).get(key, 0)

    def finish(self, timeout=30):
        """Waits for the process to end; returns (exit status, the summary object)."""
        status = self.process.wait(timeout=timeout)
        self.reader.join(timeout=5)
        return status, (self.lines[-1] if self.lines else None)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()

    def output(self):
        with open(self.log.name) as f:
            errors = f.read()[-int(os.environ.get("SWITCHBOARD_CALL_LOG_TAIL", "3000")):]
        events = [line for line in self.lines if line.get("event") != "status"][-30:]
        return f"--- switchboard call {self.user}: stderr\n{errors}\n--- events\n" + "\n".join(map(json.dumps, events))


def decoded(page, peer):
    """What Chromium decoded from `peer`: audio samples and energy, video and screen frames."""
    stats = page.peer_stats(peer) or {}
    return {"samples": stats.get("totalSamplesReceived", 0), "energy": stats.get("totalAudioEnergy", 0),
            "level": stats.get("receivedAudioLevel", 0), "video": stats.get("framesDecoded", {}).get("video", 0),
            "screen": stats.get("framesDecoded", {}).get("screen", 0),
            "width": stats.get("frameWidth", {}).get("video", 0)}


class Harness(unittest.TestCase):
    """Pages and `switchboard call` processes, closed after each test (with their logs when it failed)."""

    def setUp(self):
        self.pages = []
        self.calls = []

    def tearDown(self):
        failed = any(error for _, error in (self._outcome.result.errors + self._outcome.result.failures)
                     if _ is self) if hasattr(self._outcome, "result") else False
        # Every page ran under its Content-Security-Policy without breaking it (a test that
        # provokes a violation on purpose says so).
        violations = {}
        for page in self.pages:
            if not failed and not page.violations_expected:
                found = page.csp_violations()
                if found:
                    violations[page.user] = found
            if failed:
                page.screenshot(f"failed-{self._testMethodName}-{page.user}")
                print(f"--- console of {page.user}", *page.console()[-20:], sep="\n", file=sys.stderr)
            page.close()
        for call in self.calls:
            call.stop()
            if failed:
                print(call.output(), file=sys.stderr)
        if failed:
            print(SERVER.logs(), file=sys.stderr)
        if violations:
            self.fail(f"Content-Security-Policy violations: {violations}")

    def page(self, user, query="", url=None):
        page = Page(user, query, url)
        self.pages.append(page)
        return page

    def logged_in(self, *users, query=""):
        pages = [self.page(user, query) for user in users]
        for page in pages:
            page.log_in()
        return pages

    def swift(self, user, *arguments, relay=False):
        call = SwiftCall(user, *arguments, relay=relay)
        self.calls.append(call)
        return call


class BrowserTests(Harness):
    """The browser client against itself."""

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
        alice, bob = self.logged_in(caller, callee, query=query)

        alice.call(callee, "video")
        wait_until(lambda: bob.visible("incoming"), what=f"{callee}'s incoming call screen")
        self.assertIn(caller, bob.element("incoming-caller").text)
        self.assertEqual(bob.element("incoming-media").text, "video")
        bob.click("accept")
        wait_until(lambda: alice.visible("call-view") and bob.visible("call-view"), what="both in the call")

        # Audio and video flow both ways, and are decoded: frames, audio samples with energy in them.
        wait_until(lambda: alice.peer_stats(callee) and bob.peer_stats(caller), what="peer connections")
        for page, peer in ((alice, callee), (bob, caller)):
            for kind in ("audio", "video"):
                grows(page, peer, "bytesReceived", kind)
                grows(page, peer, "bytesSent", kind)
            grows_by(lambda: decoded(page, peer)["video"], f"{page.user}'s decoded frames from {peer}")
            grows_by(lambda: decoded(page, peer)["samples"], f"{page.user}'s decoded audio from {peer}")
            wait_until(lambda: decoded(page, peer)["energy"] > 0, what=f"audio energy from {peer} at {page.user}")
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
            self.assertEqual(page.record_result(call_id), "answered")
        alice.screenshot(f"{shots}-{caller}-after")
        return stats

    def test_a_video_call_between_two_browsers(self):
        self.video_call("", "alice", "bob", "direct")

    def test_a_video_call_relayed_through_turn(self):
        stats = self.video_call("&relay=1", "carol", "dave", "relay")
        for user, entry in stats.items():
            self.assertEqual(entry["localCandidateType"], "relay", f"{user}'s selected candidate")

    def test_a_server_restart_keeps_the_call(self):
        nina, omar = self.logged_in("nina", "omar")
        nina.call("omar", "video")
        wait_until(lambda: omar.visible("incoming"), what="omar's incoming call screen")
        omar.click("accept")
        wait_until(lambda: nina.visible("call-view") and omar.visible("call-view"), what="both in the call")
        pairs = ((nina, "omar"), (omar, "nina"))
        for page, peer in pairs:
            wait_until(lambda: page.peer_stats(peer), what=f"{page.user}'s connection to {peer}")
            grows_by(lambda: decoded(page, peer)["video"], f"{page.user}'s decoded frames from {peer}")
        call_id = nina.js("return window.switchboard.activeCall().info.callId")
        before = {page.user: page.peer_stats(peer) for page, peer in pairs}

        # A deploy. Media goes peer to peer, so it never stops; the pages reconnect to the new
        # process, which restored the call from its journal.
        SERVER.restart_switchboard()
        wait_until(lambda: (SERVER.health() or {}).get("devices") == 2, timeout=30,
                   what="both pages logged in to the new process")
        self.assertEqual(SERVER.health().get("activeCalls"), 1)
        for page, peer in pairs:
            wait_until(lambda: page.js("return window.switchboard.state.status") == "loggedIn",
                       what=f"{page.user}'s page back online")
            self.assertTrue(page.visible("call-view"), f"{page.user} still in the call")
            self.assertEqual(page.js("return window.switchboard.activeCall().info.callId"), call_id)
            # The same connection (no new one, no ICE restart): same candidate pair, and its
            # counters went on from where they were.
            now = page.peer_stats(peer)
            self.assertEqual(now["candidatePair"], before[page.user]["candidatePair"])
            self.assertGreaterEqual(now["framesDecoded"]["video"], before[page.user]["framesDecoded"]["video"])
            grows_by(lambda: decoded(page, peer)["video"], f"{page.user}'s decoded frames from {peer} after the restart")
            grows_by(lambda: decoded(page, peer)["samples"], f"{page.user}'s decoded audio from {peer} after the restart")

        # The new process runs the call: a mute reaches the other side, a hang-up ends it for both.
        nina.click("mute")
        wait_until(lambda: omar.js(
            "return document.querySelector(`.tile[data-user='nina'] .indicators`).dataset.microphone") == "off",
            what="omar to see nina's microphone off through the new process")
        nina.click("hangup")
        for page in (nina, omar):
            wait_until(lambda: page.visible("end-reason"), what=f"the end on {page.user}'s page")
            self.assertEqual(page.element("end-reason").get_attribute("data-reason"), "hangup")
            self.assertEqual(page.record_result(call_id), "answered")

    def test_a_rejected_audio_call(self):
        erin, frank = self.logged_in("erin", "frank")
        erin.call("frank", "audio")
        wait_until(lambda: frank.visible("incoming"), what="frank's incoming call screen")
        self.assertEqual(frank.element("incoming-media").text, "audio")
        frank.click("reject")
        wait_until(lambda: erin.visible("end-reason"), what="the rejection on erin's page")
        self.assertEqual(erin.element("end-reason").get_attribute("data-reason"), "reject")
        wait_until(lambda: erin.driver.find_elements(By.CSS_SELECTOR, "#records li[data-result='rejected']"),
                   what="erin's record")


class SwiftEngineTests(Harness):
    """Chromium against the Swift SDK's GStreamer engine (`switchboard call`)."""

    def test_switchboard_call_calls_a_browser_with_video(self):
        gina = self.page("gina")
        gina.log_in()
        hank = self.swift("hank", "--to", "gina", "--video")
        wait_until(lambda: gina.visible("incoming"), what="gina's incoming call screen")
        self.assertEqual(gina.element("incoming-media").text, "video")
        gina.click("accept")
        wait_until(lambda: gina.peer_stats("hank"), what="gina's connection to hank")

        # Chromium decodes the engine's audio (a tone, with energy) and video at the asked size.
        grows_by(lambda: decoded(gina, "hank")["samples"], "gina's decoded audio from hank")
        wait_until(lambda: decoded(gina, "hank")["energy"] > 0 and decoded(gina, "hank")["level"] > 5,
                   what="hank's tone at gina")
        grows_by(lambda: decoded(gina, "hank")["video"], "gina's decoded frames from hank")
        wait_until(lambda: decoded(gina, "hank")["width"] == 640, what="hank's 640-wide video at gina")
        # The engine decodes Chromium's audio and video.
        grows_by(lambda: hank.value("gina", "audioFrames"), "hank's decoded audio from gina")
        grows_by(lambda: hank.value("gina", "videoFrames"), "hank's decoded video from gina")
        gina.screenshot("swift-video-gina")

        # hank mutes: gina hears silence (packets still come, their energy stops growing).
        hank.send("mute")
        wait_until(lambda: decoded(gina, "hank")["level"] == 0, what="silence from hank at gina")
        still(lambda: round(decoded(gina, "hank")["energy"], 6), "hank's audio energy at gina")
        grows_by(lambda: decoded(gina, "hank")["samples"], "silent samples from hank")
        hank.send("unmute")
        wait_until(lambda: decoded(gina, "hank")["level"] > 5, what="hank's tone again at gina")

        # hank's camera off: gina decodes no more frames; on: again.
        hank.send("camera off")
        still(lambda: decoded(gina, "hank")["video"], "hank's frames at gina")
        hank.send("camera on")
        grows_by(lambda: decoded(gina, "hank")["video"], "hank's frames at gina again")

        # A higher quality: gina's decoder gets a larger picture.
        hank.send("quality p540")
        wait_until(lambda: decoded(gina, "hank")["width"] == 960, timeout=30, what="hank's 960-wide video at gina")

        # hank shares a screen: gina shows it as a screen tile and decodes it; then he stops.
        hank.send("share pattern")
        wait_until(lambda: {"user": "hank", "role": "screen"} in gina.js("return window.switchboard.tiles()"),
                   what="hank's screen tile at gina")
        grows_by(lambda: decoded(gina, "hank")["screen"], "gina's decoded screen frames from hank")
        wait_until(lambda: gina.js("return window.switchboard.screenPlaying('hank')"), what="hank's screen playing")
        gina.screenshot("swift-screen-gina")
        hank.send("unshare")
        wait_until(lambda: all(t["role"] != "screen" for t in gina.js("return window.switchboard.tiles()")),
                   what="hank's screen tile to go")

        # gina shares hers (getDisplayMedia): the engine receives and decodes it, until she stops.
        gina.click("share")
        hank.saw("receiving gina's screen")
        grows_by(lambda: hank.value("gina", "screenFrames"), "hank's decoded screen frames from gina")
        gina.click("share")
        hank.saw("gina's screen ended")

        # gina mutes and turns her camera off: the engine decodes nothing more of either.
        gina.click("mute")
        still(lambda: hank.value("gina", "audioFrames"), "gina's audio at hank")
        gina.click("mute")
        grows_by(lambda: hank.value("gina", "audioFrames"), "gina's audio at hank again")
        gina.click("camera")
        still(lambda: hank.value("gina", "videoFrames"), "gina's frames at hank")
        gina.click("camera")
        grows_by(lambda: hank.value("gina", "videoFrames"), "gina's frames at hank again")

        hank.send("hangup")
        status, summary = hank.finish()
        self.assertEqual(status, 0, summary)
        self.assertEqual(summary["endReason"], "hangup")
        member = summary["members"]["gina"]
        self.assertGreater(member["audio"]["packetsReceived"], 0)
        self.assertGreater(member["audio"]["framesDecoded"], 0)
        self.assertGreater(member["audio"]["level"], 0)
        self.assertGreater(member["video"]["framesDecoded"], 0)
        self.assertEqual(member["candidateType"], "host")
        wait_until(lambda: gina.visible("end-reason"), what="the end on gina's page")

    def test_a_browser_calls_switchboard_call_through_turn_and_switches_to_video(self):
        ivy = self.page("ivy", "&relay=1")
        ivy.log_in()
        jack = self.swift("jack", "--answer", relay=True)
        wait_until(lambda: any(line.get("event") == "waiting" for line in jack.lines), what="jack waiting for a call")
        ivy.call("jack", "audio")
        wait_until(lambda: ivy.visible("call-view") and ivy.peer_stats("jack"), what="ivy in the call with jack")
        grows_by(lambda: decoded(ivy, "jack")["samples"], "ivy's decoded audio from jack")
        wait_until(lambda: decoded(ivy, "jack")["energy"] > 0, what="jack's tone at ivy")
        grows_by(lambda: jack.value("ivy", "audioFrames"), "jack's decoded audio from ivy")
        self.assertEqual(ivy.peer_stats("jack")["localCandidateType"], "relay")

        # ivy asks for video; switchboard call agrees: each side adds its camera and decodes the other's.
        ivy.click("switch-media")
        wait_until(lambda: any(line.get("event") == "mediaTypeChangeAnswered" for line in jack.lines),
                   what="jack to answer the switch")
        grows_by(lambda: decoded(ivy, "jack")["video"], "ivy's decoded frames from jack", timeout=30)
        grows_by(lambda: jack.value("ivy", "videoFrames"), "jack's decoded frames from ivy", timeout=30)
        ivy.screenshot("swift-switched-ivy")

        # jack asks to go back to audio; ivy's page asks her, as a phone does, and she agrees.
        jack.send("switch audio")
        wait_until(lambda: ivy.visible("media-change"), what="ivy asked to switch")
        self.assertEqual(ivy.element("media-change-type").text, "audio")
        ivy.click("media-change-agree")
        jack.saw("ivy's video ended")
        still(lambda: decoded(ivy, "jack")["video"], "jack's frames at ivy")
        grows_by(lambda: decoded(ivy, "jack")["samples"], "jack's audio at ivy after the switch")

        ivy.click("hangup")
        status, summary = jack.finish()
        self.assertEqual(status, 0, summary)
        self.assertEqual(summary["endReason"], "hangup")
        member = summary["members"]["ivy"]
        self.assertEqual(member["candidateType"], "relay")
        self.assertGreater(member["audio"]["framesDecoded"], 0)
        self.assertGreater(member["video"]["framesDecoded"], 0)

    def test_a_mesh_of_two_browsers_and_switchboard_call(self):
        kim = self.page("kim")
        lee = self.page("lee")
        kim.log_in()
        lee.log_in()
        mia = self.swift("mia", "--answer")
        wait_until(lambda: any(line.get("event") == "waiting" for line in mia.lines), what="mia waiting for a call")
        kim.call("lee,mia", "audio")
        wait_until(lambda: lee.visible("incoming"), what="lee's incoming call screen")
        lee.click("accept")
        for page, others in ((kim, ("lee", "mia")), (lee, ("kim", "mia"))):
            for peer in others:
                wait_until(lambda: page.peer_stats(peer), what=f"{page.user}'s connection to {peer}")
                grows_by(lambda: decoded(page, peer)["samples"], f"{page.user}'s decoded audio from {peer}")
        for peer in ("kim", "lee"):
            grows_by(lambda: mia.value(peer, "audioFrames"), f"mia's decoded audio from {peer}")

        mia.send("hangup")
        status, summary = mia.finish()
        self.assertEqual(status, 0, summary)
        self.assertEqual(set(summary["members"]), {"kim", "lee"})
        for member in summary["members"].values():
            self.assertGreater(member["audio"]["framesDecoded"], 0)
        kim.click("hangup")


class Listener:
    """A TCP listener that counts the connections it gets: a stranger's server."""

    def __init__(self, host, port=0, serve=None):
        self.socket = socket.create_server((host, port))
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self.serve = serve or (lambda connection: connection.close())
        self.open = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            self.open.append(connection)
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def close(self):
        self.socket.close()
        for connection in self.open:
            try:
                connection.close()
            except OSError:
                pass


def forward_to_switchboard(connection):
    """Carries one connection to the Switchboard server and back, byte for byte."""
    upstream = socket.create_connection(("127.0.0.1", SERVER.port))

    def pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    back = threading.Thread(target=pump, args=(upstream, connection), daemon=True)
    back.start()
    pump(connection, upstream)
    back.join(timeout=5)
    upstream.close()


class FramingSite:
    """Another origin whose page shows the Switchboard page in a frame."""

    def __init__(self, host, target):
        page = f'<!doctype html><title>prize</title><iframe id="switchboard" src="{target}"></iframe>'.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class PagePolicyTests(Harness):
    """What the server lets browsers do with its page: connect only to its own origin and the
    servers the operator lists (a link cannot send a user's UserSig elsewhere), be framed by
    nobody, sniff nothing, leak no referrer."""

    def test_the_page_is_served_with_its_policy(self):
        with urllib.request.urlopen(SERVER.url()) as response:
            headers = response.headers
        own = f"127.0.0.1:{SERVER.port}"
        self.assertEqual(headers["Content-Security-Policy"],
                         "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                         f"connect-src 'self' ws://{own} wss://{own} ws://{SERVER.listed_host}:{SERVER.listed_port}; "
                         "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        self.assertEqual(headers["X-Frame-Options"], "DENY")
        self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
        self.assertEqual(headers["Referrer-Policy"], "no-referrer")

    def test_another_site_cannot_frame_the_page(self):
        site = FramingSite("127.0.0.4", SERVER.url())
        try:
            page = self.page("framer", url=site.url)
            page.violations_expected = True
            page.driver.switch_to.frame(page.driver.find_element(By.ID, "switchboard"))
            # Chromium shows its own error page in the frame instead of the client.
            wait_until(lambda: page.js("return location.href").startswith("chrome-error:"),
                       what="Chromium to refuse to show the page in the frame")
            self.assertFalse(page.js("return !!window.switchboard"))
            self.assertIsNone(page.js("return document.getElementById('accept')"))
        finally:
            site.close()

    def test_a_link_to_an_unlisted_server_is_refused_before_anything_connects(self):
        stranger = Listener("127.0.0.2")
        try:
            target = f"ws://127.0.0.2:{stranger.port}/v1/ws"
            page = self.page("victim", f"&server={target}")
            wait_until(lambda: page.visible("server-error"), what="the refusal on the page")
            self.assertIn(target, page.element("server-error").text)
            self.assertIn("will not connect there", page.element("server-error").text)
            self.assertFalse(page.element("login-dev").is_enabled())
            self.assertFalse(page.element("login").is_enabled())
            # A login pressed anyway fetches no UserSig and connects nowhere.
            page.element("user-id").send_keys("victim")
            page.js("const b = document.getElementById('login-dev'); b.disabled = false; b.click();")
            wait_until(lambda: "does not list" in page.element("login-error").text, what="the login refused")
            self.assertEqual(page.js("return window.switchboard.state.status"), "loggedOut")
            # The browser holds to the same list: the policy blocks a socket there whatever a script does.
            page.js(f"try {{ new WebSocket('{target}'); }} catch (e) {{}}")
            wait_until(lambda: any(f"127.0.0.2:{stranger.port}" in v for v in page.js("return window.cspViolations")),
                       what="the policy to block the socket")
            page.violations_expected = True
            self.assertEqual(stranger.connections, 0)
        finally:
            stranger.close()

    def test_a_listed_server_is_used(self):
        forwarder = Listener(SERVER.listed_host, SERVER.listed_port, serve=forward_to_switchboard)
        try:
            own = f"ws://127.0.0.1:{SERVER.port}/v1/ws"
            page = self.page("listed", f"&server=ws://{SERVER.listed_host}:{SERVER.listed_port}/v1/ws&server={own}")
            page.log_in()
            self.assertFalse(page.visible("server-error"))
            self.assertEqual(forwarder.connections, 1)
            self.assertEqual(page.js("return window.switchboard.state.status"), "loggedIn")
        finally:
            forwarder.close()


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
