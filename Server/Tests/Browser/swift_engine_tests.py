"""SwiftEngineTests: the Swift SDK's GStreamer engine (`switchboard call`) and Chromium in the same
calls: one calling the other, through TURN, a switch to video, and a mesh of two browsers and the
engine."""

from harness import decoded, grows_by, still, wait_until
from testcase import Harness


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
