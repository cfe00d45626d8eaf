// The signaling connection: requests with ids and exactly one response each, events in wire
// order, heartbeats, and reconnecting with the same device id (the server resumes the calls).

import { PROTOCOL_VERSION, parseFrame, request } from "./protocol.js";

export class SwitchboardError extends Error {
  constructor(code, message, retryAfter) {
    super(message);
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

/** How long an attempt to connect may take (the Swift SDK's bound too). */
const CONNECT_TIMEOUT = 10000;

/** A stable device id for this tab: two tabs are two devices, a reload keeps the device. */
export function tabDeviceId() {
  let id = sessionStorage.getItem("switchboard.deviceId");
  if (!id) {
    id = "web-" + crypto.randomUUID();
    sessionStorage.setItem("switchboard.deviceId", id);
  }
  return id;
}

/**
 * Events: `frame` ({detail: {event, data}}), `status` ({detail: "connected" | "reconnecting" |
 * "closed"}), `problem` (a frame that does not match the protocol, for the console).
 */
export class Signaling extends EventTarget {
  /**
   * @param urls the server's WebSocket address, or several (the nodes of a cluster): a dropped
   *   connection is tried again at the same address once, then at the others in turn.
   */
  constructor(urls, { requestTimeout = 10000 } = {}) {
    super();
    this.urls = Array.isArray(urls) ? urls : [urls];
    this.urlIndex = 0;
    // The server said it was restarting ("come back"): the calls go on, the media path too.
    this.serverRestarting = false;
    this.requestTimeout = requestTimeout;
    this.socket = null;
    this.pending = new Map(); // id → {type, text, resolve, reject, timer}
    this.nextId = 0;
    this.prefix = Math.random().toString(36).slice(2, 8);
    this.loginRequest = null;
    this.status = "closed";
    this.clockOffset = 0;
    this.heartbeat = null;
    this.reconnectTimer = null;
    this.attempt = 0;
  }

  /** Server time now, Unix ms. */
  serverNow() {
    return Date.now() + this.clockOffset;
  }

  async login({ sdkAppID, userID, userSig, deviceId }) {
    this.loginRequest = {
      sdkAppID, userID, userSig, protocolVersion: PROTOCOL_VERSION, deviceId, platform: "web",
    };
    await this.open();
    return this.logIn();
  }

  async logIn() {
    const sent = Date.now();
    const result = await this.request("login", this.loginRequest);
    this.clockOffset = result.serverTime - Math.round((sent + Date.now()) / 2);
    this.startHeartbeat(result.heartbeatInterval);
    this.setStatus("connected");
    return result;
  }

  get url() {
    return this.urls[this.urlIndex];
  }

  /**
   * Opens a socket to the current address. An attempt that has not connected within
   * CONNECT_TIMEOUT is given up (a network that drops packets leaves it waiting for minutes).
   */
  open() {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(this.url);
      this.socket = socket;
      const timer = setTimeout(() => {
        if (this.socket === socket) this.abandon();
        reject(new SwitchboardError(9001, `could not connect to ${this.url} in time`));
      }, CONNECT_TIMEOUT);
      socket.onopen = () => {
        clearTimeout(timer);
        resolve();
      };
      socket.onerror = () => {
        clearTimeout(timer);
        reject(new SwitchboardError(9001, `could not connect to ${this.url}`));
      };
      socket.onmessage = (message) => this.received(message.data);
      socket.onclose = () => {
        clearTimeout(timer);
        if (this.socket === socket) this.dropped();
      };
    });
  }

  /**
   * Takes the connection for dead now: a socket whose network is gone fires `close` only once
   * its closing handshake times out, which takes far longer than the heartbeat's verdict.
   */
  abandon() {
    const socket = this.socket;
    this.socket = null;
    socket?.close();
    this.dropped();
  }

