import { webConfig } from "./config.js";

// Which signaling servers the page may connect to. A link can name servers (`?server=URL`,
// repeatable: the nodes of a cluster), and the page sends the user's UserSig to whichever it
// connects to, so it accepts only its own origin and the servers its own server lists
// (`GET /v1/web/config`, from `serve --web-allowed-servers`). The server's Content-Security-Policy
// names the same servers, so the browser holds to it too.

/** The page's own signaling endpoint: the WebSocket equivalent of its origin. */
export function ownServer(page) {
  return `${page.protocol === "https:" ? "wss" : "ws"}://${page.host}/v1/ws`;
}

/** The origin of a `ws:`/`wss:` URL as browsers write origins (`wss://host:8443`); null for
 * anything else (another scheme, user info, not a URL). */
export function webSocketOrigin(text) {
  let url;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  if ((url.protocol !== "ws:" && url.protocol !== "wss:") || url.username || url.password) return null;
  return `${url.protocol}//${url.host}`;
}

/**
 * The servers to use for the requested ones: the page's own when none is requested; all of them
 * when each is the page's own origin or an allowed one; none when any is not (a link that names
 * a stranger's server is not half trusted).
 */
export function chooseServers(requested, page, allowed) {
  const own = ownServer(page);
  if (!requested.length) return { urls: [own], refused: [] };
  const origins = new Set([webSocketOrigin(own), ...allowed.map(webSocketOrigin)].filter(Boolean));
  const refused = requested.filter((url) => !origins.has(webSocketOrigin(url)));
  return { urls: refused.length ? [] : requested, refused };
}

/** The servers the page's own server allows besides itself; none when it does not say. */
export async function allowedServers() {
  return (await webConfig()).allowedServers;
}

/** A link named a server the page may not use. */
export class ServerRefused extends Error {
  constructor(refused) {
    super(
      `This link asks the page to connect to ${refused.join(", ")}, which this site does not list as one of its ` +
        "servers. The page will not connect there or send your sign-in to it. Open the page without ?server= " +
        "to use this site's own server.",
    );
    this.refused = refused;
  }
}

/** The servers for this page's `?server=` parameters; rejects with `ServerRefused` before any
 * connection is made when one is not allowed. */
export async function resolveServers(params, page) {
  const requested = params.getAll("server");
  if (!requested.length) return chooseServers(requested, page, []).urls;
  const { urls, refused } = chooseServers(requested, page, await allowedServers());
  if (refused.length) throw new ServerRefused(refused);
  return urls;
}
