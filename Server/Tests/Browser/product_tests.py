"""ProductTests: the page as people use it, every step of a one-to-one call from ringing to records
and of a call that grows into a group (what it shows at a laptop's size and a phone's, with
screenshots and the accessibility check), beside what WebRTC decodes; `Background` puts a page's
tab behind another to see its notifications."""

import json
import re
import urllib.request

import harness
from harness import decoded, grows_by, still, wait_until
from pages import PHONE
from selenium.webdriver.common.by import By
from testcase import Harness


def dev_usersig(user):
    """A UserSig for `user` from the development server, as an app's backend would hand it out."""
    with urllib.request.urlopen(f"http://127.0.0.1:{harness.SERVER.port}/v1/dev/usersig?userID={user}") as response:
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
        page.driver.get(f"http://127.0.0.1:{harness.SERVER.port}/health")
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
        amy.element("avatar-url").send_keys(f"http://127.0.0.1:{harness.SERVER.port}/img/icon.svg")
        amy.click("profile-save")
        wait_until(lambda: not amy.visible("profile-dialog"), what="the profile saved")
        self.assertEqual(amy.element("me-name").text, "Amy Pond")
        self.assertTrue(amy.js("return document.querySelector('#me-avatar img')?.complete"))

        # ben lets the page notify him, then looks at another tab.
        ben.driver.execute_cdp_cmd("Browser.grantPermissions", {
            "origin": f"http://127.0.0.1:{harness.SERVER.port}", "permissions": ["notifications"]})
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
        wait_until(lambda: (amy.notice("call") or {}).get("text", "").startswith("Screen sharing did not start"),
                   what="amy to be told her screen sharing did not start")
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
