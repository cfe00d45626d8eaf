// The Switchboard wire protocol (docs/PROTOCOL.md) for the browser: frame shapes, and a schema
// for every message so that the browser and the Swift code are held to the same golden files
// (Tests/SwitchboardProtocolTests/Golden, checked in Chromium by Tests/Browser).

export const PROTOCOL_VERSION = 1;

const ENUMS = {
  MediaType: ["audio", "video"],
  CallType: ["oneToOne", "group"],
  Status: ["none", "waiting", "accept"],
  EndReason: [
    "unknown", "hangup", "reject", "noResponse", "offline", "lineBusy", "canceled",
    "otherDeviceAccepted", "otherDeviceReject", "endByServer",
  ],
  RecordResult: ["answered", "missed", "noAnswer", "rejected", "canceled", "busy", "offline", "unknown"],
  Direction: ["outgoing", "incoming"],
  Order: ["descending", "ascending"],
  Quality: ["unknown", "excellent", "good", "poor", "bad", "veryBad", "down"],
  Volume: ["mute", "low", "medium", "high", "peak"],
  ChangeResult: ["agreed", "declined", "canceled", "timedOut"],
  PushEnvironment: ["sandbox", "production"],
  PushTokenKind: ["voip", "alert", "web", "fcm"],
  SignalKind: ["offer", "answer", "candidate", "restart"],
  MediaRoute: ["sfu"],
  SFUConnection: ["publish", "subscribe"],
  VideoLayer: ["small", "big"],
  MoveOfferEndReason: ["expired", "withdrawn"],
  TrackSource: ["microphone", "camera", "screen"],
};

// Field specs: "string", "int", "number", "bool", an enum or struct name, "[spec]" for arrays;
// a trailing "?" makes the field optional.
const STRUCTS = {
  Empty: {},
  Error: { code: "int", message: "string", retryAfter: "int?" },
  Profile: { userId: "string", nickname: "string?", avatarURL: "string?" },
  CallParams: {
    roomId: "string?", timeout: "int?", userData: "string?", chatGroupId: "string?", isEphemeralCall: "bool?",
    pushConfig: "PushConfig?", record: "bool?",
  },
  PushConfig: { title: "string?", body: "string?", sound: "string?", extra: "string?", missedCallAlert: "bool?" },
  Participant: {
    userId: "string", status: "Status", inviterId: "string?", microphoneOn: "bool", cameraOn: "bool",
    endReason: "EndReason?", nickname: "string?", avatarURL: "string?", networkQuality: "Quality?",
    volumeLevel: "Volume?", screenSharing: "bool?",
  },
  CallInfo: {
    callId: "string", roomId: "string", callType: "CallType", mediaType: "MediaType", callerId: "string",
    chatGroupId: "string?", userData: "string?", isEphemeral: "bool", timeout: "int", createdAt: "int",
    startTime: "int?", participants: "[Participant]", media: "MediaRoute?", recording: "Recording?",
  },
  Recording: { startedBy: "string?", startedAt: "int" },
  Record: {
    callId: "string", roomId: "string", callType: "CallType", mediaType: "MediaType", callerId: "string",
    inviterId: "string", participantIds: "[string]", chatGroupId: "string?", direction: "Direction",
    result: "RecordResult", startTime: "int?", endTime: "int", duration: "int", endReason: "EndReason",
    syncTime: "int",
  },
  IceCandidate: { candidate: "string", sdpMid: "string?", sdpMLineIndex: "int?", usernameFragment: "string?" },
  IceServer: { urls: "[string]", username: "string?", credential: "string?" },
  WebPushKeys: { p256dh: "string", auth: "string" },
  SFUTrack: { mid: "string", userId: "string", source: "TrackSource" },
};

const CALL = { callId: "string" };

