// The call records as a phone's recents list shows them: who, what happened, how long, when;
// missed calls marked; a row calls the same people back with the same media.

import { durationText } from "./layout.js";
import { recordResultText } from "./words.js";

const DAY = 24 * 3600 * 1000;

/** When, readably: the time today, "Yesterday 14:03", the weekday within a week, else the date. */
export function dateText(ms, now = Date.now(), locale = undefined) {
  const when = new Date(ms);
  const time = when.toLocaleTimeString(locale, { hour: "2-digit", minute: "2-digit" });
  const midnight = new Date(now);
  midnight.setHours(0, 0, 0, 0);
  if (ms >= midnight.getTime()) return time;
  if (ms >= midnight.getTime() - DAY) return `Yesterday ${time}`;
  if (ms >= midnight.getTime() - 6 * DAY) return `${when.toLocaleDateString(locale, { weekday: "long" })} ${time}`;
  const sameYear = when.getFullYear() === new Date(now).getFullYear();
  return when.toLocaleDateString(locale, { day: "numeric", month: "short", ...(sameYear ? {} : { year: "numeric" }) });
}

/** Whether the record is a call this user should notice they missed. */
export function isMissed(record) {
  return record.direction === "incoming" && (record.result === "missed" || record.result === "busy");
}

/**
 * What a row shows for a record: `peers` (the other members), `outcome` ("Missed", "Outgoing · 2:03"),
 * `when`, and what calling back means (`callBack`: the other members and the media type).
 */
export function recordRow(record, me, name, now = Date.now()) {
  const others = record.participantIds.filter((id) => id !== me);
  const result = recordResultText(record);
  const talked = record.result === "answered" && record.duration > 0;
  return {
    callId: record.callId,
    peers: others.map(name).join(", ") || "Yourself",
    missed: isMissed(record),
    outcome: talked ? `${result} · ${durationText(record.duration)}` : result,
    media: record.mediaType,
    when: dateText(record.endTime, now),
    whenISO: new Date(record.endTime).toISOString(),
    callBack: { participantIds: others, mediaType: record.mediaType },
  };
}
