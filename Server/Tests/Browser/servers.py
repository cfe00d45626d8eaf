"""The servers the tests run against, each a process of its own on free loopback ports: coturn and
the Switchboard server (`Servers`, the run's `SERVER`), and Janus with a second Switchboard server
that sends group calls through it (`JanusServer`)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import urllib.request

import harness
from harness import free_port, wait_until

TURN_SECRET = "browser-test-turn-secret"


class ServerProcesses:
    """Processes in a directory of their own (logs, configuration, database), the Switchboard
    server among them on `self.port`: the page's address, the logs' tails, and a stop that ends
    them all and removes the directory."""

    def url(self, query=""):
        return f"http://127.0.0.1:{self.port}/?loopback=1{query}"

    def stop(self):
        for process in reversed(self.processes):
            process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
        for file in self.files:
            file.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def tails(self, names, lines):
        text = []
        for name in names:
            path = os.path.join(self.directory, name)
            if os.path.exists(path):
                with open(path) as f:
                    text.append(f"--- {name} (last lines)\n" + "".join(f.readlines()[-lines:]))
        return "\n".join(text)


class Servers(ServerProcesses):
    """coturn and the Switchboard server, each in its own process, on free loopback ports."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="switchboard-browser-")
        self.turn_port = free_port(socket.SOCK_DGRAM)
        self.port = free_port()
        # The one server besides its own that the page may use: this server again, through a
        # forwarder on another loopback address (another origin), started by the test that uses it.
        self.listed_host = "127.0.0.3"
        self.listed_port = free_port(host=self.listed_host)
        self.processes = []

    def start(self):
        turn_log = open(os.path.join(self.directory, "turn.log"), "w")
        self.files = [turn_log]
        self.processes.append(subprocess.Popen(
            ["turnserver", "-n", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
             f"--listening-port={self.turn_port}", "--min-port=49160", "--max-port=49400",
             "--use-auth-secret", f"--static-auth-secret={TURN_SECRET}", "--realm=switchboard.test",
             "--no-tls", "--no-dtls", "--no-cli", "--no-multicast-peers",
             # Test only: the peers are on loopback. Production denies private and loopback peers
             # (docs/OPERATIONS.md).
             "--allow-loopback-peers",
             f"--pidfile={self.directory}/turn.pid", f"--userdb={self.directory}/turndb",
             "--log-file=stdout", "--simple-log"],
            stdout=turn_log, stderr=subprocess.STDOUT))
        self.start_switchboard()

    def start_switchboard(self):
        server_log = open(os.path.join(self.directory, "server.log"), "a")
        self.files.append(server_log)
        self.processes.append(subprocess.Popen(
            [harness.ARGS.binary, "serve", "--port", str(self.port), "--database", f"{self.directory}/switchboard.sqlite",
             "--web-root", harness.ARGS.web, "--turn-url", f"turn:127.0.0.1:{self.turn_port}?transport=udp",
             "--turn-secret", TURN_SECRET, "--log-level", "warning",
             "--web-allowed-servers", f"ws://{self.listed_host}:{self.listed_port}",
             "--web-image-origins", f"http://localhost:{self.port}",
             # The push tests' subscriptions point at listeners on loopback (WebPushTests).
             "--web-push-allowed-hosts", "127.0.0.1"],
            stdout=server_log, stderr=subprocess.STDOUT))
        wait_until(self.healthy, timeout=30, what="the server to answer /health")

    def restart_switchboard(self):
        """A deploy: SIGTERM (a graceful shutdown), then a new process on the same port and database."""
        server = self.processes.pop()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        self.start_switchboard()

    def health(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as response:
            return json.load(response) if response.status == 200 else None

    def healthy(self):
        return self.health() is not None



    def logs(self):
        return self.tails(("server.log", "turn.log"), 30)


JANUS_SECRET = "browser-test-janus-secret"
ADMIN_SECRET = "browser-test-admin-secret"


class JanusServer(ServerProcesses):
    """Debian's janus with the configuration scripts/janus writes (VideoRoom and WebSockets only,
    ICE on loopback), and a second Switchboard server that sends group calls through it
    (`serve --sfu`) and records calls into `self.recordings` (`--recordings-dir`: Janus's rec_dir,
    converted with janus-pp-rec and ffmpeg; nothing is recorded while the app's policy is off)."""

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="switchboard-janus-")
        self.recordings = os.path.join(self.directory, "recordings")
        self.ws_port = free_port()
        self.port = free_port()
        self.processes = []
        self.files = []

    def start(self):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "janus")
        subprocess.run(["bash", script, "config", self.directory, str(self.ws_port), JANUS_SECRET, "41000-41999"],
                       check=True)
        janus_log = open(os.path.join(self.directory, "janus.log"), "w")
        self.files.append(janus_log)
        self.processes.append(subprocess.Popen(
            ["janus", "-F", self.directory, "-C", os.path.join(self.directory, "janus.jcfg")],
            stdout=janus_log, stderr=subprocess.STDOUT))

        def janus_up():
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", self.ws_port)) == 0
        wait_until(janus_up, timeout=30, what="janus to listen")
        server_log = open(os.path.join(self.directory, "server.log"), "w")
        self.files.append(server_log)
        self.processes.append(subprocess.Popen(
            [harness.ARGS.binary, "serve", "--port", str(self.port), "--database", f"{self.directory}/switchboard.sqlite",
             "--web-root", harness.ARGS.web, "--log-level", "info",
             "--sfu", f"ws://127.0.0.1:{self.ws_port}", "--sfu-secret", JANUS_SECRET,
             "--recordings-dir", self.recordings, "--admin-secret", ADMIN_SECRET],
            stdout=server_log, stderr=subprocess.STDOUT))

        def healthy():
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as response:
                return response.status == 200
        wait_until(healthy, timeout=30, what="the SFU server to answer /health")

    def admin(self, method, path, body=None):
        """A request to the SFU server's admin API (`/v1` + `path`); the answer's JSON."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/v1{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {ADMIN_SECRET}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)

    def credentials(self, user):
        """The development app's sdkAppID and a UserSig for `user` (`/v1/dev/usersig`)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/dev/usersig?userID={user}", timeout=10) as response:
            return json.load(response)

    def restart_janus(self):
        """kill -9 of Janus, then a new one with the same configuration on the same port."""
        janus = self.processes[0]
        janus.kill()
        janus.wait(timeout=15)
        self.processes[0] = subprocess.Popen(
            ["janus", "-F", self.directory, "-C", os.path.join(self.directory, "janus.jcfg")],
            stdout=self.files[0], stderr=subprocess.STDOUT)

    def rooms_placed(self):
        """How often the server placed a call's room on Janus (its log says each)."""
        with open(os.path.join(self.directory, "server.log")) as f:
            return f.read().count("a call's room is on an SFU")


    def logs(self):
        return self.tails(("server.log", "janus.log"), 40)
