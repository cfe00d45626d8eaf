"""WebPushTests: the browser client's Web Push side in headless Chromium: the service worker, the
subscription registered with the server, the worker's notifications and their Answer and Decline,
with a stand-in for the browser's side of a push service (PUSH_SUBSCRIPTION_STAND_IN)."""

import json
import os
import time
import urllib.request

import harness
from harness import wait_until
from sites import Listener
from testcase import Harness

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
        origin = f"http://127.0.0.1:{harness.SERVER.port}"
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
        before = harness.SERVER.health()["devices"]
        closing = page.driver.current_window_handle
        page.driver.switch_to.new_window("tab")
        blank = page.driver.current_window_handle
        page.driver.switch_to.window(closing)
        page.driver.close()
        page.driver.switch_to.window(blank)
        wait_until(lambda: harness.SERVER.health()["devices"] < before, timeout=30, what=f"the server to see {page.user}'s tab close")

    def leave(self, page):
        """The page's tab goes to a page of the origin that runs no client code (`/health`, in the
        worker's scope, so the test can still reach the worker): the client page is gone, with its
        connection."""
        before = harness.SERVER.health()["devices"]
        page.driver.get(f"http://127.0.0.1:{harness.SERVER.port}/health")
        wait_until(lambda: harness.SERVER.health()["devices"] < before, timeout=30, what=f"the server to see {page.user}'s page go")

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
            "origin": f"http://127.0.0.1:{harness.SERVER.port}", "registrationId": "0", "data": json.dumps(push)})

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
        with urllib.request.urlopen(f"http://127.0.0.1:{harness.SERVER.port}/metrics") as response:
            return [line for line in response.read().decode().splitlines() if line.startswith("switchboard_push_total")]

    @staticmethod
    def golden(name):
        with open(os.path.join(harness.ARGS.golden, f"{name}.json")) as f:
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
            self.assertEqual(worker, {"scope": f"http://127.0.0.1:{harness.SERVER.port}/",
                                      "script": f"http://127.0.0.1:{harness.SERVER.port}/sw.js"})
            with urllib.request.urlopen(f"http://127.0.0.1:{harness.SERVER.port}/sw.js") as response:
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
            bob.driver.get(harness.SERVER.url(f"&answer={call_id}"))
            wait_until(lambda: alice.js("return window.switchboard.activeCall()?.info.participants"
                                        ".find(p => p.userId === 'bob')?.status") == "accept",
                       what="bob's new page to answer")
            self.assertNotIn("answer=", bob.driver.current_url)
            wait_until(lambda: bob.visible("call-view"), what="bob's page in the call")
            alice.click("hangup")
        finally:
            listener.close()
