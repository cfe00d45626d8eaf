// The browser client: log in, call, ring, answer, talk, invite, join, hang up, records. It
// speaks the same protocol as the Swift SDK and follows the same rules (which call is on screen,
// who offers, the layouts). Everything it tells the user comes from words.js.
//
// This module starts the page: it wires the page's controls to the modules that do the work
// (login.js, calls.js, events.js, callmedia.js, render.js, over state.js) and gives tests a
// window on the client (`window.switchboard`).

import { clampFloating } from "./layout.js";
import { ServerRefused } from "./servers.js";
import { errorText } from "./words.js";
import { allowImageOrigins } from "./avatar.js";
import { webConfig } from "./config.js";
import { pushLaunch, pushState } from "./push.js";
import { servers } from "./options.js";
import { activeCall, state } from "./state.js";
import { clear, say } from "./notices.js";
import { login, loginDevelopment, logout, requestLogout, resumeSession, saveProfile } from "./login.js";
import {
  accept, answerCall, answerMediaChange, cancelMediaChange, hangup, invite, join, placeCall, reject,
  requestMediaChange, toggleCamera, toggleMicrophone, toggleScreenShare,
} from "./calls.js";
import { media } from "./callmedia.js";
import { offerMove } from "./move.js";
import { toggleRecording } from "./recording.js";
import { $, attention, render, ringer } from "./render.js";

webConfig().then((config) => allowImageOrigins(config.imageOrigins));

// MARK: - wiring

const loginErrorText = (error) => (error instanceof ServerRefused ? error.message : errorText(error, "login"));

const ids = (text) => text.split(",").map((id) => id.trim()).filter(Boolean);

function wire() {
  servers.catch((refusal) => {
    $("server-error").textContent = refusal.message;
    $("server-error").hidden = false;
    for (const id of ["login-dev", "login"]) $(id).disabled = true;
  });
  // Browsers let a page make sound only after the user interacted with it.
  for (const type of ["pointerdown", "keydown"]) document.addEventListener(type, () => ringer.unlock(), { capture: true });
  ringer.onchange = () => render();
  attention.onchange = () => render();

  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    clear("login");
    render();
    try {
      await loginDevelopment($("user-id").value.trim());
    } catch (error) {
      say("login", loginErrorText(error), { tone: "error", code: error.code });
    }
  });
  $("login").addEventListener("click", async () => {
    clear("login");
    render();
    try {
      await login($("user-id").value.trim(), Number($("sdk-app-id").value), $("user-sig").value.trim());
    } catch (error) {
      say("login", loginErrorText(error), { tone: "error", code: error.code });
    }
  });
  $("logout").addEventListener("click", requestLogout);
  $("logout-confirm").addEventListener("click", () => {
    $("logout-dialog").close();
    logout();
  });
  $("logout-cancel").addEventListener("click", () => $("logout-dialog").close());

  $("profile").addEventListener("click", () => {
    $("nickname").value = state.profile.nickname ?? "";
    $("avatar-url").value = state.profile.avatarURL ?? "";
    $("profile-error").hidden = true;
    $("profile-dialog").showModal();
  });
  $("profile-cancel").addEventListener("click", () => $("profile-dialog").close());
  $("profile-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await saveProfile($("nickname").value.trim(), $("avatar-url").value.trim());
      $("profile-dialog").close();
    } catch (error) {
      $("profile-error").textContent = errorText(error, "profile");
      $("profile-error").hidden = false;
    }
  });

  // Enter in the callee field places an audio call; the buttons say which call to place.
  $("call-form").addEventListener("submit", (event) => {
    event.preventDefault();
    placeCall(ids($("callee").value), "audio");
  });
  $("call-audio").addEventListener("click", () => placeCall(ids($("callee").value), "audio"));
  $("call-video").addEventListener("click", () => placeCall(ids($("callee").value), "video"));
  $("join-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const callId = $("join-call-id").value.trim();
    if (callId) join(callId);
  });
  $("enable-alerts").addEventListener("click", () => attention.ask().then(render));
  for (const place of ["home", "call", "login"]) {
    $(`${place}-notice`).querySelector(".dismiss").addEventListener("click", () => {
      clear(place);
      render();
    });
  }

  $("accept").addEventListener("click", accept);
  $("reject").addEventListener("click", reject);
  $("hangup").addEventListener("click", hangup);
  $("move-call").addEventListener("click", offerMove);
  for (const id of ["ring-mute", "ringback-mute"]) $(id).addEventListener("click", () => ringer.setMuted(!ringer.muted));
  $("mute").addEventListener("click", toggleMicrophone);
  $("camera").addEventListener("click", toggleCamera);
  $("share").addEventListener("click", toggleScreenShare);
  $("record").addEventListener("click", toggleRecording);
  $("switch-media").addEventListener("click", requestMediaChange);
  $("media-change-agree").addEventListener("click", () => answerMediaChange(true));
  $("media-change-decline").addEventListener("click", () => answerMediaChange(false));
  $("media-change-cancel").addEventListener("click", cancelMediaChange);
  $("add-people").addEventListener("click", () => {
    state.inviteOpen = !state.inviteOpen;
    render();
    if (state.inviteOpen) $("invitees").focus();
  });
  $("invite-form").addEventListener("submit", (event) => {
    event.preventDefault();
    invite(ids($("invitees").value));
  });
  $("layout").addEventListener("change", (event) => {
    state.view.template = event.target.value;
    render();
  });
  $("stage").addEventListener("floatmove", (event) => {
    const stage = $("stage");
    state.view.floatingOrigin = clampFloating(event.detail, { width: stage.clientWidth, height: stage.clientHeight });
    render();
  });
  window.addEventListener("resize", render);
  setInterval(() => {
    if (activeCall()) render();
  }, 500);
  render();
  start();
}

