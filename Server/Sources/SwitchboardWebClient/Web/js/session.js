// Staying logged in across a reload, as the SDK keeps its login: the tab's sessionStorage
// holds the user ID, app and UserSig (with the device id, kept by signaling.js) for as long as
// the tab lives. Another tab does not see it, closing the tab forgets it, and logging out
// removes it.

const KEY = "switchboard.session";

/** The login this tab had, or null. */
export function savedSession() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(KEY) ?? "null");
    if (saved && typeof saved.userID === "string" && Number.isInteger(saved.sdkAppID) && typeof saved.userSig === "string") {
      return saved;
    }
  } catch {}
  return null;
}

export function saveSession({ userID, sdkAppID, userSig }) {
  sessionStorage.setItem(KEY, JSON.stringify({ userID, sdkAppID, userSig }));
}

export function forgetSession() {
  sessionStorage.removeItem(KEY);
}