  /** Sends a request; resolves with its result, rejects with a SwitchboardError. */
  request(type, data = {}) {
    const id = `${this.prefix}.${++this.nextId}`;
    const text = JSON.stringify(request(id, type, data));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new SwitchboardError(9002, "the server did not answer in time"));
      }, this.requestTimeout);
      this.pending.set(id, { type, text, resolve, reject, timer });
      if (this.socket?.readyState === WebSocket.OPEN && (this.status === "connected" || type === "login")) {
        this.socket.send(text);
      }
    });
  }

  /** Sends a request without waiting; failures go to the console. Order is kept. */
  post(type, data) {
    this.request(type, data).catch((error) => console.warn(`${type} refused`, error.code, error.message));
  }

  received(text) {
    const frame = parseFrame(text, (id) => this.pending.get(id)?.type);
    if (frame.problems.length) {
      this.dispatchEvent(new CustomEvent("problem", { detail: { text, problems: frame.problems } }));
    }
    this.heard = true;
    if (frame.kind === "event") {
      if (frame.event === "sessionEnded" && frame.data?.error?.code === 5002) {
        // shuttingDown: the node restarts or hands its calls over. Not the end of the session:
        // reconnect (to the next address first) and carry on.
        this.serverRestarting = true;
        return;
      }
      this.dispatchEvent(new CustomEvent("frame", { detail: { event: frame.event, data: frame.data } }));
    } else if (frame.kind === "response") {
      const pending = this.pending.get(frame.id);
      if (!pending) return;
      this.pending.delete(frame.id);
      clearTimeout(pending.timer);
      if (frame.error) {
        pending.reject(new SwitchboardError(frame.error.code, frame.error.message, frame.error.retryAfter));
      } else {
        pending.resolve(frame.result);
      }
    }
  }

  startHeartbeat(seconds) {
    clearInterval(this.heartbeat);
    let silent = 0;
    this.heard = true;
    this.heartbeat = setInterval(() => {
      silent = this.heard ? 0 : silent + 1;
      this.heard = false;
      // Two silent intervals in a row: the connection is dead even if the socket does not know.
      if (silent >= 2) {
        this.abandon();
        return;
      }
      this.request("ping").catch(() => {});
    }, Math.max(1, seconds) * 1000);
  }

  dropped() {
    clearInterval(this.heartbeat);
    if (!this.loginRequest) return this.setStatus("closed");
    this.setStatus("reconnecting");
    // The first attempt goes back to the same address, unless that node is going away; later
    // attempts go round the others.
    if (this.attempt > 0 || this.serverRestarting) this.urlIndex = (this.urlIndex + 1) % this.urls.length;
    const delay = Math.min(8000, 1000 * 2 ** this.attempt) * (0.8 + Math.random() * 0.4);
    this.attempt += 1;
    this.reconnectTimer = setTimeout(() => this.reconnect(), delay);
  }

  async reconnect() {
    try {
      await this.open();
      // The login goes first; the requests that waited follow with their ids (the server answers
      // a repeated id from its memory instead of acting twice).
      await this.logIn();
      this.attempt = 0;
      for (const pending of this.pending.values()) {
        if (pending.type !== "login" && pending.type !== "ping") this.socket.send(pending.text);
      }
      const afterRestart = this.serverRestarting;
      this.serverRestarting = false;
      this.dispatchEvent(new CustomEvent("reconnected", { detail: { afterRestart } }));
    } catch (error) {
      if (error.code >= 2000 && error.code < 3000) {
        // The UserSig is no good any more: the session is over.
        this.close();
        this.dispatchEvent(new CustomEvent("frame", { detail: { event: "sessionEnded", data: { error } } }));
      } else if (this.socket) {
        this.abandon();
      }
    }
  }

  setStatus(status) {
    if (this.status === status) return;
    this.status = status;
    this.dispatchEvent(new CustomEvent("status", { detail: status }));
  }

  close() {
    this.loginRequest = null;
    clearInterval(this.heartbeat);
    clearTimeout(this.reconnectTimer);
    for (const pending of this.pending.values()) {
      clearTimeout(pending.timer);
      pending.reject(new SwitchboardError(9003, "not connected"));
    }
    this.pending.clear();
    const socket = this.socket;
    this.socket = null;
    socket?.close();
    this.setStatus("closed");
  }
}
