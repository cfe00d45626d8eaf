"""`switchboard call` as a member of a call: the Swift SDK with the GStreamer engine, driven through
its stdin and read through its JSON lines."""

import json
import os
import signal
import subprocess
import threading
import urllib.request

import harness
from harness import wait_until


class SwiftCall:
    """A `switchboard call` process: the Swift SDK with the GStreamer engine as one member of a
    call. Commands go to its stdin; its JSON lines (events, a status each second, the summary
    last) are collected as they come."""

    def __init__(self, user, *arguments, relay=False, port=None):
        self.user = user
        port = port or harness.SERVER.port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/dev/usersig?userID={user}") as response:
            credentials = json.load(response)
        self.lines = []
        self.log = open(os.path.join(harness.SERVER.directory, f"call-{user}.log"), "w")
        self.process = subprocess.Popen(
            [harness.ARGS.binary, "call", "--server", f"ws://127.0.0.1:{port}/v1/ws",
             "--app-id", str(credentials["sdkAppID"]), "--user-sig", credentials["userSig"], "--user", user,
             "--json", "--loopback", "--log-level", os.environ.get("SWITCHBOARD_CALL_LOG", "warning"),
             *(["--relay"] if relay else []), *arguments],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self):
        for line in self.process.stdout:
            try:
                self.lines.append(json.loads(line))
            except ValueError:
                self.lines.append({"event": "unreadable", "text": line})

    def send(self, command):
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def saw(self, text):
        """Waits for an event line whose summary contains `text`."""
        return wait_until(lambda: any(text in line.get("summary", "") for line in self.lines),
                          timeout=30, what=f"{self.user}'s switchboard call to report '{text}'")

    def member(self, peer):
        """The last status line's view of `peer` (quality, volume, audio level, frames), as numbers."""
        for line in reversed(self.lines):
            if line.get("event") == "status" and peer in line.get("members", {}):
                return {key: (int(value) if value.isdigit() else value) for key, value in line["members"][peer].items()}
        return None

    def value(self, peer, key):
        return (self.member(peer) or {}).get(key, 0)

    def finish(self, timeout=30):
        """Waits for the process to end; returns (exit status, the summary object)."""
        status = self.process.wait(timeout=timeout)
        self.reader.join(timeout=5)
        return status, (self.lines[-1] if self.lines else None)

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()

    def output(self):
        with open(self.log.name) as f:
            errors = f.read()[-int(os.environ.get("SWITCHBOARD_CALL_LOG_TAIL", "3000")):]
        events = [line for line in self.lines if line.get("event") != "status"][-30:]
        return f"--- switchboard call {self.user}: stderr\n{errors}\n--- events\n" + "\n".join(map(json.dumps, events))
