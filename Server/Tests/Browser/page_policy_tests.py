"""PagePolicyTests: what the server lets browsers do with its page: its Content-Security-Policy,
framing, the servers a link may name, the origins avatars may come from, a listed server used."""

import urllib.request

import harness
from harness import wait_until
from selenium.webdriver.common.by import By
from sites import FramingSite, Listener, forward_to_switchboard
from testcase import Harness


class PagePolicyTests(Harness):
    """What the server lets browsers do with its page: connect only to its own origin and the
    servers the operator lists (a link cannot send a user's UserSig elsewhere), be framed by
    nobody, sniff nothing, leak no referrer."""

    def test_the_page_is_served_with_its_policy(self):
        with urllib.request.urlopen(harness.SERVER.url()) as response:
            headers = response.headers
        own = f"127.0.0.1:{harness.SERVER.port}"
        self.assertEqual(headers["Content-Security-Policy"],
                         f"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' http://localhost:{harness.SERVER.port}; "
                         f"connect-src 'self' ws://{own} wss://{own} ws://{harness.SERVER.listed_host}:{harness.SERVER.listed_port}; "
                         "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
        self.assertEqual(headers["X-Frame-Options"], "DENY")
        self.assertEqual(headers["X-Content-Type-Options"], "nosniff")
        self.assertEqual(headers["Referrer-Policy"], "no-referrer")

    def test_another_site_cannot_frame_the_page(self):
        site = FramingSite("127.0.0.4", harness.SERVER.url())
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
        listed = f"http://localhost:{harness.SERVER.port}/img/icon.svg"
        unlisted = f"http://127.0.0.2:{harness.SERVER.port}/img/icon.svg"
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
        forwarder = Listener(harness.SERVER.listed_host, harness.SERVER.listed_port, serve=forward_to_switchboard)
        try:
            own = f"ws://127.0.0.1:{harness.SERVER.port}/v1/ws"
            page = self.page("listed", f"&server=ws://{harness.SERVER.listed_host}:{harness.SERVER.listed_port}/v1/ws&server={own}")
            page.log_in()
            self.assertFalse(page.visible("server-error"))
            self.assertEqual(forwarder.connections, 1)
            self.assertEqual(page.js("return window.switchboard.state.status"), "loggedIn")
        finally:
            forwarder.close()
