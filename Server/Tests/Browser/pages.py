"""Chromium and the pages in it: a Chromium per user (or one shared by several users' windows),
and `Page`, one user's page driven as a person would (log in, call, click), read as a person reads
it (notices, tiles, the people in the call) and checked at a laptop's size and a phone's
(accessibility, the Tab key, screenshots)."""

import os
import re

import harness
import netns
from harness import wait_until
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

# Every screen is checked and photographed at a laptop's size and a phone's.
DESKTOP = (1100, 900)
PHONE = (375, 812)
# The protocol's names a person should never read (docs/PROTOCOL.md); the page says them in words.
PROTOCOL_WORDS = ["noResponse", "lineBusy", "otherDeviceAccepted", "otherDeviceReject", "endByServer", "noAnswer",
                  "oneToOne", "veryBad", "timedOut", "callNotFound", "joinNotAllowed", "invalidCallState",
                  "alreadyInCall", "mediaChangeInProgress", "userSig", "sdkAppID:", "undefined", "null", "[object"]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "a11y.js")) as _checker:
    A11Y_CHECKER = _checker.read()


def browser(autoplay=True, place=None, extra=()):
    """Chromium; `autoplay=False` keeps the browser's own rule that a page makes sound only after
    the user touched it (the tests' default lets pages play at once). `place` (a `TestNet`, a host
    and the server's origin) runs it inside that host's namespace, where the server's address is
    not loopback: the origin is treated as secure, as a site with TLS would be, so the page may use
    the camera."""
    options = Options()
    options.binary_location = harness.ARGS.chromium
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
        return webdriver.Chrome(service=netns.NamespacedChromedriver(harness.ARGS.chromedriver, net, host), options=options)
    return webdriver.Chrome(service=Service(harness.ARGS.chromedriver), options=options)


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
        self.driver.get(url or harness.SERVER.url(query))
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
        os.makedirs(harness.ARGS.artifacts, exist_ok=True)
        path = os.path.join(harness.ARGS.artifacts, f"{name}.png")
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
