// What the page's address asks for: the servers to use (`?server=`), the camera's size
// (`?capture=`), relayed or loopback-only media (`?relay=1`, `?loopback=1`).

import { resolveServers } from "./servers.js";

const params = new URLSearchParams(location.search);
// `?server=URL` (repeatable): the nodes of a cluster, tried in turn; by default the page's own
// server. Servers its own server does not list are refused before anything connects.
export const servers = resolveServers(params, location);
// `?capture=WxH@FPS`: the camera's size and rate (default 640x360 at 30), for slow links and tests.
const capture = params.get("capture")?.match(/^(\d+)x(\d+)(?:@(\d+))?$/);
export const options = {
  relayOnly: params.get("relay") === "1", loopbackOnly: params.get("loopback") === "1",
  capture: capture ? { width: Number(capture[1]), height: Number(capture[2]), frameRate: Number(capture[3] ?? 30) } : null,
};
