// The browser client's service worker: calls that ring while no page of the client is in front.
//
// The server pushes (Web Push, RFC 8030; encrypted for this browser, RFC 8291) the same object an
// APNs push carries under `switchboard` (docs/PROTOCOL.md, "Web Push and FCM"):
// - `incomingCall`: a notification with Answer and Decline, unless a page of the client is
//   visible (it rings by itself over its connection);
// - `callEnded`: the call stopped ringing (canceled, answered or declined elsewhere, timed out):
//   its ringing notification goes;
// - `missedCall`: a notification of the missed call, in place of the ringing one.
// Answer opens the page (or brings one forward) into the call; Decline rejects the call, through
// a page when one is open, else over a connection of its own with the login the page left here
// (IndexedDB) when it subscribed. A changed subscription (`pushsubscriptionchange`) is registered
// again the same way.
//
// A classic script with no imports: browsers without module service workers run it too.

"use strict";

const PROTOCOL_VERSION = 1;
const REQUEST_TIMEOUT = 10000;

// MARK: - what the page left here (IndexedDB: a service worker has no localStorage)

function database() {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open("switchboard-push", 1);
    request.onupgradeneeded = () => request.result.createObjectStore("values");
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function load(key) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const request = db.transaction("values").objectStore("values").get(key);
    request.onsuccess = () => resolve(request.result ?? null);
    request.onerror = () => reject(request.error);
  });
}

async function store(key, value) {
  const db = await database();
  return new Promise((resolve, reject) => {
    const transaction = db.transaction("values", "readwrite");
    if (value === null) transaction.objectStore("values").delete(key);
    else transaction.objectStore("values").put(value, key);
    transaction.oncomplete = () => resolve();
    transaction.onerror = () => reject(transaction.error);
  });
}

// MARK: - pages

/** The client's pages (windows in this worker's scope). */
async function pages() {
  return self.clients.matchAll({ type: "window", includeUncontrolled: true });
}

/** The pages that are logged in (they said so, and are still open). */
async function loggedInPages() {
  const ids = (await load("pages")) ?? [];
  return (await pages()).filter((page) => ids.includes(page.id));
}

/** Whether someone is looking at a logged-in page now: it rings there by itself. */
async function aPageIsInFront() {
  return (await loggedInPages()).some((page) => page.focused);
}

/** Brings a logged-in page forward and hands it `message`, or opens one with `query`. */
async function toPage(message, query) {
  const [page] = await loggedInPages();
  if (page) {
    try {
      await page.focus();
    } catch {}
    page.postMessage({ type: "switchboard.push", ...message });
    return "page";
  }
  const url = new URL(self.registration.scope);
  for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
  await self.clients.openWindow(url.href);
  return "opened";
}

// MARK: - pushes

function callText(push) {
  const media = push.mediaType === "video" ? "video" : "audio";
  const group = push.callType === "group" ? "group " : "";
  return { caller: push.callerName || push.callerId || "Someone", media: `${group}${media}` };
}

async function onPush(data) {
  if (!data || data.v !== 1 || typeof data.callId !== "string") return;
  const existing = await self.registration.getNotifications({ tag: data.callId });
  switch (data.kind) {
    case "incomingCall": {
      if (await aPageIsInFront()) return;
      const { caller, media } = callText(data);
      await self.registration.showNotification(caller, {
        tag: data.callId,
        body: `Incoming ${media} call`,
        requireInteraction: true,
        renotify: true,
        actions: [
          { action: "answer", title: "Answer" },
          { action: "decline", title: "Decline" },
        ],
        data: { kind: "incomingCall", callId: data.callId, sdkAppID: data.sdkAppID, userId: data.userId },
      });
      return;
    }
    case "callEnded":
      for (const notification of existing) if (notification.data?.kind === "incomingCall") notification.close();
      return;
    case "missedCall": {
      for (const notification of existing) notification.close();
      if (await aPageIsInFront()) return;
      const { caller, media } = callText(data);
      await self.registration.showNotification(data.title || `Missed ${media} call`, {
        tag: data.callId,
        body: data.body || `from ${caller}`,
        data: { kind: "missedCall", callId: data.callId },
      });
      return;
    }
  }
}

self.addEventListener("push", (event) => {
  let data = null;
  try {
    data = event.data?.json() ?? null;
  } catch {}
  event.waitUntil(onPush(data));
});

// MARK: - answer, decline

/** What a click on a notification (or one of its actions) does. */
async function onNotificationClick(notification, action) {
  const data = notification.data ?? {};
  notification.close();
  if (data.kind !== "incomingCall") return toPage({ action: "show" }, {});
  if (action === "decline") return decline(data.callId);
  // Answer answers; a click on the notification itself shows the ringing call.
  const verb = action === "answer" ? "answer" : "show";
  return toPage({ action: verb, callId: data.callId }, { [verb === "answer" ? "answer" : "call"]: data.callId });
}