/** Each request type: its data and its result. */
export const REQUESTS = {
  login: [
    {
      sdkAppID: "int", userID: "string", userSig: "string", protocolVersion: "int", deviceId: "string?",
      platform: "string?",
    },
    {
      userID: "string", deviceId: "string", protocolVersion: "int", serverTime: "int", heartbeatInterval: "int",
      profile: "Profile",
    },
  ],
  logout: [{}, {}],
  ping: [{}, { serverTime: "int" }],
  "profile.set": [{ nickname: "string?", avatarURL: "string?" }, STRUCTS.Profile],
  "call.start": [
    { participantIds: "[string]", mediaType: "MediaType", params: "CallParams?" },
    { callId: "string", roomId: "string", busyUserIds: "[string]", call: "CallInfo" },
  ],
  "call.accept": [CALL, { call: "CallInfo" }],
  "call.reject": [CALL, {}],
  "call.hangup": [CALL, {}],
  "call.join": [CALL, { call: "CallInfo" }],
  "call.invite": [{ callId: "string", participantIds: "[string]" }, { busyUserIds: "[string]", call: "CallInfo" }],
  "call.deviceState": [{ callId: "string", microphoneOn: "bool?", cameraOn: "bool?", screenSharing: "bool?" }, {}],
  "call.changeMediaType": [{ callId: "string", mediaType: "MediaType" }, { transactionId: "string" }],
  "call.replyMediaType": [{ callId: "string", transactionId: "string", agree: "bool" }, {}],
  "call.cancelMediaType": [{ callId: "string", transactionId: "string" }, {}],
  "call.statusReport": [
    { callId: "string", packetLoss: "number", rtt: "int", bitrate: "int", audioLevel: "int" }, {},
  ],
  "call.media": [
    { callId: "string", to: "string", kind: "SignalKind", sdp: "string?", candidate: "IceCandidate?" }, {},
  ],
  "call.sfu": [
    {
      callId: "string", session: "int", connection: "SFUConnection", kind: "SignalKind", sdp: "string?",
      candidate: "IceCandidate?",
    }, {},
  ],
  "call.videoLayer": [{ callId: "string", userId: "string", layer: "VideoLayer" }, {}],
  "call.offerMove": [{ callId: "string", deviceId: "string?" }, { expiresAt: "int" }],
  "call.take": [CALL, { call: "CallInfo" }],
  "call.startRecording": [CALL, { call: "CallInfo" }],
  "call.stopRecording": [CALL, { call: "CallInfo" }],
  "media.iceServers": [{}, { iceServers: "[IceServer]", expiresAt: "int?" }],
  "records.query": [
    { syncTime: "int", count: "int", order: "Order" },
    { records: "[Record]", hasMore: "bool", syncTime: "int" },
  ],
  "records.delete": [{ callIds: "[string]" }, { deleted: "int" }],
  "records.deleteAll": [{}, { deleted: "int" }],
  "user.block": [{ userIds: "[string]" }, { userIds: "[string]" }],
  "user.unblock": [{ userIds: "[string]" }, { userIds: "[string]" }],
  "user.blocked": [{}, { userIds: "[string]" }],
  "push.register": [
    {
      token: "string", environment: "PushEnvironment?", bundleId: "string?", move: "bool?", kind: "PushTokenKind?",
      webPush: "WebPushKeys?", sealingKey: "string?", alertRinging: "bool?",
    }, {},
  ],
  "push.unregister": [{ kind: "PushTokenKind?" }, {}],
};

/** Each event: its data. */
export const EVENTS = {
  callReceived: { call: "CallInfo", inviterId: "string" },
  callStarted: { call: "CallInfo" },
  callUpdated: { call: "CallInfo" },
  callEnded: { callId: "string", mediaType: "MediaType", reason: "EndReason", userId: "string?" },
  callRecord: { record: "Record" },
  deviceChanged: { callId: "string", userId: "string", microphoneOn: "bool", cameraOn: "bool", screenSharing: "bool" },
  mediaTypeChangeRequested: { callId: "string", transactionId: "string", mediaType: "MediaType", userId: "string" },
  mediaTypeChangeResult: {
    callId: "string", transactionId: "string", mediaType: "MediaType", userId: "string", result: "ChangeResult",
  },
  memberStatus: { callId: "string", userId: "string", networkQuality: "Quality", volumeLevel: "Volume" },
  memberStats: {
    callId: "string", userId: "string", packetLoss: "number", rtt: "int", bitrate: "int", audioLevel: "int",
  },
  callElsewhere: { call: "CallInfo", deviceId: "string", active: "bool" },
  callsSynced: { callIds: "[string]", elsewhereCallIds: "[string]" },
  sessionEnded: { error: "Error" },
  mediaSignal: { callId: "string", from: "string", kind: "SignalKind", sdp: "string?", candidate: "IceCandidate?" },
  sfuSession: { callId: "string", session: "int" },
  callMoveOffered: { call: "CallInfo", fromDeviceId: "string", toDeviceId: "string?", expiresAt: "int" },
  callMoveOfferEnded: { callId: "string", reason: "MoveOfferEndReason" },
  callMoved: { call: "CallInfo", fromDeviceId: "string", toDeviceId: "string" },
  memberMoved: { callId: "string", userId: "string" },
  recordingStarted: { callId: "string", recording: "Recording" },
  recordingStopped: { callId: "string", stoppedBy: "string", stoppedAt: "int" },
  sfuSignal: {
    callId: "string", session: "int", connection: "SFUConnection", kind: "SignalKind", sdp: "string?",
    candidate: "IceCandidate?", tracks: "[SFUTrack]?",
  },
};

