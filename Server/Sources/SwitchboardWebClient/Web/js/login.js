// The session: logging in (development sigs or an app's UserSig), resuming after a reload,
// logging out, the records and this user's profile. Holds the signaling connection.

import { Signaling, tabDeviceId } from "./signaling.js";
import { errorText } from "./words.js";
import { forgetSession, savedSession, saveSession } from "./session.js";
import { startPush, stopPush } from "./push.js";
import { servers } from "./options.js";
import { liveCall, PROBLEMS_LIMIT, state } from "./state.js";
import { clear, say } from "./notices.js";
import { answerCall } from "./calls.js";
import { onEvent } from "./events.js";
import { media, stopMedia } from "./callmedia.js";
import { $, render } from "./render.js";

export let signaling = null;

export async function login(userID, sdkAppID, userSig) {
  const urls = await servers;
  signaling?.close();
  signaling = new Signaling(urls);
  signaling.addEventListener("frame", (event) => onEvent(event.detail));
  signaling.addEventListener("status", (event) => {
    state.status = event.detail === "connected" ? "loggedIn" : event.detail;
    render();
  });
  // After a network drop ICE restarts (the path may have changed); after a server restart the
  // media path never went away.
  // Records of calls that ended while the page was away came as events it never heard: read them.
  signaling.addEventListener("reconnected", (event) => {
    if (!event.detail?.afterRestart) media?.reconnected();
    loadRecords().catch((error) => console.warn("records refused", error.code, error.message));
  });
  signaling.addEventListener("problem", (event) => {
    state.problems = [...state.problems, event.detail].slice(-PROBLEMS_LIMIT);
    console.warn("protocol mismatch", event.detail);
  });
  const result = await signaling.login({ sdkAppID, userID, userSig, deviceId: tabDeviceId() });
  saveSession({ userID: result.userID, sdkAppID, userSig });
  state.me = result.userID;
  state.deviceId = result.deviceId;
  state.profile = { nickname: result.profile?.nickname ?? null, avatarURL: result.profile?.avatarURL ?? null };
  state.status = "loggedIn";
  clear("login");
  render();
  $("callee").focus();
  startPush({
    signaling, onAnswer: answerCall,
    session: { sdkAppID, userID: result.userID, userSig, deviceId: tabDeviceId(), server: urls[0] },
  }).catch((error) => console.warn("push", error));
  await loadRecords();
}

export async function loginDevelopment(userID) {
  // No UserSig is fetched for a server the page will not use.
  await servers;
  const response = await fetch(`/v1/dev/usersig?userID=${encodeURIComponent(userID)}`);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error("refused"), { code: body.error?.code });
  await login(body.userID, body.sdkAppID, body.userSig);
}

/** Logs in with what this tab kept from before a reload. */
export async function resumeSession() {
  const saved = savedSession();
  if (!saved) return;
  $("user-id").value = saved.userID;
  state.status = "loggingIn";
  render();
  try {
    await login(saved.userID, saved.sdkAppID, saved.userSig);
  } catch (error) {
    forgetSession();
    signaling?.close();
    signaling = null;
    state.status = "loggedOut";
    say("login", errorText(error, "login"), { tone: "error", code: error.code });
  }
}

/** Logs out, after asking when that would hang up a live call. */
export function requestLogout() {
  if (liveCall()) {
    $("logout-dialog").showModal();
  } else {
    logout();
  }
}

export async function logout(sessionEnded = null) {
  stopPush();
  if (!sessionEnded) {
    try {
      await signaling?.request("logout");
    } catch {}
  }
  forgetSession();
  signaling?.close();
  signaling = null;
  stopMedia();
  state.me = null;
  state.profile = { nickname: null, avatarURL: null };
  state.status = "loggedOut";
  state.calls.clear();
  state.arrival = [];
  state.ongoing.clear();
  state.elsewhere.clear();
  state.moveOffers.clear();
  state.records = [];
  state.inviteOpen = false;
  clear("home", "call", "login");
  if (sessionEnded) say("login", errorText(sessionEnded, "session"), { tone: "error", code: sessionEnded.code });
  // The UserSig is a credential: it does not stay in the form for the next person at this screen.
  $("user-sig").value = "";
  render();
  $("user-id").focus();
}

async function loadRecords() {
  const page = await signaling.request("records.query", { syncTime: -1, count: 30, order: "descending" });
  state.records = page.records;
  for (const record of page.records) state.ongoing.delete(record.callId);
  render();
}

export async function saveProfile(nickname, avatarURL) {
  const result = await signaling.request("profile.set", { nickname, avatarURL });
  state.profile = { nickname: result.nickname ?? null, avatarURL: result.avatarURL ?? null };
  render();
}
