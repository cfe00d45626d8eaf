// What the page's own server says about the page (`GET /v1/web/config`): the signaling servers
// besides its own that the page may connect to (`serve --web-allowed-servers`), and the origins
// besides its own that members' pictures may come from (`serve --web-image-origins`). Asked once;
// a server that does not answer allows nothing besides the page's own origin.

let pending = null;

function strings(value) {
  return Array.isArray(value) ? value.filter((item) => typeof item === "string") : [];
}

/** `{ allowedServers, imageOrigins }`, both lists of origins. */
export function webConfig() {
  pending ??= fetch("/v1/web/config", { cache: "no-store" })
    .then((response) => (response.ok ? response.json() : {}))
    .catch(() => ({}))
    .then((body) => ({ allowedServers: strings(body?.allowedServers), imageOrigins: strings(body?.imageOrigins) }));
  return pending;
}