/**
 * A page opened by a notification (push.js) logs in as the tab that subscribed did and answers
 * when that is what the user chose; any other page resumes this tab's session.
 */
async function start() {
  const launch = await pushLaunch().catch(() => null);
  if (!launch) return resumeSession();
  try {
    await login(launch.session.userID, launch.session.sdkAppID, launch.session.userSig);
  } catch (error) {
    say("login", errorText(error, "login"), { tone: "error", code: error.code });
    return;
  }
  if (launch.answer) await answerCall(launch.callId);
}

// For tests and the curious: the client's state and its media statistics.
window.switchboard = {
  state,
  activeCall,
  stats: async () => (media ? media.stats() : {}),
  /** Through the SFU: what this page sends (one connection; the camera's layers), else null. */
  publishStats: async () => (media?.route === "sfu" ? media.publishStats() : null),
  /** Through the SFU: whose each section of the subscribe connection is ({mid, userId, source}), else null. */
  sfuTracks: () => (media?.route === "sfu" ? [...media.tracks.values()] : null),
  /** Through the SFU: the current session's number (null before the first), else null. */
  sfuSession: () => (media?.route === "sfu" ? media.session : null),
  /** The layers this page asked for, by member. */
  layers: () => (media?.route === "sfu" ? Object.fromEntries(media.layers) : null),
  mediaReady: async () => {
    await media?.ready;
    return !!media;
  },
  ringer: () => ({ state: ringer.state, kind: ringer.kind, muted: ringer.muted, level: ringer.level() }),
  tiles: () => [...document.querySelectorAll("#stage .tile")].map((n) => ({ user: n.dataset.user, role: n.dataset.role })),
  /** What became of Web Push on this page (push.js). */
  push: () => ({ ...pushState }),
  /** Whether the screen tile of `user` plays a picture. */
  screenPlaying: (user) => (document.querySelector(`.tile[data-key="screen:${CSS.escape(user)}"] video`)?.videoWidth ?? 0) > 0,
};

wire();
