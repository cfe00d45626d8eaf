"""MoveTests: a call moving between a user's devices (docs/PROTOCOL.md, "Moving a call to another
device"): a browser tab hands its call to `switchboard call` of the same user and takes it back,
while the other member, another Chromium page, decodes the user's audio throughout one call."""

from selenium.webdriver.common.by import By

from harness import AUDIO_SAMPLER, decoded, grows_by, longest_gap, wait_until
from testcase import Harness


class MoveTests(Harness):
    """A call moving from a tab to `switchboard call` of the same user, and back."""

    def test_a_tab_hands_its_call_to_switchboard_call_and_takes_it_back(self):
        ivy, jon = self.logged_in("ivy", "jon")
        laptop = self.swift("jon", "--take", "--device-id", "jon-laptop")
        wait_until(lambda: any(line.get("event") == "waiting" for line in laptop.lines), what="jon's switchboard call waiting")
        ivy.call("jon", "audio")
        wait_until(lambda: jon.visible("incoming"), what="jon's incoming call screen")
        jon.click("accept")
        wait_until(lambda: jon.visible("move-call"), what="jon's call connected")
        grows_by(lambda: decoded(ivy, "jon")["samples"], "ivy's decoded audio from jon's tab")
        call_id = ivy.js("return window.switchboard.activeCall().info.callId")
        ivy.js(AUDIO_SAMPLER, "jon")

        # The tab offers the call to jon's other devices; switchboard call takes it. The tab is
        # back home, told the call goes on elsewhere (not that it ended), and lists it there.
        jon.click("move-call")
        wait_until(lambda: jon.visible("home-view"), what="jon's tab to leave the call")
        self.assertEqual(jon.element("home-notice").get_attribute("data-reason"), "moved")
        self.assertIn("continues on your other device", jon.element("home-notice").text)
        wait_until(lambda: jon.visible("elsewhere"), what="the call listed on jon's tab as elsewhere")
        grows_by(lambda: laptop.value("ivy", "audioFrames"), "jon's switchboard call decoding ivy")
        wait_until(lambda: decoded(ivy, "jon")["level"] > 5, what="jon's tone (switchboard call) at ivy")
        jon.screenshot("move-elsewhere")

        # switchboard call offers it back: the tab shows "Continue here", jon clicks it.
        laptop.send("move")
        offered = "#elsewhere-calls .record.offered button"
        wait_until(lambda: jon.driver.find_elements(By.CSS_SELECTOR, offered), what="the offer on jon's tab")
        self.assertEqual(jon.driver.find_element(By.CSS_SELECTOR, offered).text, "Continue here")
        jon.screenshot("move-offer")
        jon.driver.find_element(By.CSS_SELECTOR, offered).click()
        status, summary = laptop.finish()
        self.assertEqual(status, 0, summary)
        self.assertEqual(summary.get("movedTo"), jon.js("return window.switchboard.state.deviceId"), summary)
        wait_until(lambda: jon.visible("call-view"), what="the call back on jon's tab")
        grows_by(lambda: decoded(jon, "ivy")["samples"], "jon's tab decoding ivy again")
        grows_by(lambda: decoded(ivy, "jon")["samples"], "ivy decoding jon's tab again")
        jon.screenshot("move-back")

        samples = ivy.js("clearInterval(window.moveSampler); return window.moveSamples")
        print(f"\ncall move: the longest gap in jon's audio at ivy over two moves was {longest_gap(samples):.2f} s "
              f"({len(samples)} samples)")
        # One call throughout for ivy: the same call on screen, never an end.
        self.assertEqual(ivy.js("return window.switchboard.activeCall()?.info.callId"), call_id)
        self.assertTrue(ivy.visible("call-view"))
        self.assertFalse(ivy.visible("call-notice") and ivy.element("call-notice").get_attribute("data-reason"))
        jon.click("hangup")
        wait_until(lambda: ivy.visible("home-view"), what="the end at ivy")