/** The problems of `value` against a spec, as "path: problem" strings. */
export function check(value, spec, path = "$") {
  if (typeof spec === "object") return checkObject(value, spec, path);
  const optional = spec.endsWith("?");
  const type = optional ? spec.slice(0, -1) : spec;
  if (value === undefined) return optional ? [] : [`${path}: missing`];
  if (value === null) return [`${path}: null`];
  if (type.startsWith("[")) {
    if (!Array.isArray(value)) return [`${path}: not an array`];
    return value.flatMap((item, index) => check(item, type.slice(1, -1), `${path}[${index}]`));
  }
  switch (type) {
    case "string": return typeof value === "string" ? [] : [`${path}: not a string`];
    case "bool": return typeof value === "boolean" ? [] : [`${path}: not a boolean`];
    case "number": return typeof value === "number" ? [] : [`${path}: not a number`];
    case "int": return Number.isInteger(value) ? [] : [`${path}: not an integer`];
  }
  if (ENUMS[type]) return ENUMS[type].includes(value) ? [] : [`${path}: ${JSON.stringify(value)} is not a ${type}`];
  if (STRUCTS[type]) return checkObject(value, STRUCTS[type], path);
  return [`${path}: unknown type ${type}`];
}

function checkObject(value, fields, path) {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return [`${path}: not an object`];
  const problems = Object.entries(fields).flatMap(([name, spec]) => check(value[name], spec, `${path}.${name}`));
  for (const name of Object.keys(value)) {
    if (!(name in fields)) problems.push(`${path}.${name}: unexpected field`);
  }
  return problems;
}

/** A request frame. */
export function request(id, type, data = {}) {
  return { id, type, data };
}

/**
 * Reads one frame: `{kind: "response", id, result?, error?}` or `{kind: "event", event, data}`.
 * `typeOf(id)` gives the request type of a response's id, to check its result; `problems` lists
 * what does not match the schema (the client logs them and goes on, as newer servers may add).
 */
export function parseFrame(text, typeOf = () => undefined) {
  let frame;
  try {
    frame = JSON.parse(text);
  } catch {
    return { kind: "invalid", problems: ["not JSON"] };
  }
  if (typeof frame !== "object" || frame === null) return { kind: "invalid", problems: ["not an object"] };
  if ("event" in frame) {
    const spec = EVENTS[frame.event];
    const problems = spec ? check(frame.data, spec, "$.data") : [`unknown event ${frame.event}`];
    return { kind: "event", event: frame.event, data: frame.data, problems };
  }
  if ("type" in frame) {
    const spec = REQUESTS[frame.type];
    const problems = spec ? check(frame.data, spec[0], "$.data") : [`unknown request ${frame.type}`];
    if (typeof frame.id !== "string") problems.push("$.id: not a string");
    return { kind: "request", id: frame.id, type: frame.type, data: frame.data, problems };
  }
  const problems = frame.id === null || typeof frame.id === "string" ? [] : ["$.id: not a string or null"];
  if ("error" in frame) {
    problems.push(...check(frame.error, "Error", "$.error"));
    return { kind: "response", id: frame.id, error: frame.error, problems };
  }
  const type = typeOf(frame.id);
  if (type && REQUESTS[type]) problems.push(...check(frame.result, REQUESTS[type][1], "$.result"));
  return { kind: "response", id: frame.id, result: frame.result, problems };
}

/** Writes a parsed frame back as the object that goes on the wire. */
export function frameObject(parsed) {
  switch (parsed.kind) {
    case "event": return { event: parsed.event, data: parsed.data };
    case "request": return { id: parsed.id, type: parsed.type, data: parsed.data };
    case "response": return parsed.error ? { id: parsed.id, error: parsed.error } : { id: parsed.id, result: parsed.result };
  }
  return null;
}

/** Error codes the client acts on (docs/PROTOCOL.md lists them all). */
export const ERRORS = {
  notLoggedIn: 1005,
  rateLimited: 1008,
  sessionReplaced: 1011,
  callNotFound: 3001,
  developmentOnly: 5006,
  mediaPayloadTooLarge: 7001,
  peerNotInCall: 7002,
};
