"""NetworkTests: the browser's side of links that fail, with the server (`NamespacedServer`) and each
Chromium in network namespaces of their own (netns.py): blackouts, an address change, narrow links,
no media path."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import harness
import netns
from harness import decoded, grows, grows_by, wait_until
from testcase import Harness


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
            harness.ARGS.binary, "serve", "--host", self.address, "--port", str(self.port),
            "--database", f"{self.directory}/switchboard.sqlite", "--web-root", harness.ARGS.web,
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
            self.net = netns.TestNet(os.path.join(os.path.dirname(harness.ARGS.binary), "switchboard-testnet"),
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
