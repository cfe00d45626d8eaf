"""BrowserTests: the browser client against itself: the protocol module reads every golden message,
every reason and error has words, the video gate and the stall watch step by step, video calls
between two browsers (directly and through TURN), and a call that outlives a server restart."""

import os
import re

import harness
from harness import decoded, grows, grows_by, stands_still, wait_until
from pages import PROTOCOL_WORDS
from selenium.webdriver.common.by import By
from testcase import Harness


class BrowserTests(Harness):
    """The browser client against itself."""

    # MARK: the protocol

    def test_the_golden_files_parse_in_the_browser(self):
        """The browser's protocol module reads every golden message the Swift tests read."""
        page = self.page("golden")
        golden = {}
        for name in sorted(os.listdir(harness.ARGS.golden)):
            # Pushes go to PushKit and webhooks to app backends, not to browsers.
            if name.endswith(".json") and not name.startswith(("push.", "webhook.")):
                with open(os.path.join(harness.ARGS.golden, name)) as f:
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
        # Pressed once the track is off (the click's handler awaits it), not with the click.
        wait_until(lambda: alice.element("mute").get_attribute("aria-pressed") == "true",
                   what="alice's mute button to show her muted")
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
            # The button turns pressed once the browser has granted the capture (the click's
            # handler awaits it), not with the click itself.
            wait_until(lambda: alice.element("share").get_attribute("aria-pressed") == "true",
                       what="alice's share button to show her screen shared")
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
        harness.SERVER.restart_switchboard()
        wait_until(lambda: (harness.SERVER.health() or {}).get("devices") == 2, timeout=30,
                   what="both pages logged in to the new process")
        self.assertEqual(harness.SERVER.health().get("activeCalls"), 1)
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