async function decline(callId) {
  if ((await loggedInPages()).length) return toPage({ action: "decline", callId }, {});
  await withConnection(async (request) => request("call.reject", { callId }));
  return "connection";
}

self.addEventListener("notificationclick", (event) => {
  event.waitUntil(onNotificationClick(event.notification, event.action));
});

// MARK: - a changed subscription

/**
 * The browser replaced the subscription (it expired, or the push service renewed it): a logged-in
 * page subscribes again and registers the new one over its connection; with none open, this worker
 * does both, over a connection of its own.
 */
async function subscriptionChanged(newSubscription) {
  const [page] = await loggedInPages();
  if (page) {
    page.postMessage({ type: "switchboard.push", action: "resubscribe" });
    return "page";
  }
  const key = await load("applicationServerKey");
  if (!key) return "no key";
  const subscription =
    newSubscription ??
    (await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key }));
  const json = subscription.toJSON();
  await withConnection(async (request) =>
    request("push.register", { token: json.endpoint, kind: "web", webPush: json.keys, move: true }),
  );
  return "connection";
}

self.addEventListener("pushsubscriptionchange", (event) => {
  event.waitUntil(subscriptionChanged(event.newSubscription ?? null).catch(() => {}));
});

// MARK: - a connection of its own, when no page is open

/**
 * Logs in as the device that registered the subscription (its tab is closed, or this would not
 * be needed), runs `work` with a `request(type, data)` function, and closes without logging out
 * (a logout would remove the device's push tokens).
 */
async function withConnection(work) {
  const session = await load("session");
  if (!session) throw new Error("no login kept for push");
  const socket = new WebSocket(session.server);
  const pending = new Map();
  let next = 0;
  const opened = new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new Error("connection failed"));
  });
  socket.onmessage = (message) => {
    let frame;
    try {
      frame = JSON.parse(message.data);
    } catch {
      return;
    }
    const waiter = frame && typeof frame.id === "string" ? pending.get(frame.id) : null;
    if (!waiter) return;
    pending.delete(frame.id);
    if (frame.error) waiter.reject(Object.assign(new Error(frame.error.message), { code: frame.error.code }));
    else waiter.resolve(frame.result);
  };
  const request = (type, data) =>
    new Promise((resolve, reject) => {
      const id = `sw-${++next}`;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, type, data }));
      setTimeout(() => {
        if (pending.delete(id)) reject(new Error(`${type}: no answer`));
      }, REQUEST_TIMEOUT);
    });
  try {
    await opened;
    await request("login", {
      sdkAppID: session.sdkAppID, userID: session.userID, userSig: session.userSig,
      protocolVersion: PROTOCOL_VERSION, deviceId: session.deviceId, platform: "web",
    });
    return await work(request);
  } finally {
    socket.close(1000);
  }
}

// MARK: - from the client's pages

self.addEventListener("message", (event) => {
  const message = event.data ?? {};
  const reply = (value) => event.ports?.[0]?.postMessage(value);
  switch (message.type) {
    // The page logged in and subscribed (or logged out: `session` null).
    case "switchboard.session":
      event.waitUntil(
        (async () => {
          const open = new Set((await pages()).map((page) => page.id));
          const ids = ((await load("pages")) ?? []).filter((id) => open.has(id) && id !== event.source?.id);
          if (message.session) ids.push(event.source?.id);
          await store("pages", ids.filter(Boolean));
          if (message.session) {
            await store("session", message.session);
            await store("applicationServerKey", message.key ?? null);
          } else if ((await load("session"))?.deviceId === message.deviceId) {
            // The device whose login was kept logged out (another tab's stays).
            await store("session", null);
          }
        })().then(() => reply({ ok: true }), (error) => reply({ error: String(error) })),
      );
      break;
    // The page was opened by a notification: the login kept here.
    case "switchboard.launch":
      event.waitUntil(load("session").then((session) => reply({ session }), () => reply({ session: null })));
      break;
    // Runs a handler as the browser would run it, for what a test cannot make the browser do (a
    // click on a notification's action, a changed subscription). Only the client's own pages can
    // post here, and each handler does only what its user could do from the notification.
    case "switchboard.run":
      event.waitUntil(
        (async () => {
          if (message.handler === "notificationclick") {
            const [notification] = await self.registration.getNotifications({ tag: message.tag });
            if (!notification) return { error: "no such notification" };
            return { result: await onNotificationClick(notification, message.action ?? "") };
          }
          if (message.handler === "pushsubscriptionchange") return { result: await subscriptionChanged(null) };
          return { error: "unknown handler" };
        })().then(reply, (error) => reply({ error: String(error) })),
      );
      break;
  }
});

// A new version takes over at once: its handlers are the ones that match the page.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));
