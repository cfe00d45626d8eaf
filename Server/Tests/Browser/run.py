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
the relay-only runs use the local coturn. The network tests (NetworkTests) run the server and each
Chromium in network namespaces of their own instead (netns.py), where links are cut and addresses
moved; their traffic stays inside the namespaces the test made.

Usage: run.py --binary Server/.build/debug/switchboard --web Server/Sources/SwitchboardWebClient/Web
              --golden Server/Tests/SwitchboardProtocolTests/Golden --artifacts Server/.build/browser-artifacts
"""

import argparse
import http.server
import json
import os
import re
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

import netns
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

ARGS = None
SERVER = None
TURN_SECRET = "browser-test-turn-secret"
# The longest a group call's media may take to come back after its Janus is killed and started
# again, from the kill (docs/OPERATIONS.md, "When a Janus dies"): typically 3-7 s; once 18 s was
# seen for one member's video on a loaded machine.
JANUS_RECOVERY_BOUND = 30
# Every screen is checked and photographed at a laptop's size and a phone's.
DESKTOP = (1100, 900)
PHONE = (375, 812)
# The protocol's names a person should never read (docs/PROTOCOL.md); the page says them in words.
PROTOCOL_WORDS = ["noResponse", "lineBusy", "otherDeviceAccepted", "otherDeviceReject", "endByServer", "noAnswer",
                  "oneToOne", "veryBad", "timedOut", "callNotFound", "joinNotAllowed", "invalidCallState",
                  "alreadyInCall", "mediaChangeInProgress", "userSig", "sdkAppID:", "undefined", "null", "[object"]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "a11y.js")) as _checker:
    A11Y_CHECKER = _checker.read()


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


class ServerProcesses:
    """Processes in a directory of their own (logs, configuration, database), the Switchboard
    server among them on `self.port`: the page's address, the logs' tails, and a stop that ends
    them all and removes the directory."""

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

    def tails(self, names, lines):
        text = []
        for name in names:
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                with open(path) as f:
                    text.append(f"--- {name} (last lines)\n" + "".join(f.readlines()[-lines:]))
        return "\n".join(text)


class Servers(ServerProcesses):
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
             "--web-allowed-servers", f"ws://{self.listed_host}:{self.listed_port}",
             "--web-image-origins", f"http://localhost:{self.port}",
             # The push tests' subscriptions point at listeners on loopback (WebPushTests).
             "--web-push-allowed-hosts", "127.0.0.1"],
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



    def logs(self):
        return self.tails(("server.log", "turn.log"), 30)


def browser(autoplay=True, place=None, extra=()):
    """Chromium; `autoplay=False` keeps the browser's own rule that a page makes sound only after
    the user touched it (the tests' default lets pages play at once). `place` (a `TestNet`, a host
    and the server's origin) runs it inside that host's namespace, where the server's address is
    not loopback: the origin is treated as secure, as a site with TLS would be, so the page may use
    the camera."""
    options = Options()
    options.binary_location = ARGS.chromium
    for flag in [
        "--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1100,900",
        "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
        "--autoplay-policy=" + ("no-user-gesture-required" if autoplay else "document-user-activation-required"),
        "--allow-loopback-in-peer-connection",
        # No back-forward cache: a page left is gone, with its connection (the push tests).
        "--disable-features=WebRtcHideLocalIpsWithMdns,BackForwardCache",
        # Nothing leaves the machine: no name resolves except loopback, no background traffic.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.*, EXCLUDE localhost"
        + (", EXCLUDE 10.0.*" if place else ""),
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--no-first-run", "--disable-domain-reliability",
        "--disable-client-side-phishing-detection", "--metrics-recording-only", *extra,
    ]:
        options.add_argument(flag)
    if os.environ.get("SWITCHBOARD_FAKE_VIDEO"):
        # A video file as the camera instead of Chromium's drawn picture (group_bench.py's
        # camera-like clip: an encoder spends on it what it spends on a real camera's noise).
        options.add_argument("--use-file-for-fake-video-capture=" + os.environ["SWITCHBOARD_FAKE_VIDEO"])
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if place:
        net, host, origin = place
        options.add_argument(f"--unsafely-treat-insecure-origin-as-secure={origin}")
        return webdriver.Chrome(service=netns.NamespacedChromedriver(ARGS.chromedriver, net, host), options=options)
    return webdriver.Chrome(service=Service(ARGS.chromedriver), options=options)


class SharedChromium:
    """One Chromium whose windows are several users' pages: a big group call on a small machine
    runs one browser, GPU, audio and network process for all its pages instead of one each (each
    page still has its own renderer, with its own WebRTC). Its windows are never backgrounded."""

    def __init__(self):
        self.driver = browser(extra=["--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                                     "--disable-backgrounding-occluded-windows"])
        self.current = self.driver.current_window_handle
        self.unused = self.current
        self.windows = set()

    def window(self):
        """A new window of this Chromium, as a driver for one page."""
        if self.unused:
            handle, self.unused = self.unused, None
        else:
            self.driver.switch_to.new_window("window")
            handle = self.current = self.driver.current_window_handle
        self.windows.add(handle)
        return Window(self, handle)

    def focus(self, handle):
        if self.current != handle:
            self.driver.switch_to.window(handle)
            self.current = handle

    def close(self, handle):
        self.windows.discard(handle)
        if not self.windows:
            self.driver.quit()
            return
        self.focus(handle)
        self.driver.close()
        self.current = None


class Window:
    """A page's window in a `SharedChromium`, used as its driver: every command first makes this
    window the current one (elements found through it are used before another page's command).
    The browser's console log is the session's: the first page to read it gets every window's
    lines (a failure prints them under that page's name)."""

    def __init__(self, shared, handle):
        self._shared, self._handle = shared, handle

    def __getattr__(self, name):
        self._shared.focus(self._handle)
        return getattr(self._shared.driver, name)

    def quit(self):
        self._shared.close(self._handle)


class Page:
    """One user in one Chromium session, or in one window of a `SharedChromium`."""

    def __init__(self, user, query="", url=None, autoplay=True, place=None, shared=None):
        self.user = user
        self.violations_expected = False
        self.driver = shared.window() if shared else browser(autoplay, place)
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

    def notice(self, place, timeout=20):
        """What the page says in `place` (home, call, login) once it says something: the text,
        and the end reason, error code and switch result it was made from."""
        element = f"{place}-notice"
        wait_until(lambda: self.visible(element), timeout=timeout, what=f"a message on {self.user}'s {place} screen")
        node = self.element(element)
        return {"text": node.find_element(By.CSS_SELECTOR, ".text").text, "tone": node.get_attribute("data-tone"),
                "reason": node.get_attribute("data-reason"), "code": node.get_attribute("data-code"),
                "result": node.get_attribute("data-result")}

    def tile(self, user, screen=False):
        """What the page shows for `user` in the call: camera on or off, the picture playing, the
        avatar, the caption, the indicators."""
        key = f"screen:{user}" if screen else user
        return self.js("""
            const node = document.querySelector(`#stage .tile[data-key="${CSS.escape(arguments[0])}"]`);
            if (!node) return null;
            const video = node.querySelector("video");
            const persona = node.querySelector(".persona");
            const indicators = node.querySelector(".indicators");
            const avatar = persona.querySelector(".avatar");
            const visible = (e) => e.checkVisibility({checkVisibilityCSS: true});
            return {role: node.dataset.role, camera: node.dataset.camera, status: node.dataset.status,
                    videoShown: visible(video), playing: video.videoWidth > 0 && !video.paused,
                    personaShown: visible(persona), avatarImage: avatar.querySelector("img")?.src ?? null,
                    initial: avatar.querySelector("img") ? null : avatar.textContent,
                    state: persona.querySelector(".state").textContent,
                    label: node.querySelector(".label").textContent,
                    microphone: indicators.dataset.microphone, cameraIndicator: indicators.dataset.camera,
                    quality: indicators.dataset.quality, volume: indicators.dataset.volume,
                    micOffShown: visible(indicators.querySelector(".mic-off")),
                    said: indicators.getAttribute("aria-label")};""", key)

    def roster(self):
        """The list of people in the call: user → where they stand, in words."""
        return self.js("return Object.fromEntries([...document.querySelectorAll('#roster li')]"
                       ".map((li) => [li.dataset.user, li.querySelector('.where').textContent]))")

    def ringer(self):
        return self.js("return window.switchboard.ringer()")

    def viewport(self, size):
        """Lays the page out at `size` (width, height) as a device of that size would."""
        width, height = size
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        wait_until(lambda: self.js("return window.innerWidth") == width, what=f"{self.user}'s page at {width} px")

    def check_screen(self, name, sizes=(DESKTOP, PHONE), at_each=None):
        """At each size: the accessibility check (and no protocol words on screen), `at_each(size)`
        for what the test asserts there, and a screenshot
        (`.build/browser-artifacts/<name>-<user>-<w>x<h>.png`); at the first size also a walk through
        the screen with the Tab key (every control reached in order, each with a visible focus: the
        order is the page's, the same at every size)."""
        found = {}
        try:
            for size in sizes:
                self.viewport(size)
                if not self.js("return !!window.__a11y"):
                    self.js(A11Y_CHECKER)
                problems = self.js("return window.__a11y.problems()")
                shown = self.js("return document.body.innerText")
                problems += [f"the protocol's word {word!r} on screen" for word in PROTOCOL_WORDS if word in shown]
                problems += [f"an error code on screen: {code}" for code in re.findall(r"\(\d{4}\)", shown)]
                if size == sizes[0]:
                    problems += self.tab_walk()
                    self.js("document.activeElement?.blur()")
                if at_each:
                    at_each(size)
                self.screenshot(f"{name}-{self.user}-{size[0]}x{size[1]}")
                if problems:
                    found[f"{size[0]}x{size[1]}"] = problems
        finally:
            self.viewport(DESKTOP)
        if found:
            raise AssertionError(f"accessibility problems on {self.user}'s {name} screen: {found}")

    def tab_walk(self):
        """Presses Tab from the top of the screen through every control; returns what went wrong."""
        expected = self.js("return window.__a11y.tabbables().map(window.__a11y.describe)")
        self.js("window.__a11y.focusStart()")
        problems = []
        reached = []
        for _ in expected:
            ActionChains(self.driver).send_keys(Keys.TAB).perform()
            focused, shown = self.js("return [window.__a11y.describe(document.activeElement), window.__a11y.focusShown()]")
            reached.append(focused)
            if not shown:
                problems.append(f"no visible focus on {focused}")
        if reached != expected:
            problems.append(f"Tab order {reached} is not the screen's order {expected}")
        return problems

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

    def __init__(self, user, *arguments, relay=False, port=None):
        self.user = user
        port = port or SERVER.port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/dev/usersig?userID={user}") as response:
            credentials = json.load(response)
        self.lines = []
        self.log = open(os.path.join(SERVER.directory, f"call-{user}.log"), "w")
        self.process = subprocess.Popen(
            [ARGS.binary, "call", "--server", f"ws://127.0.0.1:{port}/v1/ws",
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

    def page(self, user, query="", url=None, autoplay=True, place=None, shared=None):
        page = Page(user, query, url, autoplay, place, shared)
        self.pages.append(page)
        return page

    def logged_in(self, *users, query=""):
        pages = [self.page(user, query) for user in users]
        for page in pages:
            page.log_in()
        return pages

    def swift(self, user, *arguments, relay=False, port=None):
        call = SwiftCall(user, *arguments, relay=relay, port=port)
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
            # Pushes go to PushKit and webhooks to app backends, not to browsers.
            if name.endswith(".json") and not name.startswith(("push.", "webhook.")):
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

    def test_every_reason_and_error_has_words(self):
        """words.js says every end reason, from each side, every record result and every error code
        of the protocol in words, with none of the protocol's names; records.js dates read as a
        phone's recents do."""
        page = self.page("words")
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "PROTOCOL.md")) as f:
            codes = sorted({int(code) for code in re.findall(r"^\| (\d{4}) \| `", f.read(), re.M)})
        report = page.driver.execute_async_script("""
            const [codes, done] = arguments;
            Promise.all([import('/js/words.js'), import('/js/records.js'), import('/js/protocol.js')]).then(
              ([words, records, protocol]) => {
                const sentences = [];
                const reasons = ["unknown", "hangup", "reject", "noResponse", "offline", "lineBusy", "canceled",
                                 "otherDeviceAccepted", "otherDeviceReject", "endByServer"];
                const name = (id) => id === "bob" ? "Bob" : id;
                for (const reason of reasons) for (const me of ["alice", "bob"]) for (const by of ["alice", "bob", undefined])
                  for (const group of [false, true]) for (const connected of [false, true])
                    sentences.push(words.endText({reason, userId: by}, {me, callerId: "alice", group, connected, name}));
                for (const result of ["answered", "missed", "noAnswer", "rejected", "canceled", "busy", "offline", "unknown"])
                  for (const direction of ["outgoing", "incoming"]) sentences.push(words.recordResultText({result, direction}));
                const errors = Object.fromEntries(codes.map((code) => [code, words.errorText({code}, "call")]));
                const now = new Date(2026, 10, 27, 15, 0).getTime();
                const at = (days, hour) => new Date(2026, 10, 27 - days, hour, 5).getTime();
                done({sentences, errors, generic: words.errorText({code: 1}),
                      dates: [records.dateText(at(0, 9), now, "en-GB"), records.dateText(at(1, 9), now, "en-GB"),
                              records.dateText(at(3, 9), now, "en-GB"), records.dateText(at(40, 9), now, "en-GB"),
                              records.dateText(new Date(2025, 0, 2).getTime(), now, "en-GB")]});
              }, (error) => done({error: String(error)}));
        """, codes)
        self.assertNotIn("error", report)
        self.assertGreater(len(codes), 50)
        for sentence in report["sentences"] + list(report["errors"].values()):
            self.assertTrue(sentence.strip(), sentence)
            for word in PROTOCOL_WORDS:
                self.assertNotIn(word, sentence)
            self.assertIsNone(re.search(r"\d{4}", sentence), sentence)
        # Every code the server or the page can give has its own sentence, not the generic one.
        on_the_wire = [code for code in codes if code < 4000 or code in (5001, 5002, 5003, 5006, 5007)]
        generic = [code for code in on_the_wire if report["errors"][str(code)] == report["generic"]
                   and code not in (1001, 1002, 1004, 1006, 1007, 1010, 1012, 2009, 3008, 3010, 3013, 3016, 3018, 3019)]
        self.assertEqual(generic, [], "codes a person can meet, said only as 'Something went wrong'")
        self.assertEqual(report["dates"], ["09:05", "Yesterday 09:05", "Tuesday 09:05", "18 Oct", "2 Jan 2025"])

    def test_the_video_gate_pauses_on_a_narrow_link_and_tries_again(self):
        """videogate.js, step by step: three low estimates in a row pause video; the pause ends in a
        trial, which passes when the estimate reaches the floor and otherwise pauses again, twice
        as long each time up to half a minute; a good estimate starts the count and the pauses
        over."""
        page = self.page("gate")
        runs = page.driver.execute_async_script("""
            const done = arguments[0];
            import('/js/videogate.js').then(({VideoGate}) => {
              // Each step: [ms since the start, estimate]; the result: [ms, action] for each action.
              const run = (steps) => {
                const gate = new VideoGate();
                return steps.map(([at, kbps]) => [at, gate.sample(at, kbps)]).filter(([, action]) => action);
              };
              const every = (from, to, kbps) => Array.from({length: (to - from) / 1000 + 1}, (_, i) => [from + i * 1000, kbps]);
              done({
                open: run(every(0, 10000, 3700)),
                narrow: run(every(0, 2000, 84)),
                noEstimate: run([[0, 84], [1000, null], [2000, 84], [3000, 84]]),
                aGoodReadingInBetween: run([[0, 84], [1000, 84], [2000, 200], [3000, 84], [4000, 84]]),
                trialFails: run([...every(0, 2000, 84), [11999, 50], ...every(12000, 17000, 60)]),
                trialsFail: run([...every(0, 2000, 84), ...every(12000, 17000, 60), [36999, 60], ...every(37000, 42000, 60),
                                 [71999, 60], ...every(72000, 77000, 60), [106999, 60], ...every(107000, 112000, 60)]),
                trialPasses: run([...every(0, 2000, 84), [12000, 60], [13000, 90], [14000, 150], ...every(15000, 17000, 84),
                                  [26999, 50], [27000, 50]]),
              });
            }, (error) => done({error: String(error)}));
        """)
        self.assertNotIn("error", runs)
        self.assertEqual(runs["open"], [])
        self.assertEqual(runs["narrow"], [[2000, "pause"]])
        self.assertEqual(runs["noEstimate"], [[3000, "pause"]])
        self.assertEqual(runs["aGoodReadingInBetween"], [])
        # Paused at 2 s for 10 s: not over at 11.999 s; the trial from 12 s fails at 17 s.
        self.assertEqual(runs["trialFails"], [[2000, "pause"], [12000, "resume"], [17000, "pause"]])
        # Each pause twice as long as the one before (10, 20, 30, 30 s), up to half a minute.
        self.assertEqual(runs["trialsFail"], [[2000, "pause"], [12000, "resume"], [17000, "pause"],
                                              [37000, "resume"], [42000, "pause"], [72000, "resume"],
                                              [77000, "pause"], [107000, "resume"], [112000, "pause"]])
        # A trial passes at the floor, and the next pause is the first's length again.
        self.assertEqual(runs["trialPasses"], [[2000, "pause"], [12000, "resume"], [14000, "open"], [17000, "pause"],
                                               [27000, "resume"]])

    def test_a_member_whose_media_stops_shows_as_down(self):
        """stall.js, step by step (issue 48): nothing received for 2 s from a member who sends
        (microphone or camera on) makes them stalled, shown as down, until media comes again; a
        member who sends nothing by choice, or from whom nothing came yet, never is; one who left
        flows."""
        page = self.page("stall")
        runs = page.driver.execute_async_script("""
            const done = arguments[0];
            import('/js/stall.js').then(({StallWatch}) => {
              // Each step: [ms, {member: bytes received}, [members who send]]; the result: the changes.
              const run = (steps) => {
                const watch = new StallWatch();
                return steps.map(([at, received, senders]) => watch.sample(at, received, new Set(senders)));
              };
              done({
                stops: run([[1000, {bob: 50}, ['bob']], [2000, {bob: 90}, ['bob']], [3000, {bob: 90}, ['bob']],
                            [4000, {bob: 90}, ['bob']], [5000, {bob: 90}, ['bob']], [6000, {bob: 95}, ['bob']]]),
                muted: run([[1000, {bob: 50}, []], [4000, {bob: 50}, []]]),
                unmuted: run([[1000, {bob: 50}, []], [9000, {bob: 50}, ['bob']], [11000, {bob: 50}, ['bob']]]),
                nothingYet: run([[1000, {bob: 0}, ['bob']], [5000, {bob: 0}, ['bob']]]),
                left: run([[1000, {bob: 5}, ['bob']], [3000, {bob: 5}, ['bob']], [4000, {}, ['bob']]]),
              });
            }, (error) => done({error: String(error)}));
        """)
        self.assertNotIn("error", runs)
        self.assertEqual(runs["stops"], [[], [], [], [["bob", "stalled"]], [], [["bob", "flowing"]]])
        self.assertEqual(runs["muted"], [[], []])
        self.assertEqual(runs["unmuted"], [[], [], [["bob", "stalled"]]])
        self.assertEqual(runs["nothingYet"], [[], []])
        self.assertEqual(runs["left"], [[], [["bob", "stalled"]], [["bob", "flowing"]]])

    # MARK: calls

    def video_call(self, query, caller, callee, shots, share=False):
        alice, bob = self.logged_in(caller, callee, query=query)

        alice.call(callee, "video")
        wait_until(lambda: bob.visible("incoming"), what=f"{callee}'s incoming call screen")
        self.assertIn(caller, bob.element("incoming-caller").text)
        self.assertEqual(bob.element("incoming-media").text, "Incoming video call")
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
        wait_until(lambda: alice.element("call-state").text not in ("", "00:00", "Calling…"), what="the timer")
        self.assertRegex(bob.element("call-state").text, r"^\d\d:\d\d$")
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

        # Mute: alice sends no more audio, bob receives no more, and shows her microphone off.
        alice.click("mute")
        self.assertEqual(alice.element("mute").get_attribute("aria-pressed"), "true")
        stands_still(alice, callee, "bytesSent", "audio")
        stands_still(bob, caller, "bytesReceived", "audio")
        grows(alice, callee, "bytesSent", "video")
        wait_until(lambda: bob.tile(caller)["micOffShown"], what="bob to show alice's microphone off")
        self.assertEqual(bob.tile(caller)["microphone"], "off")
        self.assertIn("microphone off", bob.tile(caller)["said"])
        self.assertTrue(alice.tile(caller)["micOffShown"], "alice's own tile says she is muted")
        alice.click("mute")
        grows(bob, caller, "bytesReceived", "audio")
        wait_until(lambda: not bob.tile(caller)["micOffShown"], what="bob to show alice's microphone on")

        # Camera off: bob sends no video, alice shows his picture instead of his video.
        bob.click("camera")
        stands_still(bob, caller, "bytesSent", "video")
        wait_until(lambda: (lambda t: t["camera"] == "off" and t["personaShown"] and not t["videoShown"]
                            and t["state"] == "Camera off")(alice.tile(callee)), what="alice to show bob's camera off")
        self.assertTrue(bob.tile(callee)["personaShown"], "bob's own tile shows his camera off")
        bob.click("camera")
        grows(alice, callee, "bytesReceived", "video")
        wait_until(lambda: (lambda t: t["camera"] == "on" and t["videoShown"] and t["playing"])(alice.tile(callee)),
                   what="alice to show bob's camera on")

        if share:
            # alice shares her screen: bob shows it as a screen tile, playing, and decodes it; then she stops.
            alice.click("share")
            self.assertEqual(alice.element("share").get_attribute("aria-pressed"), "true")
            wait_until(lambda: (bob.tile(caller, screen=True) or {}).get("playing"), what="alice's screen on bob's page")
            self.assertEqual(bob.tile(caller, screen=True)["label"], f"{caller}’s screen")
            grows_by(lambda: decoded(bob, caller)["screen"], "bob's decoded screen frames from alice")
            bob.check_screen(f"{shots}-screen-share")
            alice.click("share")
            wait_until(lambda: bob.tile(caller, screen=True) is None, what="alice's screen tile to go")

        # The grid layout on request.
        alice.js("const s = document.getElementById('layout'); s.value = 'grid'; s.dispatchEvent(new Event('change'));")
        wait_until(lambda: {t["role"] for t in alice.js("return window.switchboard.tiles()")} == {"grid"},
                   what="the grid layout")
        stats = {caller: alice.peer_stats(callee), callee: bob.peer_stats(caller)}

        # Hang up: both sides end with the reason, and both records appear.
        call_id = alice.js("return window.switchboard.activeCall().info.callId")
        alice.click("hangup")
        for page in (alice, bob):
            self.assertEqual(page.notice("home")["reason"], "hangup")
        self.assertEqual(bob.notice("home")["text"], f"{caller} hung up.")
        self.assertEqual(alice.notice("home")["text"], "You hung up.")
        for page in (alice, bob):
            self.assertEqual(page.record_result(call_id), "answered")
        alice.screenshot(f"{shots}-{caller}-after")
        return stats

    def test_a_video_call_between_two_browsers(self):
        self.video_call("", "alice", "bob", "direct", share=True)

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
            self.assertEqual(page.notice("home")["reason"], "hangup")
            self.assertEqual(page.record_result(call_id), "answered")


def dev_usersig(user):
    """A UserSig for `user` from the development server, as an app's backend would hand it out."""
    with urllib.request.urlopen(f"http://127.0.0.1:{SERVER.port}/v1/dev/usersig?userID={user}") as response:
        return json.load(response)


class Background:
    """`page`'s tab behind another tab of the same site, as when the user looks elsewhere: the
    page is hidden. The notifications it shows meanwhile are reported to the front tab (the
    system's notification centre cannot be read, so the page's Notification is wrapped, the real
    one still called)."""

    def __init__(self, page):
        self.page = page
        page.js("""
            const Real = window.Notification;
            const channel = new BroadcastChannel("test-notifications");
            window.Notification = class extends Real {
              constructor(title, options) {
                channel.postMessage({title, body: options?.body, tag: options?.tag, hidden: document.hidden});
                super(title, options);
              }
            };
            Object.defineProperty(window.Notification, "permission", {get: () => Real.permission});""")
        self.page_tab = page.driver.current_window_handle
        page.driver.switch_to.new_window("tab")
        page.driver.get(f"http://127.0.0.1:{SERVER.port}/health")
        page.js("""window.notified = [];
                   new BroadcastChannel("test-notifications").onmessage = (e) => window.notified.push(e.data);""")

    def notifications(self):
        return self.page.js("return window.notified")

    def close(self):
        """Back to the page: the other tab closes, the page is in front again."""
        self.page.driver.close()
        self.page.driver.switch_to.window(self.page_tab)


class ProductTests(Harness):
    """The page as people use it: what it shows for every step of a call (DOM state, checked at a
    laptop's size and a phone's, with screenshots), every screen passing the accessibility check,
    beside what WebRTC decodes."""

    def test_a_one_to_one_call_from_ringing_to_records(self):
        amy, ben = self.page("amy"), self.page("ben")
        amy.check_screen("login")

        # amy logs in with a UserSig from her app's backend; ben the development way.
        credentials = dev_usersig("amy")
        amy.element("user-id").send_keys("amy")
        amy.driver.find_element(By.CSS_SELECTOR, "#production-login summary").click()
        amy.element("sdk-app-id").send_keys(str(credentials["sdkAppID"]))
        amy.element("user-sig").send_keys(credentials["userSig"])
        amy.click("login")
        wait_until(lambda: amy.visible("home-view"), what="amy logged in")
        ben.log_in()
        self.assertEqual(amy.element("status").text, "Online")
        self.assertTrue(amy.visible("records-empty"))
        self.assertTrue(amy.visible("alerts-offer"))
        amy.check_screen("home-empty")

        # Her name and picture, through profile.set.
        amy.click("profile")
        wait_until(lambda: amy.visible("profile-dialog"), what="the profile dialog")
        amy.check_screen("profile")
        amy.element("nickname").send_keys("Amy Pond")
        amy.element("avatar-url").send_keys(f"http://127.0.0.1:{SERVER.port}/img/icon.svg")
        amy.click("profile-save")
        wait_until(lambda: not amy.visible("profile-dialog"), what="the profile saved")
        self.assertEqual(amy.element("me-name").text, "Amy Pond")
        self.assertTrue(amy.js("return document.querySelector('#me-avatar img')?.complete"))

        # ben lets the page notify him, then looks at another tab.
        ben.driver.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": f"http://127.0.0.1:{SERVER.port}", "permissions": ["notifications"]})
        wait_until(lambda: not ben.visible("alerts-offer"), what="the notification offer gone")
        away = Background(ben)
        amy.call("ben", "audio")
        wait_until(lambda: amy.visible("call-view") and amy.visible("calling-card"), what="amy calling")
        self.assertEqual(amy.element("calling-name").text, "ben")
        self.assertEqual(amy.element("call-state").text, "Calling…")
        wait_until(lambda: amy.ringer()["kind"] == "ringback" and amy.ringer()["level"] > 0.005,
                   what="the ringback amy hears")
        note = wait_until(lambda: away.notifications(), what="a notification on ben's hidden page")[0]
        self.assertEqual(note, {"title": "Amy Pond is calling", "body": "Incoming audio call", "tag": note["tag"],
                                "hidden": True})
        away.close()

        # ben's page: the ringing screen over everything, the title, the ringtone.
        wait_until(lambda: ben.visible("incoming"), what="ben's ringing screen")
        self.assertEqual(ben.element("incoming-caller").text, "Amy Pond")
        self.assertEqual(ben.element("incoming-media").text, "Incoming audio call")
        self.assertTrue(ben.js("return document.querySelector('#incoming-avatar img').src").endswith("/img/icon.svg"))
        self.assertTrue(ben.driver.title.startswith("Amy Pond is calling"), ben.driver.title)
        self.assertEqual(ben.js("return document.activeElement.id"), "accept")
        wait_until(lambda: ben.ringer()["kind"] == "ringtone" and ben.ringer()["level"] > 0.005, what="ben's ringtone")
        ben.click("ring-mute")
        self.assertEqual(ben.ringer()["state"], "muted")
        # The level is measured from what plays: the last instant before the mute may still be
        # in it (one full run read 0.0036), so silence is waited for.
        wait_until(lambda: ben.ringer()["level"] == 0, what="silence from ben's muted ringtone")
        self.assertEqual(ben.element("ring-mute").get_attribute("aria-pressed"), "true")
        ben.click("ring-mute")
        self.assertEqual(ben.ringer()["state"], "playing")

        def covers_the_window(size):
            box = ben.js("const r = document.querySelector('#incoming .ring-card').getBoundingClientRect();"
                         "return [r.left, r.top, r.width, r.height]")
            accept = ben.js("const r = document.getElementById('accept').getBoundingClientRect(); return r.bottom")
            self.assertLessEqual(accept, size[1], "Accept within the window")
            if size == PHONE:
                self.assertEqual([round(v) for v in box], [0, 0, size[0], size[1]], "the ringing screen fills a phone")
        ben.check_screen("ringing", at_each=covers_the_window)
        amy.check_screen("calling")

        # ben answers: both in the call, the ringing stops, each sees the other.
        ben.click("accept")
        wait_until(lambda: amy.visible("call-view") and ben.visible("call-view"), what="both in the call")
        wait_until(lambda: re.match(r"^\d\d:\d\d$", amy.element("call-state").text), what="amy's timer")
        for page in (amy, ben):
            wait_until(lambda: page.ringer()["state"] == "off", what=f"{page.user}'s ringing to stop")
            self.assertEqual(page.driver.title, "Switchboard")
        wait_until(lambda: amy.tile("ben") and amy.tile("ben")["role"] == "main", what="ben large on amy's page")
        self.assertTrue(amy.tile("ben")["personaShown"])
        self.assertEqual(amy.tile("ben")["initial"], "B")
        self.assertEqual(ben.tile("amy")["label"], "Amy Pond")
        self.assertTrue(ben.tile("amy")["avatarImage"].endswith("/img/icon.svg"))
        self.assertEqual(ben.tile("ben")["label"], "ben (you)")
        self.assertEqual(amy.roster(), {"amy": "in the call", "ben": "in the call"})
        for page, peer in ((amy, "ben"), (ben, "amy")):
            wait_until(lambda: page.peer_stats(peer), what=f"{page.user}'s connection to {peer}")
            grows_by(lambda: decoded(page, peer)["samples"], f"{page.user}'s decoded audio from {peer}")

        # Audio to video: ben declines first, and amy hears it.
        amy.click("switch-media")
        wait_until(lambda: amy.visible("media-asking"), what="amy waiting for ben's answer")
        self.assertEqual(amy.element("media-asking-text").text, "Waiting for ben to agree to video…")
        amy.check_screen("switch-asking")
        wait_until(lambda: ben.visible("media-change"), what="ben asked to switch")
        self.assertEqual(ben.element("media-change-text").text, "Amy Pond asks to switch to video.")
        ben.check_screen("switch-asked")
        ben.click("media-change-decline")
        said = amy.notice("call")
        self.assertEqual((said["result"], said["text"]), ("declined", "ben declined switching to video."))
        self.assertFalse(amy.visible("media-asking"))

        # Asked again, ben agrees: each page shows the other's camera (each page reports its own
        # camera when the call switches), and each decodes the other's frames.
        amy.click("switch-media")
        wait_until(lambda: ben.visible("media-change"), what="ben asked again")
        ben.click("media-change-agree")
        for page, peer in ((amy, "ben"), (ben, "amy")):
            wait_until(lambda: (lambda t: t["camera"] == "on" and t["videoShown"] and t["playing"]
                                and not t["personaShown"] and t["cameraIndicator"] == "on")(page.tile(peer)),
                       what=f"{peer}'s camera on {page.user}'s page")
            wait_until(lambda: page.tile(page.user)["playing"], what=f"{page.user}'s own camera")
            grows_by(lambda: decoded(page, peer)["video"], f"{page.user}'s decoded frames from {peer}")
            self.assertEqual(page.element("switch-media").text, "Switch to audio")
            self.assertTrue(page.visible("camera"))
        amy.check_screen("video-call")

        # Video to audio, asked by ben: pictures give way to avatars, no more frames.
        ben.click("switch-media")
        wait_until(lambda: amy.visible("media-change"), what="amy asked to switch")
        amy.click("media-change-agree")
        for page, peer in ((amy, "ben"), (ben, "amy")):
            wait_until(lambda: (lambda t: t["camera"] == "off" and t["personaShown"] and not t["videoShown"])(
                page.tile(peer)), what=f"{peer}'s avatar again on {page.user}'s page")
            self.assertFalse(page.visible("camera"))
            still(lambda: decoded(page, peer)["video"], f"{peer}'s frames at {page.user}")

        # The screen picker closed without a choice (the browser's own UI, stood in for here).
        amy.js("navigator.mediaDevices.getDisplayMedia = () => Promise.reject(new DOMException('closed', 'NotAllowedError'));")
        amy.click("share")
        self.assertTrue(amy.notice("call")["text"].startswith("Screen sharing did not start"))
        self.assertEqual(amy.element("share").get_attribute("aria-pressed"), "false")

        # ben mutes and reloads: still logged in, back in the call, still muted; unmuted, media
        # flows again both ways.
        call_id = amy.js("return window.switchboard.activeCall().info.callId")
        ben.click("mute")
        wait_until(lambda: amy.tile("ben")["micOffShown"], what="ben muted on amy's page")
        ben.driver.refresh()
        wait_until(lambda: ben.js("return !!window.switchboard") and ben.visible("call-view"), what="ben back in the call")
        self.assertFalse(ben.visible("login-view"))
        self.assertEqual(ben.js("return window.switchboard.activeCall().info.callId"), call_id)
        self.assertEqual(ben.element("mute").get_attribute("aria-pressed"), "true")
        self.assertTrue(amy.tile("ben")["micOffShown"])
        ben.click("mute")
        wait_until(lambda: not amy.tile("ben")["micOffShown"], what="ben unmuted on amy's page")
        for page, peer in ((amy, "ben"), (ben, "amy")):
            wait_until(lambda: page.peer_stats(peer) and decoded(page, peer)["samples"], what=f"{page.user} hearing {peer}")
            grows_by(lambda: decoded(page, peer)["samples"], f"{page.user}'s decoded audio from {peer} after the reload")

        # Logging out of a live call asks first.
        amy.click("logout")
        wait_until(lambda: amy.visible("logout-dialog"), what="the question before logging out")
        amy.check_screen("logout-confirm")
        amy.click("logout-cancel")
        self.assertTrue(amy.visible("call-view"))
        amy.click("logout")
        amy.click("logout-confirm")
        wait_until(lambda: amy.visible("login-view"), what="amy logged out")
        self.assertEqual(amy.element("user-sig").get_attribute("value"), "")
        said = ben.notice("home")
        self.assertEqual((said["reason"], said["text"]), ("hangup", "Amy Pond hung up."))

        # ben's records: the call, in words; a click calls amy back, who is not there now.
        row = ben.driver.find_element(By.CSS_SELECTOR, f"#records li[data-call-id='{call_id}']")
        self.assertEqual(row.get_attribute("data-result"), "answered")
        self.assertRegex(row.find_element(By.CSS_SELECTOR, ".outcome").text, r"^Incoming · \d\d:\d\d · Audio$")
        self.assertEqual(row.find_element(By.CSS_SELECTOR, ".peers").text, "Amy Pond")
        self.assertRegex(row.find_element(By.CSS_SELECTOR, "time").text, r"^\d\d:\d\d( [AP]M)?$")
        ben.check_screen("records")
        row.find_element(By.CSS_SELECTOR, "button").click()
        wait_until(lambda: ben.notice("home")["reason"] == "offline", what="the call back to amy ended")
        self.assertEqual(ben.notice("home")["text"], "Amy Pond can't be reached right now.")

        # amy is back; she calls and thinks better of it: ben missed a call.
        amy.log_in()
        amy.call("ben", "video")
        wait_until(lambda: ben.visible("incoming"), what="ben ringing again")
        self.assertEqual(ben.element("incoming-media").text, "Incoming video call")
        amy.click("hangup")
        said = ben.notice("home")
        self.assertEqual((said["reason"], said["text"]), ("canceled", "You missed a call from Amy Pond."))
        self.assertEqual(amy.notice("home")["text"], "Call cancelled.")
        missed = wait_until(lambda: ben.driver.find_elements(By.CSS_SELECTOR, "#records li.missed"), what="a missed call")
        self.assertEqual(missed[0].find_element(By.CSS_SELECTOR, ".outcome").text, "Missed · Video")
        ben.check_screen("missed")

        # And once more: ben declines.
        amy.call("ben", "audio")
        wait_until(lambda: ben.visible("incoming"), what="ben ringing once more")
        ben.click("reject")
        said = amy.notice("home")
        self.assertEqual((said["reason"], said["text"]), ("reject", "ben declined the call."))
        declined = wait_until(lambda: amy.driver.find_elements(By.CSS_SELECTOR, "#records li[data-result='rejected']"),
                              what="amy's record of it")
        self.assertEqual(declined[0].find_element(By.CSS_SELECTOR, ".outcome").text, "Declined · Audio")
        self.assertNotIn("reject", amy.element("records").text.lower())


    def test_a_call_that_grows_into_a_group(self):
        cat, dan, eve = self.logged_in("cat", "dan", "eve")
        fay = self.page("fay", autoplay=False)
        fay.log_in()
        cat.call("dan", "audio")
        wait_until(lambda: dan.visible("incoming"), what="dan's ringing screen")
        dan.click("accept")
        wait_until(lambda: cat.visible("call-view") and dan.visible("call-view"), what="cat and dan in the call")

        # cat adds eve: the one-to-one call becomes a group call.
        cat.click("add-people")
        wait_until(lambda: cat.visible("invite-form"), what="the invite form")
        self.assertEqual(cat.js("return document.activeElement.id"), "invitees")
        cat.check_screen("invite")
        cat.element("invitees").send_keys("eve")
        cat.click("invite-send")
        wait_until(lambda: eve.visible("incoming"), what="eve's ringing screen")
        self.assertEqual(eve.element("incoming-media").text, "Group audio call")
        self.assertEqual(eve.element("incoming-caller").text, "cat")
        self.assertEqual(eve.element("incoming-members").text, "With cat and dan")
        eve.check_screen("group-ringing")
        for page in (cat, dan):
            wait_until(lambda: page.roster().get("eve") == "ringing…", what=f"eve ringing in {page.user}'s list")
            wait_until(lambda: (page.tile("eve") or {}).get("state") == "Ringing…", what=f"eve's tile on {page.user}'s page")
            self.assertFalse(page.visible("switch-media"), "a group call does not switch media")
            self.assertEqual(page.element("hangup").text, "Leave")
        eve.click("accept")
        members = {"cat": cat, "dan": dan, "eve": eve}
        for page in members.values():
            for peer in set(members) - {page.user}:
                wait_until(lambda: (page.tile(peer) or {}).get("status") == "accept", what=f"{peer} on {page.user}'s page")
                self.assertTrue(page.tile(peer)["personaShown"])
                wait_until(lambda: page.peer_stats(peer), what=f"{page.user}'s connection to {peer}")
                grows_by(lambda: decoded(page, peer)["samples"], f"{page.user}'s decoded audio from {peer}")
        self.assertEqual({t["role"] for t in eve.js("return window.switchboard.tiles()")}, {"grid"})
        eve.check_screen("group-call")

        # fay calls eve, who is in the call: told once, in words.
        fay.call("eve", "audio")
        said = fay.notice("home")
        self.assertEqual((said["reason"], said["text"]), ("lineBusy", "eve is on another call."))
        self.assertFalse(fay.visible("call-notice"))
        fay.check_screen("busy")

        # dan leaves without ending the call for the others, and may come back.
        call_id = cat.js("return window.switchboard.activeCall().info.callId")
        dan.click("hangup")
        self.assertEqual(dan.notice("home")["text"], "You left the call.")
        for page in (cat, eve):
            wait_until(lambda: page.roster().get("dan") == "left", what=f"dan gone from {page.user}'s call")
            wait_until(lambda: page.tile("dan") is None, what=f"dan's tile gone on {page.user}'s page")
            self.assertTrue(page.visible("call-view"))
        going_on = f"#records li.ongoing[data-call-id='{call_id}']"
        wait_until(lambda: dan.driver.find_elements(By.CSS_SELECTOR, going_on), what="the call going on in dan's list")
        dan.check_screen("group-going-on")
        dan.driver.find_element(By.CSS_SELECTOR, f"{going_on} button.join").click()
        wait_until(lambda: dan.visible("call-view"), what="dan back in the call")
        for page in (cat, eve):
            wait_until(lambda: (page.tile("dan") or {}).get("status") == "accept", what=f"dan back on {page.user}'s page")
            wait_until(lambda: page.peer_stats("dan"), what=f"{page.user}'s new connection to dan")
            grows_by(lambda: decoded(page, "dan")["samples"], f"{page.user}'s decoded audio from dan again")

        # fay has the call's id, but was not invited.
        self.assertEqual(cat.element("call-id").text, call_id)
        fay.driver.find_element(By.CSS_SELECTOR, "#join-by-id summary").click()
        fay.element("join-call-id").send_keys(call_id)
        fay.click("join-call")
        wait_until(lambda: fay.notice("home")["code"] == "3012", what="fay refused")
        self.assertEqual(fay.notice("home")["text"], "You can't join this call: you were not invited to it.")

        # fay reloads her page: still logged in. cat invites her: the page has not been touched
        # since the reload, so the browser holds the ringtone back, and the page says so until a click.
        fay.driver.refresh()
        wait_until(lambda: fay.js("return !!window.switchboard") and fay.visible("home-view"), what="fay back, logged in")
        cat.click("add-people")
        cat.element("invitees").send_keys("fay")
        cat.click("invite-send")
        wait_until(lambda: fay.visible("incoming"), what="fay's ringing screen")
        self.assertEqual(fay.ringer()["state"], "blocked")
        self.assertTrue(fay.visible("incoming-sound-note"))
        fay.driver.find_element(By.ID, "incoming-caller").click()
        wait_until(lambda: fay.ringer()["state"] == "playing", what="fay's ringtone after a click")
        self.assertFalse(fay.visible("incoming-sound-note"))
        fay.click("reject")
        wait_until(lambda: cat.roster().get("fay") == "declined", what="fay declined in cat's list")

        for page in (dan, eve):
            page.click("hangup")
        self.assertEqual(cat.notice("home")["reason"], "hangup")


class SwiftEngineTests(Harness):
    """Chromium against the Swift SDK's GStreamer engine (`switchboard call`)."""

    def test_switchboard_call_calls_a_browser_with_video(self):
        gina = self.page("gina")
        gina.log_in()
        hank = self.swift("hank", "--to", "gina", "--video")
        wait_until(lambda: gina.visible("incoming"), what="gina's incoming call screen")
        self.assertEqual(gina.element("incoming").get_attribute("data-media"), "video")
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
        self.assertEqual(gina.notice("home")["reason"], "hangup")

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
        self.assertIn("switch to audio", ivy.element("media-change-text").text)
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
                         f"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' http://localhost:{SERVER.port}; "
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
            wait_until(lambda: "does not list" in page.element("login-notice").text, what="the login refused")
            self.assertEqual(page.js("return window.switchboard.state.status"), "loggedOut")
            # The browser holds to the same list: the policy blocks a socket there whatever a script does.
            page.js(f"try {{ new WebSocket('{target}'); }} catch (e) {{}}")
            wait_until(lambda: any(f"127.0.0.2:{stranger.port}" in v for v in page.js("return window.cspViolations")),
                       what="the policy to block the socket")
            page.violations_expected = True
            self.assertEqual(stranger.connections, 0)
        finally:
            stranger.close()

    def test_avatars_come_from_the_page_and_the_listed_origins_only(self):
        """A picture on a listed origin (here localhost, the same server under another origin) is
        shown; one elsewhere is never requested: the member's initial stands for it."""
        amy, = self.logged_in("pictured")
        listed = f"http://localhost:{SERVER.port}/img/icon.svg"
        unlisted = f"http://127.0.0.2:{SERVER.port}/img/icon.svg"
        for url in [listed, unlisted]:
            amy.click("profile")
            wait_until(lambda: amy.visible("profile-dialog"), what="the profile dialog")
            field = amy.element("avatar-url")
            field.clear()
            field.send_keys(url)
            amy.click("profile-save")
            wait_until(lambda: not amy.visible("profile-dialog"), what="the profile saved")
            if url == listed:
                wait_until(lambda: amy.js("const i = document.querySelector('#me-avatar img');"
                                          " return !!i && i.complete && i.naturalWidth > 0"),
                           what="the picture from the listed origin shown")
                self.assertEqual(amy.js("return document.querySelector('#me-avatar img').src"), listed)
            else:
                wait_until(lambda: amy.js("return !document.querySelector('#me-avatar img')"),
                           what="the initial instead of the picture from an unlisted origin")
                self.assertEqual(amy.element("me-avatar").text, "P")

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


# A stand-in for the browser's side of a push service, which headless Chromium cannot reach (its
# pushManager.subscribe never answers): subscriptions whose endpoints the test chooses (listeners
# on loopback that count the server's attempts), with RFC 8291's example keys. Kept in
# localStorage so that every page of the origin sees the same subscription, as a browser's would.
PUSH_SUBSCRIPTION_STAND_IN = """
(() => {
  const keys = { p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
                 auth: "BTBZMqHH6r4Tts7J_aSIgg" };
  const bytes = (text) => Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/") + "=".repeat((4 - text.length % 4) % 4)), c => c.charCodeAt(0));
  const text = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer))).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
  const made = (held) => ({
    endpoint: held.endpoint, options: { applicationServerKey: bytes(held.key).buffer, userVisibleOnly: true },
    toJSON: () => ({ endpoint: held.endpoint, expirationTime: null, keys }),
    unsubscribe: async () => { localStorage.removeItem("test.subscription"); return true; },
  });
  PushManager.prototype.getSubscription = async function () {
    const held = JSON.parse(localStorage.getItem("test.subscription") ?? "null");
    return held ? made(held) : null;
  };
  PushManager.prototype.subscribe = async function (options) {
    const endpoints = JSON.parse(localStorage.getItem("test.endpoints") ?? "[]");
    if (!endpoints.length) throw new DOMException("no endpoint left", "AbortError");
    const held = { endpoint: endpoints.shift(), key: text(options.applicationServerKey) };
    localStorage.setItem("test.endpoints", JSON.stringify(endpoints));
    localStorage.setItem("test.subscription", JSON.stringify(held));
    return made(held);
  };
})();
"""


class WebPushTests(Harness):
    """The browser client's Web Push side in headless Chromium, as far as it goes:
    - real: the service worker's registration (scope, script), the page registering its
      subscription with the server (`push.register` kind `web`), `pushsubscriptionchange`
      re-registering a new one, the server pushing to the registered endpoint only (a listener
      that counts the connections), the worker's notifications (title, body, tag, actions) for what
      it is given, its `notificationclick` handlers answering through a page it brings forward,
      declining over a connection of its own when no page is open, and a page opened with
      `?answer=` logging in with the login the worker kept and answering.
    - stand-ins: headless Chromium reaches no push service (its pushManager.subscribe never
      answers), so subscriptions are PUSH_SUBSCRIPTION_STAND_IN's (endpoints the test chooses);
      pushes are handed to the worker through DevTools (ServiceWorker.deliverPushMessage, with
      the objects the server encrypts: golden files and the call's), which works only from the tab
      that registered the worker and drops a delivery made before it knows the registration
      (hence deliver_until); a click on a notification's action is run through a message to the
      worker (a headless browser has no notification to click).
    The server's sender, RFC 8291 encryption and VAPID signature are tested against a local push
    service that decrypts with the subscription's keys by the Swift tests (WebPushTests)."""

    ORIGIN = None

    def push_page(self, user, endpoints, query=""):
        """A page of `user` allowed to notify, whose browser subscribes at `endpoints` in turn."""
        origin = f"http://127.0.0.1:{SERVER.port}"
        page = self.page(user, query)
        page.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": origin, "permissions": ["notifications"]})
        page.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": PUSH_SUBSCRIPTION_STAND_IN})
        page.js("localStorage.setItem('test.endpoints', JSON.stringify(arguments[0]))", endpoints)
        page.driver.refresh()
        wait_until(lambda: page.js("return !!window.switchboard"), what=f"{user}'s page to load again")
        return page

    def close_tab(self, page):
        """The user closes the page's tab (its connection goes; navigating away could keep the page
        in the back-forward cache) and the browser stays open on a new blank tab."""
        before = SERVER.health()["devices"]
        closing = page.driver.current_window_handle
        page.driver.switch_to.new_window("tab")
        blank = page.driver.current_window_handle
        page.driver.switch_to.window(closing)
        page.driver.close()
        page.driver.switch_to.window(blank)
        wait_until(lambda: SERVER.health()["devices"] < before, timeout=30, what=f"the server to see {page.user}'s tab close")

    def leave(self, page):
        """The page's tab goes to a page of the origin that runs no client code (`/health`, in the
        worker's scope, so the test can still reach the worker): the client page is gone, with its
        connection."""
        before = SERVER.health()["devices"]
        page.driver.get(f"http://127.0.0.1:{SERVER.port}/health")
        wait_until(lambda: SERVER.health()["devices"] < before, timeout=30, what=f"the server to see {page.user}'s page go")

    def registered(self, page, endpoint):
        wait_until(lambda: page.js("return window.switchboard.push()") == {"value": "registered", "endpoint": endpoint},
                   what=f"{page.user}'s subscription {endpoint} to be registered")

    def deliver(self, page, push):
        """Hands `push` to the page's service worker as its push service would."""
        page.driver.execute_cdp_cmd("ServiceWorker.enable", {})
        # DevTools learns of the registration after `enable`; a page of the origin whose worker is
        # ready makes sure it is there to deliver to.
        page.driver.execute_async_script("navigator.serviceWorker.ready.then(() => arguments[0]())")
        page.driver.execute_cdp_cmd("ServiceWorker.enable", {})
        # A fresh profile's first service worker registration has id 0.
        page.driver.execute_cdp_cmd("ServiceWorker.deliverPushMessage", {
            "origin": f"http://127.0.0.1:{SERVER.port}", "registrationId": "0", "data": json.dumps(push)})

    def deliver_until(self, page, push, shown, what):
        """Delivers `push` until `shown()` holds (DevTools drops a delivery made before it has
        learned of the worker's registration, and says nothing); returns what `shown()` gave."""
        deadline = time.monotonic() + 30
        while True:
            self.deliver(page, push)
            try:
                return wait_until(shown, timeout=2, what=what)
            except AssertionError:
                if time.monotonic() > deadline:
                    raise

    def notifications(self, page):
        return page.driver.execute_async_script("""
            const done = arguments[0];
            navigator.serviceWorker.ready.then(r => r.getNotifications()).then(list => done(list.map(n => ({
              title: n.title, body: n.body, tag: n.tag, requireInteraction: n.requireInteraction,
              actions: n.actions.map(a => a.action), kind: n.data?.kind}))), e => done({error: String(e)}));""")

    def run_in_worker(self, page, message):
        """Runs one of the worker's handlers as the browser would (a notification's click)."""
        return page.driver.execute_async_script("""
            const [message, done] = arguments;
            navigator.serviceWorker.ready.then(r => {
              const channel = new MessageChannel();
              channel.port1.onmessage = e => done(e.data);
              r.active.postMessage({type: 'switchboard.run', ...message}, [channel.port2]);
            });""", message)

    @staticmethod
    def push_metrics():
        """The server's push counters (`switchboard_push_total{service,outcome}`)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{SERVER.port}/metrics") as response:
            return [line for line in response.read().decode().splitlines() if line.startswith("switchboard_push_total")]

    @staticmethod
    def golden(name):
        with open(os.path.join(ARGS.golden, f"{name}.json")) as f:
            return json.load(f)

    def invitation(self, caller_page, callee):
        """The call `caller_page` places to `callee`, and the object the server pushes for it."""
        caller_page.call(callee, "audio")
        info = wait_until(lambda: caller_page.js("return window.switchboard.activeCall()?.info"), what="the call")
        return info["callId"], {
            "v": 1, "kind": "incomingCall", "callId": info["callId"], "userId": callee, "callerId": info["callerId"],
            "mediaType": "audio", "callType": "oneToOne", "inviterId": info["callerId"],
            "deadline": info["createdAt"] + info["timeout"] * 1000}

    def test_the_worker_registers_and_the_server_pushes_to_the_subscription(self):
        first, second = Listener("127.0.0.1"), Listener("127.0.0.1")
        try:
            endpoints = [f"https://127.0.0.1:{first.port}/push/a", f"https://127.0.0.1:{second.port}/push/b"]
            bob = self.push_page("bob", endpoints)
            bob.log_in()
            self.registered(bob, endpoints[0])
            worker = bob.driver.execute_async_script("""
                const done = arguments[0];
                navigator.serviceWorker.getRegistration().then(r => done({scope: r.scope, script: r.active?.scriptURL}));""")
            self.assertEqual(worker, {"scope": f"http://127.0.0.1:{SERVER.port}/",
                                      "script": f"http://127.0.0.1:{SERVER.port}/sw.js"})
            with urllib.request.urlopen(f"http://127.0.0.1:{SERVER.port}/sw.js") as response:
                self.assertIn("javascript", response.headers["Content-Type"])
            # The browser replaced the subscription: the page registers the new one.
            bob.js("localStorage.removeItem('test.subscription')")
            self.assertEqual(self.run_in_worker(bob, {"handler": "pushsubscriptionchange"}), {"result": "page"})
            self.registered(bob, endpoints[1])

            # bob closes his tab; alice's call reaches his browser through the new subscription
            # only, and rings on instead of ending `offline`.
            self.close_tab(bob)
            alice = self.page("alice")
            alice.log_in()
            alice.call("bob", "audio")
            wait_until(lambda: second.connections > 0, what="the server to push to bob's subscription")
            wait_until(lambda: any('service="web"' in line for line in self.push_metrics()),
                       what="the server to count its Web Push attempt")
            self.assertEqual(first.connections, 0)
            self.assertIsNotNone(alice.js("return window.switchboard.activeCall()"))
            alice.click("hangup")
        finally:
            first.close()
            second.close()

    def test_a_notification_answers_into_the_call_on_the_page_it_brings_forward(self):
        listener = Listener("127.0.0.1")
        try:
            bob = self.push_page("bob", [f"https://127.0.0.1:{listener.port}/push/a"])
            bob.log_in()
            self.registered(bob, f"https://127.0.0.1:{listener.port}/push/a")
            alice = self.page("alice")
            alice.log_in()
            # While bob's page is in front it rings there, and the worker shows nothing.
            call_id, push = self.invitation(alice, "bob")
            wait_until(lambda: bob.visible("incoming"), what="bob's page to ring")
            self.deliver(bob, push)
            # bob looks elsewhere (his window minimized): the same push shows a notification.
            bob.driver.minimize_window()
            shown = self.deliver_until(bob, push, lambda: self.notifications(bob), what="the notification")
            self.assertEqual(shown, [{"title": "alice", "body": "Incoming audio call", "tag": call_id,
                                      "requireInteraction": True, "actions": ["answer", "decline"],
                                      "kind": "incomingCall"}])
            self.assertEqual(self.run_in_worker(bob, {"handler": "notificationclick", "tag": call_id, "action": "answer"}),
                             {"result": "page"})
            wait_until(lambda: alice.js("return window.switchboard.activeCall()?.info.participants"
                                        ".find(p => p.userId === 'bob')?.status") == "accept",
                       what="bob to answer from the notification")
            self.assertEqual(self.notifications(bob), [])
            alice.click("hangup")
        finally:
            listener.close()

    def test_without_an_open_page_the_worker_declines_and_a_page_it_opens_answers(self):
        listener = Listener("127.0.0.1")
        try:
            bob = self.push_page("bob", [f"https://127.0.0.1:{listener.port}/push/a"])
            bob.log_in()
            self.registered(bob, f"https://127.0.0.1:{listener.port}/push/a")
            alice = self.page("alice")
            alice.log_in()
            # bob looks elsewhere (his window minimized): his page does not ring by itself, so the
            # worker shows what is pushed. (DevTools delivers pushes from the tab that registered
            # the worker; from another tab it drops them silently.)
            bob.driver.minimize_window()

            # The golden pushes: a ringing call, its end, a missed call.
            golden = self.golden("push.web.incomingCall")["callId"]
            ringing = self.deliver_until(bob, self.golden("push.web.incomingCall"), lambda: self.notifications(bob),
                                         what="the golden invitation's notification")
            self.assertEqual([(n["title"], n["body"], n["tag"]) for n in ringing], [("Alice", "Incoming video call", golden)])
            self.deliver(bob, self.golden("push.web.callEnded"))
            wait_until(lambda: self.notifications(bob) == [], what="the ringing notification to go")
            self.deliver(bob, self.golden("push.web.missedCall"))
            missed = wait_until(lambda: self.notifications(bob), what="the missed call's notification")
            self.assertEqual([(n["title"], n["body"], n["kind"], n["actions"]) for n in missed],
                             [("Alice", "Missed video call", "missedCall", [])])

            # Decline, with no logged-in page: bob leaves the client; the worker logs in as his
            # device over a connection of its own and rejects.
            self.leave(bob)
            call_id, push = self.invitation(alice, "bob")
            self.deliver_until(bob, push, lambda: any(n["tag"] == call_id for n in self.notifications(bob)),
                               what="the notification")
            self.assertEqual(self.run_in_worker(bob, {"handler": "notificationclick", "tag": call_id, "action": "decline"}),
                             {"result": "connection"})
            self.assertEqual(alice.notice("home", timeout=30)["reason"], "reject")
            self.assertFalse(any(n["tag"] == call_id for n in self.notifications(bob)))

            # Answer, with no page: the worker opens one with the call in its address, which logs
            # in with the login the worker kept and answers.
            call_id, _ = self.invitation(alice, "bob")
            bob.driver.get(SERVER.url(f"&answer={call_id}"))
            wait_until(lambda: alice.js("return window.switchboard.activeCall()?.info.participants"
                                        ".find(p => p.userId === 'bob')?.status") == "accept",
                       what="bob's new page to answer")
            self.assertNotIn("answer=", bob.driver.current_url)
            wait_until(lambda: bob.visible("call-view"), what="bob's page in the call")
            alice.click("hangup")
        finally:
            listener.close()


JANUS_SECRET = "browser-test-janus-secret"


class JanusServer(ServerProcesses):
    """Debian's janus with the configuration scripts/janus writes (VideoRoom and WebSockets only,
    ICE on loopback), and a second Switchboard server that sends group calls through it
    (`serve --sfu`)."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="switchboard-janus-")
        self.ws_port = free_port()
        self.port = free_port()
        self.processes = []
        self.files = []

    def start(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "janus")
        subprocess.run(["bash", script, "config", self.directory, str(self.ws_port), JANUS_SECRET, "41000-41999"],
                       check=True)
        janus_log = open(os.path.join(self.directory, "janus.log"), "w")
        self.files.append(janus_log)
        self.processes.append(subprocess.Popen(
            ["janus", "-F", self.directory, "-C", os.path.join(self.directory, "janus.jcfg")],
            stdout=janus_log, stderr=subprocess.STDOUT))

        def janus_up():
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", self.ws_port)) == 0
        wait_until(janus_up, timeout=30, what="janus to listen")
        server_log = open(os.path.join(self.directory, "server.log"), "w")
        self.files.append(server_log)
        self.processes.append(subprocess.Popen(
            [ARGS.binary, "serve", "--port", str(self.port), "--database", f"{self.directory}/switchboard.sqlite",
             "--web-root", ARGS.web, "--log-level", "info",
             "--sfu", f"ws://127.0.0.1:{self.ws_port}", "--sfu-secret", JANUS_SECRET],
            stdout=server_log, stderr=subprocess.STDOUT))

        def healthy():
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as response:
                return response.status == 200
        wait_until(healthy, timeout=30, what="the SFU server to answer /health")


    def restart_janus(self):
        """kill -9 of Janus, then a new one with the same configuration on the same port."""
        janus = self.processes[0]
        janus.kill()
        janus.wait(timeout=15)
        self.processes[0] = subprocess.Popen(
            ["janus", "-F", self.directory, "-C", os.path.join(self.directory, "janus.jcfg")],
            stdout=self.files[0], stderr=subprocess.STDOUT)

    def rooms_placed(self):
        """How often the server placed a call's room on Janus (its log says each)."""
        with open(os.path.join(self.directory, "server.log")) as f:
            return f.read().count("a call's room is on an SFU")


    def logs(self):
        return self.tails(("server.log", "janus.log"), 40)


class SFUTests(Harness):
    """Group calls through Janus: every page publishes once and receives the others from the SFU."""

    @classmethod
    def setUpClass(cls):
        cls.janus = JanusServer()
        cls.janus.start()

    @classmethod
    def tearDownClass(cls):
        cls.janus.stop()

    def tearDown(self):
        failed = any(error for _, error in (self._outcome.result.errors + self._outcome.result.failures)
                     if _ is self) if hasattr(self._outcome, "result") else False
        if failed:
            print(self.janus.logs(), file=sys.stderr)
        super().tearDown()

    def sfu_page(self, user, shared=None, capture="640x360@15"):
        # By default a 640x360 camera at 15 frames a second: two simulcast layers (640x360 and
        # 320x180); 480x270 is the smallest with two.
        page = self.page(user, url=self.janus.url("&capture=" + capture), shared=shared)
        # getStats on several pages at once can take long on a loaded machine.
        page.driver.set_script_timeout(120)
        wait_until(lambda: page.js("return !!window.switchboard"), what=f"{user}'s page to load")
        page.log_in()
        return page

    @staticmethod
    def publish_stats(page):
        return page.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "window.switchboard.publishStats().then(done, e => done({error: String(e)}));")

    def test_a_one_to_one_call_moves_to_janus_when_someone_is_invited(self):
        ann, ben, cy = (self.sfu_page(user) for user in ("ann", "ben", "cy"))
        ann.call("ben", "video")
        wait_until(lambda: ben.visible("incoming"), what="ben's incoming call screen")
        ben.click("accept")
        wait_until(lambda: ann.visible("call-view") and ben.visible("call-view"), what="ann and ben in the call")
        # One-to-one: peer to peer, no SFU.
        self.assertIsNone(ann.js("return window.switchboard.activeCall().info.media ?? null"))
        wait_until(lambda: decoded(ann, "ben")["video"] > 0, timeout=60, what="ann decoding ben peer to peer")
        self.assertIsNone(ann.js("return window.switchboard.sfuSession()"))

        ann.click("add-people")
        ann.element("invitees").send_keys("cy")
        ann.click("invite-send")
        wait_until(lambda: cy.visible("incoming"), what="cy's incoming call screen")
        cy.click("accept")
        members = {"ann": ann, "ben": ben, "cy": cy}
        for page in members.values():
            wait_until(lambda: page.js("return window.switchboard.activeCall().info.media") == "sfu",
                       what=f"the call through the SFU on {page.user}'s page")
            wait_until(lambda: page.js("return window.switchboard.sfuSession()"), timeout=60,
                       what=f"an SFU session on {page.user}'s page")
            peers = sorted(set(members) - {page.user})
            wait_until(lambda: (lambda now: all(
                now.get(p, {}).get("framesDecoded", {}).get("video", 0) > 0
                and now.get(p, {}).get("totalSamplesReceived", 0) > 0 for p in peers))(page.stats()),
                timeout=120, interval=1, what=f"{page.user} decoding {peers} through the SFU")

        # ann shares her screen through the SFU: one more track on her one publish connection;
        # ben and cy show it as her screen tile, playing, and decode it; then she stops and the
        # tile goes. Four times: a screen shared again goes out in the section the last one left
        # (the SFU takes at most 4 sections per publish offer).
        for share in range(1, 5):
            ann.click("share")
            # The button is pressed once the page has the screen (getDisplayMedia answers later
            # on a loaded machine).
            wait_until(lambda: ann.element("share").get_attribute("aria-pressed") == "true",
                       what=f"ann's share button pressed (share {share})")
            for page in (ben, cy):
                wait_until(lambda: (page.tile("ann", screen=True) or {}).get("playing"), timeout=60,
                           what=f"ann's screen on {page.user}'s page (share {share})")
                self.assertEqual(page.tile("ann", screen=True)["label"], "ann’s screen")
                grows_by(lambda: decoded(page, "ann")["screen"], f"{page.user}'s decoded screen frames from ann", timeout=60)
            sent = self.publish_stats(ann)
            self.assertEqual(sent["connections"], 1, "ann publishes her screen on her one connection")
            self.assertEqual(len([s for s in sent["streams"] if s["source"] == "screen"]), 1, f"ann's streams: {sent}")
            self.assertEqual(sent["sections"], 3, "ann's publish sections: microphone, camera, screen")
            ann.click("share")
            for page in (ben, cy):
                wait_until(lambda: page.tile("ann", screen=True) is None, timeout=60,
                           what=f"ann's screen tile to go at {page.user} (share {share})")
        for page in (ben, cy):
            # Her camera still comes through.
            grows_by(lambda: decoded(page, "ann")["video"], f"{page.user}'s decoded frames of ann's camera", timeout=60)
        for page in (ben, cy):
            page.click("hangup")

    def test_a_group_call_through_janus(self):
        """Pages in one call through Janus, as windows of one Chromium: three by default,
        `SWITCHBOARD_SFU_PAGES` for more (six ran here with `SWITCHBOARD_SFU_CAPTURE=480x270@15`, in
        14.5 minutes: too long for every run on two cores, BENCHMARKS.md). Every page decodes every
        other; each publishes once; a tile enlarged gets the big layer; Janus restarts mid-call
        and media comes back in the same call; a member leaves."""
        count = int(os.environ.get("SWITCHBOARD_SFU_PAGES", "3"))
        users = [f"sfu{index}" for index in range(count)]
        shared = SharedChromium()
        capture = os.environ.get("SWITCHBOARD_SFU_CAPTURE", "640x360@15")
        pages = {user: self.sfu_page(user, shared, capture) for user in users}
        caller = pages[users[0]]
        caller.call(",".join(users[1:]), "video")
        for user in users[1:]:
            wait_until(lambda: pages[user].visible("incoming"), what=f"{user}'s incoming call screen")
            pages[user].click("accept")
        for page in pages.values():
            wait_until(lambda: page.visible("call-view"), what=f"{page.user} in the call")
            self.assertEqual(page.js("return window.switchboard.activeCall().info.media"), "sfu")

        def decoding_everyone(page, since=None, timeout=120):
            """Waits until `page` decodes audio and video of every other page: more than in
            `since` (its stats at an earlier moment), or any when `since` is None."""
            peers = sorted(set(users) - {page.user})

            def flowing(now, peer):
                before = (since or {}).get(peer, {})
                return (now.get(peer, {}).get("framesDecoded", {}).get("video", 0)
                        > before.get("framesDecoded", {}).get("video", 0)
                        and now[peer]["totalSamplesReceived"] > before.get("totalSamplesReceived", 0)
                        and now[peer]["totalAudioEnergy"] > 0)
            # One getStats a poll: a loaded two-core machine runs these pages.
            return wait_until(lambda: (lambda now: now if all(flowing(now, p) for p in peers) else None)(page.stats()),
                              timeout=timeout, interval=1, what=f"{page.user} decoding audio and video from {peers}")

        # Every page decodes every other member's audio and video from the SFU.
        for page in pages.values():
            decoding_everyone(page, since=decoding_everyone(page))

        # Each page sends its camera once, in two simulcast layers, on one connection, whatever
        # the number of members; and its microphone once.
        for page in pages.values():
            sent = self.publish_stats(page)
            self.assertEqual(sent["connections"], 1, f"{page.user} publishes on one connection")
            camera = [s for s in sent["streams"] if s["source"] == "camera"]
            self.assertEqual(len({s["track"] for s in camera}), 1, f"{page.user} sends one camera track: {camera}")
            self.assertEqual(sorted(s["rid"] for s in camera), ["h", "l"], f"{page.user}'s camera layers: {camera}")
            self.assertEqual(len([s for s in sent["streams"] if s["source"] == "microphone"]), 1)
            print(f"{page.user} sends: " + ", ".join(
                f"{s['source']}/{s['rid']} {s['frameWidth']}x{s['frameHeight']} {s['bytesSent']} B" for s in sent["streams"]),
                file=sys.stderr)

        # Thumbnails get the small layer; a tile enlarged gets the big one.
        viewer, shown = pages[users[0]], users[1]
        small = wait_until(lambda: (lambda w: w if 0 < w <= 320 else 0)(decoded(viewer, shown)["width"]), timeout=60,
                           what=f"the small layer of {shown} at {viewer.user}")
        self.assertEqual(viewer.js("return window.switchboard.layers()").get(shown, "small"), "small")
        viewer.driver.find_element(By.CSS_SELECTOR, f"#stage .tile[data-key='{shown}']").click()
        wait_until(lambda: viewer.js("return window.switchboard.layers()").get(shown) == "big",
                   what=f"{viewer.user} to ask for {shown}'s big layer")
        big = wait_until(lambda: (lambda w: w if w > small else 0)(decoded(viewer, shown)["width"]), timeout=60,
                         what=f"a bigger picture of {shown} at {viewer.user} than {small}")
        print(f"{viewer.user} receives {shown}: small layer {small} wide, big layer {big} wide", file=sys.stderr)
        # The others still get the small layer of the same camera.
        other = pages[users[2]] if count > 2 else None
        if other:
            self.assertLessEqual(decoded(other, shown)["width"], small)

        # Janus dies and comes back on the same port: the server places the room again, every
        # page starts a new session, and media flows again in the same call.
        call_id = caller.js("return window.switchboard.activeCall().info.callId")
        sessions = {page.user: page.js("return window.switchboard.sfuSession()") for page in pages.values()}
        killed = time.monotonic()
        self.janus.restart_janus()
        for page in pages.values():
            wait_until(lambda: page.js("return window.switchboard.sfuSession()") > sessions[page.user],
                       timeout=JANUS_RECOVERY_BOUND, what=f"a new SFU session on {page.user}'s page")
        for page in pages.values():
            # The new session's subscription counts from zero: what it decodes came after the restart.
            decoding_everyone(page, timeout=JANUS_RECOVERY_BOUND)
            self.assertEqual(page.js("return window.switchboard.activeCall().info.callId"), call_id)
        # docs/OPERATIONS.md promises media back within this bound of a Janus restart.
        recovered = time.monotonic() - killed
        print(f"[browser sfu] Janus killed and restarted: every page decoded every member again after {recovered:.1f} s"
              f" (bound {JANUS_RECOVERY_BOUND} s)", file=sys.stderr)
        self.assertLessEqual(recovered, JANUS_RECOVERY_BOUND)
        self.assertGreaterEqual(self.janus.rooms_placed(), 2, "the room was placed again")

        # A member leaves mid-call: the others stop receiving its tracks and keep the rest.
        leaver = pages[users[-1]]
        leaver.click("hangup")
        for page in [p for p in pages.values() if p is not leaver]:
            wait_until(lambda: leaver.user not in page.stats(), timeout=60, what=f"{leaver.user}'s tracks gone at {page.user}")
        for page in [p for p in pages.values() if p is not leaver][:-1]:
            page.click("hangup")

    def test_switchboard_call_in_a_group_call_through_janus(self):
        """The GStreamer engine as an SFU member: `switchboard call` calls two pages; each page
        decodes its audio and video from Janus, it decodes and records theirs, and it publishes its
        camera once."""
        users = ["sfq", "sfr"]
        pages = {user: self.sfu_page(user) for user in users}
        record = tempfile.mkdtemp(prefix="switchboard-sfu-record-")
        self.addCleanup(shutil.rmtree, record, ignore_errors=True)
        swift = self.swift("sfs", "--to", ",".join(users), "--video", "--record", record, port=self.janus.port)
        for page in pages.values():
            wait_until(lambda: page.visible("incoming"), what=f"{page.user}'s incoming call screen")
            page.click("accept")
        for page in pages.values():
            wait_until(lambda: page.visible("call-view"), what=f"{page.user} in the call")
            self.assertEqual(page.js("return window.switchboard.activeCall().info.media"), "sfu")

        # Every page decodes the engine's tone and picture through the SFU.
        for page in pages.values():
            wait_until(lambda: (lambda now: now.get("sfs", {}).get("framesDecoded", {}).get("video", 0) > 0
                                and now["sfs"]["totalSamplesReceived"] > 0 and now["sfs"]["totalAudioEnergy"] > 0)(
                page.stats()), timeout=90, interval=1, what=f"{page.user} decoding sfs's audio and video through the SFU")
        # The engine decodes every page's audio and video, each under its member's name.
        for user in users:
            grows_by(lambda: swift.value(user, "audioFrames"), f"sfs's decoded audio from {user}", timeout=60)
            grows_by(lambda: swift.value(user, "videoFrames"), f"sfs's decoded video from {user}", timeout=60)
        # It publishes once: every page is offered exactly one microphone and one camera of it.
        for page in pages.values():
            sections = [t for t in page.js("return window.switchboard.sfuTracks()") if t["userId"] == "sfs"]
            self.assertEqual(sorted(t["source"] for t in sections), ["camera", "microphone"], f"{page.user}: {sections}")

        # A member leaves: the engine's tracks of that member end; the other's go on.
        leaver, stayer = pages[users[1]], users[0]
        leaver.click("hangup")
        swift.saw(f"{leaver.user}'s video ended")
        swift.saw(f"{leaver.user}'s audio ended")
        grows_by(lambda: swift.value(stayer, "videoFrames"), f"sfs's decoded video from {stayer} after {leaver.user} left")

        swift.send("hangup")
        status, summary = swift.finish()
        self.assertEqual(status, 0, summary)
        for user in users:
            member = summary["members"][user]
            self.assertGreater(member["audio"]["framesDecoded"], 0, user)
            self.assertGreater(member["video"]["framesDecoded"], 0, user)
            self.assertGreater(member["video"]["packetsReceived"], 0, user)
            self.assertEqual(member["candidateType"], "host", user)
            # Recorded as a mesh peer's tracks are: <member>-audio.wav and <member>-video.webm.
            # Named at their first media: the first name holds media, and nothing empty is left.
            files = {f: os.path.getsize(os.path.join(record, f)) for f in sorted(os.listdir(record))}
            for name in (f"{user}-audio.wav", f"{user}-video.webm"):
                self.assertGreater(files.get(name, 0), 10_000, f"{name} in {files}; the call's log ends: {swift.output()[-3000:]}")
        self.assertTrue(all(size > 0 and not name.startswith(".") for name, size in files.items()), f"{files}; {swift.output()}")

class NamespacedServer:
    """The Switchboard server inside the test network's `server` host, with a 1 s heartbeat and an
    8 s reconnect grace (as the Swift network tests: short blackouts stand for long ones)."""

    GRACE = 8

    def __init__(self, net, heartbeat=1, grace=GRACE):
        self.net = net
        self.directory = tempfile.mkdtemp(prefix="switchboard-net-")
        self.address = net.addresses["server"]
        self.port = 8080
        self.log = open(os.path.join(self.directory, "server.log"), "w")
        self.process = net.run("server", [
            ARGS.binary, "serve", "--host", self.address, "--port", str(self.port),
            "--database", f"{self.directory}/switchboard.sqlite", "--web-root", ARGS.web,
            "--reconnect-grace", str(grace), "--heartbeat-interval", str(heartbeat), "--log-level", "warning",
            # The pages log in with the development sigs, which the server gives only to the
            # hosts it is told of besides loopback.
            "--dev-allowed-hosts", self.address],
            stdout=self.log, stderr=subprocess.STDOUT)
        health = f"http://127.0.0.1:{net.proxy('server', self.address, self.port)}/health"

        def healthy():
            with urllib.request.urlopen(health, timeout=1) as response:
                return response.status == 200
        wait_until(healthy, timeout=30, what="the namespaced server to answer /health")
        self.origin = f"http://{self.address}:{self.port}"

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()

    def logs(self):
        with open(os.path.join(self.directory, "server.log")) as f:
            return "--- namespaced server.log (last lines)\n" + "".join(f.readlines()[-30:])


class NetworkTests(Harness):
    """The browser's side of links that fail: the server and each Chromium in its own network
    namespace behind a router (`switchboard-testnet`, the Swift tests' `TestNetwork`), alice's link
    cut, her address changed, or no path between the two. What each page shows is read as a person
    reads it (the connection status, the tiles' network state, the end notice), and what Chromium
    decodes from getStats. Each test prints the times it measured."""

    def setUp(self):
        super().setUp()
        self.net = None
        self.server = None

    def tearDown(self):
        failed = any(error for _, error in (self._outcome.result.errors + self._outcome.result.failures)
                     if _ is self) if hasattr(self._outcome, "result") else False
        if failed and self.server:
            print(self.server.logs(), file=sys.stderr)
        try:
            super().tearDown()
        finally:
            if self.server:
                self.server.stop()
            if self.net:
                self.net.close()

    def network(self, isolated=False, **server):
        """The namespaces and the server; alice and bob logged in, each in a Chromium of their own."""
        try:
            self.net = netns.TestNet(os.path.join(os.path.dirname(ARGS.binary), "switchboard-testnet"),
                                     ["server", "alice", "bob"])
        except (OSError, RuntimeError) as error:
            if os.environ.get("CI") == "true" or os.environ.get("SWITCHBOARD_REQUIRE_ALL") == "1":
                raise
            print(f"NetworkTests SKIPPED: no network namespaces here ({error})", file=sys.stderr)
            self.skipTest(f"no network namespaces: {error}")
        if isolated:
            self.net.isolate("alice", "bob")
        self.server = NamespacedServer(self.net, **server)
        pages = []
        for user in ("alice", "bob"):
            page = self.page(user, url=self.server.origin + "/", place=(self.net, user, self.server.origin))
            try:
                wait_until(lambda: page.js("return !!window.switchboard"), timeout=15, what=f"{user}'s page to load")
            except AssertionError:
                # A Chromium just started in a new namespace sometimes loses its first navigation
                # (twice in about twenty set-ups here; the page never ran): load it once more.
                print(f"[browser network] {user}'s page did not load in 15 s: loading it again; console: "
                      f"{page.console()[-5:]}", file=sys.stderr)
                page.driver.get(self.server.origin + "/")
                wait_until(lambda: page.js("return !!window.switchboard"), timeout=30, what=f"{user}'s page to load")
            page.log_in()
            pages.append(page)
        return pages

    def video_call(self, alice, bob, media=True):
        """alice calls bob with video, he answers; with `media`, each decodes the other's video."""
        alice.call("bob", "video")
        wait_until(lambda: bob.visible("incoming"), what="bob's incoming call screen")
        bob.click("accept")
        wait_until(lambda: alice.visible("call-view") and bob.visible("call-view"), what="both in the call")
        if media:
            for page, peer in ((alice, "bob"), (bob, "alice")):
                grows_by(lambda: decoded(page, peer)["video"], f"{page.user} decoding {peer}'s video", timeout=30)
        return alice.js("return window.switchboard.activeCall().info.callId")

    def media_back(self, alice, bob, since, what):
        """Waits until each page decodes 10 new video frames of the other; returns the seconds from
        `since`."""
        for page, peer in ((alice, "bob"), (bob, "alice")):
            grows_by(lambda: decoded(page, peer)["video"], f"{page.user} decoding {peer}'s video again {what}",
                     timeout=60, minimum=10)
        return time.monotonic() - since

    def test_a_blackout_inside_the_grace_resumes_the_call(self):
        """alice's link goes down for 2 s, then for 6 s (inside the 8 s grace): the same call goes
        on, both pages decode each other's video again; during the long one bob's page shows alice
        with no network and hers says it is reconnecting, and both clear once she is back."""
        alice, bob = self.network()
        call_id = self.video_call(alice, bob)
        for seconds in (2, 6):
            self.net.cut("alice")
            cut = time.monotonic()
            saw = {"alice down on bob's page": None, "alice's page reconnecting": None}
            said = None
            while time.monotonic() - cut < seconds:
                now = time.monotonic() - cut
                tile = bob.tile("alice") or {}
                if saw["alice down on bob's page"] is None and tile.get("quality") == "down":
                    saw["alice down on bob's page"] = now
                    said = tile["said"]
                if saw["alice's page reconnecting"] is None and alice.element("status").text == "Reconnecting…":
                    saw["alice's page reconnecting"] = now
                time.sleep(0.2)
            frozen = decoded(bob, "alice")["video"]
            self.net.restore("alice")
            back = time.monotonic()
            if seconds == 6:
                for what, at in saw.items():
                    self.assertIsNotNone(at, f"{what} during a {seconds} s blackout")
                self.assertIn("no network", said.lower())
            wait_until(lambda: alice.element("status").text == "Online", timeout=60, what="alice's page online again")
            online = time.monotonic() - back
            media = self.media_back(alice, bob, back, f"after a {seconds} s blackout")
            self.assertGreater(decoded(bob, "alice")["video"], frozen)
            wait_until(lambda: (bob.tile("alice") or {}).get("quality") != "down", timeout=30,
                       what="bob's page to show alice's network back")
            for page in (alice, bob):
                self.assertEqual(page.js("return window.switchboard.activeCall()?.info.callId"), call_id)
            print(f"[browser network] blackout {seconds} s: seen during it {saw}; link back → alice's page online "
                  f"{online:.1f} s, → video decoded on both pages {media:.1f} s", file=sys.stderr)
        alice.click("hangup")
        self.assertEqual(bob.notice("home")["reason"], "hangup")

    def test_an_address_change_resumes_the_call(self):
        """alice's page moves to a new address mid-call (a laptop from Wi-Fi to a phone's hotspot):
        signaling comes back from the new address, media through an ICE restart, same call."""
        alice, bob = self.network()
        call_id = self.video_call(alice, bob)
        moved = time.monotonic()
        address = self.net.move("alice")
        self.media_back(alice, bob, moved, "after the address change")
        media = time.monotonic() - moved
        wait_until(lambda: alice.element("status").text == "Online", what="alice's page online")
        for page in (alice, bob):
            self.assertEqual(page.js("return window.switchboard.activeCall()?.info.callId"), call_id)
        print(f"[browser network] address change to {address}: → video decoded on both pages {media:.1f} s",
              file=sys.stderr)
        alice.click("hangup")
        self.assertEqual(bob.notice("home")["reason"], "hangup")

    def test_a_blackout_beyond_the_grace_ends_the_call_for_both(self):
        """alice's link stays down beyond the grace: the server ends the call; bob's page says so at
        once, alice's when she is back, and both records agree."""
        alice, bob = self.network()
        call_id = self.video_call(alice, bob)
        self.net.cut("alice")
        cut = time.monotonic()
        said = bob.notice("home", timeout=60)
        ended = time.monotonic() - cut
        self.assertEqual(said["reason"], "endByServer", said)
        self.net.restore("alice")
        back = time.monotonic()
        hers = alice.notice("home", timeout=60)
        told = time.monotonic() - back
        self.assertEqual(hers["reason"], "endByServer", hers)
        for page in (alice, bob):
            self.assertFalse(page.visible("call-view"))
        results = {page.user: page.record_result(call_id) for page in (alice, bob)}
        self.assertEqual(results["alice"], results["bob"], results)
        print(f"[browser network] blackout beyond the grace ({NamespacedServer.GRACE} s): bob's page said "
              f"\"{said['text']}\" {ended:.1f} s after the cut; alice's page said \"{hers['text']}\" {told:.1f} s after "
              f"her link came back; records {results}", file=sys.stderr)

    def test_a_narrow_link_keeps_the_call(self):
        """alice's link squeezed to 300 kbit/s both ways (a 360p call sends more): bob's page keeps
        receiving her audio and decoding her video (Chromium's own congestion control lowers it),
        and the state it shows for her is good once the link is wide again. (At 64 kbit/s video
        pauses: the next test.)"""
        # The production heartbeat and grace: with the others' 1 s heartbeat two pings lost in a
        # queue full of media would take a working connection for dead.
        alice, bob = self.network(heartbeat=10, grace=15)
        self.video_call(alice, bob)
        self.net.limit("alice", 300)
        squeezed = time.monotonic()
        grows(bob, "alice", "bytesReceived", "audio", timeout=30)
        grows_by(lambda: decoded(bob, "alice")["video"], "bob decoding alice's video at 300 kbit/s",
                 timeout=60, minimum=30)
        video = time.monotonic() - squeezed
        width = decoded(bob, "alice")["width"]
        self.assertEqual(alice.element("status").text, "Online")
        self.net.limit("alice", None)
        lifted = time.monotonic()
        wait_until(lambda: (bob.tile("alice") or {}).get("quality") in ("excellent", "good"), timeout=60,
                   what="bob's page to show alice's network good")
        print(f"[browser network] 300 kbit/s: 30 new video frames of alice at bob {video:.1f} s after the squeeze "
              f"({width} px wide); limit lifted → alice good on bob's page {time.monotonic() - lifted:.1f} s",
              file=sys.stderr)
        alice.click("hangup")

    def test_a_link_too_narrow_for_video_keeps_the_call_as_audio(self):
        """alice's link squeezed to 64 kbit/s both ways for 25 s at least (12 s after both pages show the pause; a failed trial of video in it): each page stops sending video on
        it and thins its audio (each says so: bob's shows alice's picture with "Video paused",
        alice's that her network is too weak for video), her audio keeps reaching bob, nobody's
        signaling drops, and once the link is wide again a trial brings video back. (Before, the
        video's retransmissions starved the link and the server ended the call:
        docs/BENCHMARKS.md.)"""
        alice, bob = self.network(heartbeat=10, grace=15)
        call_id = self.video_call(alice, bob)
        self.net.limit("alice", 64)
        squeezed = time.monotonic()
        wait_until(lambda: (bob.tile("alice") or {}).get("camera") == "paused", timeout=30,
                   what="bob's page to show alice's video paused")
        paused = time.monotonic() - squeezed
        tile = bob.tile("alice")
        self.assertTrue(tile["personaShown"] and not tile["videoShown"], tile)
        self.assertEqual(tile["state"], "Video paused: weak network")
        wait_until(lambda: "too weak for video" in alice.element("own-quality").text, timeout=30,
                   what="alice's page to say her network is too weak for video")
        # The rest of the 25 s, and 12 s after both pages showed the pause at least (a loaded
        # machine shows it later): her audio keeps coming, both pages stay online and in the
        # call. (The first trial of video, 10 s after the pause, fails inside it; 40 s showed
        # nothing more than 25, and cost a second failed trial and its 30 s wait.)
        shown = time.monotonic()
        received = []
        while time.monotonic() - squeezed < 25 or time.monotonic() - shown < 12:
            received.append(bob.peer_stats("alice")["bytesReceived"]["audio"])
            for page in (alice, bob):
                self.assertEqual(page.element("status").text, "Online", f"{page.user} at {time.monotonic() - squeezed:.0f} s")
                self.assertTrue(page.visible("call-view"), f"{page.user} left the call at {time.monotonic() - squeezed:.0f} s")
            time.sleep(2)
        # Her audio reached bob in every 10 s of the rest of the squeeze: at 16 kbps, 20 KB; a
        # quarter of that at least (measured: 13–24 KB; a trial of video breaks it up).
        windows = [received[i + 5] - received[i] for i in range(0, len(received) - 5, 5)]
        self.assertTrue(windows and all(w > 5_000 for w in windows), (windows, received))
        self.net.limit("alice", None)
        lifted = time.monotonic()
        # Each page's next trial brings its video back, after a pause of up to half a minute (each
        # failed trial doubles it), and it stays.
        for page in (alice, bob):
            wait_until(lambda: "too weak" not in page.element("own-quality").text, timeout=120, interval=0.5,
                       what=f"{page.user}'s page to send video again, its trial passed")
        back = {}
        for page, peer in ((bob, "alice"), (alice, "bob")):
            grows_by(lambda: decoded(page, peer)["video"], f"{page.user} decoding {peer}'s video again", timeout=30, minimum=30)
            back[f"{peer} at {page.user}"] = round(time.monotonic() - lifted, 1)
            self.assertEqual((page.tile(peer) or {}).get("camera"), "on")
        # Past the end of any trial still under way: neither page paused again.
        time.sleep(6)
        for page, peer in ((bob, "alice"), (alice, "bob")):
            self.assertNotIn("too weak", page.element("own-quality").text)
            self.assertEqual((page.tile(peer) or {}).get("camera"), "on")
        self.assertEqual(alice.js("return window.switchboard.activeCall().info.callId"), call_id)
        print(f"[browser network] 64 kbit/s for {lifted - squeezed:.0f} s: video paused on bob's page {paused:.1f} s into the squeeze; "
              f"alice's audio bytes at bob per 10 s: {windows}; limit lifted → 30 new video frames, seconds later: {back}; "
              f"same call", file=sys.stderr)
        alice.click("hangup")

    def test_no_media_path_shows_no_network_on_both_pages(self):
        """No path between the two pages and no relay: the call connects on signaling, and once ICE
        fails (the first round of checks, about 21 s here) each page shows the other with no
        network, with nothing decoded, instead of a silent call."""
        alice, bob = self.network(isolated=True)
        started = time.monotonic()
        self.video_call(alice, bob, media=False)
        times = {}
        for page, peer in ((alice, "bob"), (bob, "alice")):
            wait_until(lambda: (page.tile(peer) or {}).get("quality") == "down", timeout=150, interval=0.5,
                       what=f"{page.user}'s page to show {peer} with no network")
            times[page.user] = round(time.monotonic() - started, 1)
            self.assertIn("no network", page.tile(peer)["said"].lower())
            self.assertEqual(decoded(page, peer)["video"], 0)
        print(f"[browser network] no media path: each page shows the other with no network, seconds after the call "
              f"was placed: {times}", file=sys.stderr)
        alice.click("hangup")


class TimedResult(unittest.TextTestResult):
    """Notes how long each test took and how it ended (scripts/test prints the slowest)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.times = []
        self._started = {}

    def startTest(self, test):
        self._started[test.id()] = time.monotonic()
        super().startTest(test)

    def _note(self, test, outcome):
        started = self._started.pop(test.id(), None)
        if started is not None:
            self.times.append((test.id().removeprefix("__main__."), time.monotonic() - started, outcome))

    def addSuccess(self, test):
        self._note(test, "ok")
        super().addSuccess(test)

    def addFailure(self, test, err):
        self._note(test, "failed")
        super().addFailure(test, err)

    def addError(self, test, err):
        self._note(test, "error")
        super().addError(test, err)

    def addSkip(self, test, reason):
        self._note(test, "skipped")
        super().addSkip(test, reason)


def main():
    global ARGS, SERVER
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--web", required=True)
    parser.add_argument("--golden", required=True)
    parser.add_argument("--artifacts", required=True)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    parser.add_argument("--times", help="a file to write each test's name, seconds and outcome to (TSV)")
    ARGS, rest = parser.parse_known_args()
    SERVER = Servers()
    SERVER.start()
    try:
        runner = unittest.TextTestRunner(verbosity=2, resultclass=TimedResult)
        program = unittest.main(argv=[sys.argv[0], "-v", *rest], exit=False, testRunner=runner)
        ok = program.result.wasSuccessful()
        if ARGS.times:
            with open(ARGS.times, "w") as out:
                for name, seconds, outcome in program.result.times:
                    out.write(f"{name}\t{seconds:.1f}\t{outcome}\n")
    finally:
        SERVER.stop()
    print(f"screenshots in {ARGS.artifacts}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
