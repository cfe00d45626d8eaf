// Web Push for the browser client: after a login, the page registers the service worker
// (sw.js), subscribes to push with its app's VAPID key (GET /v1/web/config?sdkAppID=) and
// registers the subscription with the server (`push.register` kind `web`), so a call reaches this
// browser while its tab is closed. The worker shows such a call as a notification with Answer and
// Decline; a page it brings forward gets the choice here (`answer`, a decline is sent from here),
// a page it opens finds the call in its address (`?answer=` or `?call=`) and logs in with the
// login the worker kept (pushLaunch).
//
// Subscribing needs the notification permission; the page asks for it from a click (a browser
// shows no prompt otherwise), and this module subscribes as soon as it is given.

/** How long a browser's push service may take to make a subscription before the page gives up. */
const SUBSCRIBE_TIMEOUT = 20000;

let current = null; // { signaling, session, onAnswer, listener, permission }

/** The worker's registration, or null where the browser has no service workers or no push. */
async function worker() {
  if (!("serviceWorker" in navigator) || typeof PushManager === "undefined") return null;
  await navigator.serviceWorker.register(new URL("../sw.js", import.meta.url), { scope: new URL("../", import.meta.url).pathname });
  return navigator.serviceWorker.ready;
}

/** Sends `message` to the worker and waits for its answer. */
async function tell(registration, message) {
  const channel = new MessageChannel();
  const answer = new Promise((resolve) => (channel.port1.onmessage = (event) => resolve(event.data)));
  registration.active.postMessage(message, [channel.port2]);
  return answer;
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes))).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function bytes(text) {
  const base64 = text.replaceAll("-", "+").replaceAll("_", "/");
  return Uint8Array.from(atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4)), (c) => c.charCodeAt(0));
}

/** The app's VAPID public key, as the page's own server gives it. */
async function applicationServerKey(sdkAppID) {
  const response = await fetch(`/v1/web/config?sdkAppID=${encodeURIComponent(sdkAppID)}`, { cache: "no-store" });
  const config = await response.json();
  return typeof config.webPushKey === "string" ? config.webPushKey : null;
}

function withTimeout(promise, ms, what) {
  return Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer`)), ms))]);
}

/**
 * Turns push on for a logged-in page: registers the worker, leaves it the login, and subscribes
 * and registers the subscription once notifications are allowed. Resolves to what became of it:
 * `registered`, `waitingForPermission`, `denied`, `unsupported`, or `failed: …`.
 *
 * @param options.signaling the page's logged-in connection
 * @param options.session {sdkAppID, userID, userSig, deviceId, server}: what the worker logs in
 *   with to decline a call or register a new subscription while no page is open
 * @param options.onAnswer called with a call id when the user answers from a notification
 */
export async function startPush({ signaling, session, onAnswer }) {
  stopListening();
  const registration = await worker().catch(() => null);
  if (!registration) return (pushState.value = "unsupported");
  const listener = (event) => {
    const message = event.data ?? {};
    if (message.type !== "switchboard.push" || current?.signaling !== signaling) return;
    if (message.action === "answer") current.onAnswer?.(message.callId);
    if (message.action === "decline") signaling.request("call.reject", { callId: message.callId }).catch(() => {});
    if (message.action === "resubscribe") subscribe(registration).catch(() => {});
  };
  navigator.serviceWorker.addEventListener("message", listener);
  current = { signaling, session, onAnswer, listener, registration };
  if (Notification.permission === "denied") return (pushState.value = "denied");
  if (Notification.permission !== "granted") {
    // Asked from a click elsewhere on the page: subscribe once it is given.
    const status = await navigator.permissions?.query({ name: "notifications" }).catch(() => null);
    if (status) {
      status.onchange = () => {
        if (status.state === "granted" && current?.signaling === signaling) subscribe(registration).catch(() => {});
      };
    }
    return (pushState.value = "waitingForPermission");
  }
  return subscribe(registration);
}

/** Subscribes (again when the app's key changed) and registers the subscription with the server. */
async function subscribe(registration) {
  const { signaling, session } = current;
  try {
    const key = await applicationServerKey(session.sdkAppID);
    if (!key) return (pushState.value = "failed: the server has no Web Push key");
    let subscription = await registration.pushManager.getSubscription();
    const subscribedKey = subscription?.options?.applicationServerKey;
    if (subscription && subscribedKey && base64url(subscribedKey) !== key) {
      // The app's key pair changed: the old subscription would be refused by its push service.
      await subscription.unsubscribe();
      subscription = null;
    }
    subscription ??= await withTimeout(
      registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(key) }),
      SUBSCRIBE_TIMEOUT, "the browser's push service");
    const told = await tell(registration, { type: "switchboard.session", session, key });
    if (told?.error) throw new Error(told.error);
    const json = subscription.toJSON();
    await signaling.request("push.register", { token: json.endpoint, kind: "web", webPush: json.keys, move: true });
    pushState.endpoint = json.endpoint;
    return (pushState.value = "registered");
  } catch (error) {
    console.warn("Web Push not available", error);
    return (pushState.value = `failed: ${error.message ?? error}`);
  }
}

/** Logging out: the worker forgets the login (the server removed the device's tokens). */
export async function stopPush() {
  const registration = current?.registration;
  const deviceId = current?.session?.deviceId;
  stopListening();
  pushState.value = "off";
  if (registration?.active) await tell(registration, { type: "switchboard.session", session: null, deviceId }).catch(() => {});
}

function stopListening() {
  if (current?.listener) navigator.serviceWorker.removeEventListener("message", current.listener);
  current = null;
}

/** What became of push on this page, and the endpoint registered last (for the page and the tests). */
export const pushState = { value: "off", endpoint: null };

/**
 * A page opened by a notification (`?answer=CALL` or `?call=CALL`): the call and the login the
 * worker kept, or null. The address loses the parameter, so a reload does not answer again.
 */
export async function pushLaunch(location = window.location) {
  const params = new URLSearchParams(location.search);
  const answer = params.get("answer");
  const show = params.get("call");
  if (!answer && !show) return null;
  params.delete("answer");
  params.delete("call");
  const query = params.toString();
  history.replaceState(null, "", location.pathname + (query ? `?${query}` : "") + location.hash);
  const registration = await worker().catch(() => null);
  const kept = registration ? await tell(registration, { type: "switchboard.launch" }).catch(() => null) : null;
  if (!kept?.session) return null;
  return { session: kept.session, callId: answer ?? show, answer: !!answer };
}
