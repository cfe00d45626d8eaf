// Which members' media stopped arriving, from the bytes received from each, read once a second:
// a member from whom media came, who is expected to send (microphone or camera on, or sharing a
// screen), and from whom nothing arrived for STALL_MS shows as `down` until media comes again.
//
// A member whose network is gone sends no status reports, so their last one (often "excellent")
// stood until the server's heartbeat took them for dropped, 13 s into a blackout (issue 48). The
// counters tell within a second or two. This page sends nothing for a muted microphone, so a
// member with microphone and camera off is not expected to send and never counts as stalled.
// The rules are the Swift SDK's (`MediaStallWatch`).

/** How long without media from a member who sends makes them stalled (ms). */
export const STALL_MS = 2_000;

export class StallWatch {
  constructor() {
    /** userId → {received, lastArrival (ms or null), expected, stalled} */
    this.members = new Map();
  }

  /**
   * A reading at `now` (ms): `received` maps each member to everything received from them so
   * far; `expected` is a Set of the members who send. Returns the changes, each
   * `[userId, "stalled" | "flowing"]`.
   */
  sample(now, received, expected) {
    const changes = [];
    for (const user of Object.keys(received).sort()) {
      const count = received[user];
      const sends = expected.has(user);
      const member = this.members.get(user);
      if (!member) {
        this.members.set(user, { received: count, lastArrival: count > 0 ? now : null, expected: sends, stalled: false });
        continue;
      }
      if (count !== member.received && count > 0) {
        member.lastArrival = now;
      } else if (sends && !member.expected && member.lastArrival !== null) {
        // They just turned their microphone or camera on: media is due from now on.
        member.lastArrival = now;
      }
      member.received = count;
      member.expected = sends;
      const quiet = sends && member.lastArrival !== null && now - member.lastArrival >= STALL_MS;
      if (quiet !== member.stalled) {
        member.stalled = quiet;
        changes.push([user, quiet ? "stalled" : "flowing"]);
      }
    }
    for (const [user, member] of [...this.members]) {
      if (user in received) continue;
      this.members.delete(user);
      if (member.stalled) changes.push([user, "flowing"]);
    }
    return changes;
  }
}
