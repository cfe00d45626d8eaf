"""Chromium and the server in network namespaces, for the browser's side of links that fail.

The namespaces are the Swift tests' `TestNetwork`, made and changed by `switchboard-testnet` (one
mechanism for both): a router namespace and one per host, each behind its own veth pair. Nothing
routes between them and this process's namespace, so the test reaches what runs inside through
the network's proxies (a loopback port here whose connections are made inside a host's
namespace). chromedriver runs inside its page's namespace (it starts Chromium there and talks to
it on that namespace's loopback); selenium talks to it through such a proxy.
"""

import json
import subprocess

from selenium.webdriver.chrome.service import Service


class TestNet:
    """The namespaces of `hosts` (names), removed when `close()` ends switchboard-testnet's input."""

    def __init__(self, binary, hosts):
        self.process = subprocess.Popen([binary, *hosts], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        first = self.process.stdout.readline()
        if not first.startswith("{"):
            self.process.wait(timeout=10)
            raise RuntimeError(f"switchboard-testnet: {first.strip() or 'no answer'}")
        description = json.loads(first)
        self.namespaces = {name: host["namespace"] for name, host in description["hosts"].items()}
        self.addresses = {name: host["address"] for name, host in description["hosts"].items()}

    def command(self, line):
        """Runs one switchboard-testnet command; returns what it answered after "ok"."""
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if not answer.startswith("ok"):
            raise RuntimeError(f"switchboard-testnet {line}: {answer or 'no answer'}")
        return answer[2:].strip()

    def cut(self, host):
        self.command(f"cut {host}")

    def restore(self, host):
        self.command(f"restore {host}")

    def move(self, host):
        self.addresses[host] = self.command(f"move {host}")
        return self.addresses[host]

    def limit(self, host, kilobits):
        """Squeezes the host's link both ways to `kilobits` per second (`tc tbf`); None lifts it."""
        self.command(f"limit {host} {kilobits if kilobits else 'off'}")

    def isolate(self, first, second):
        self.command(f"isolate {first} {second}")

    def run(self, host, arguments, **popen):
        """Starts a program inside the host's namespace."""
        return subprocess.Popen(["/usr/sbin/ip", "netns", "exec", self.namespaces[host], *arguments], **popen)

    def proxy(self, host, address, port):
        """A port on 127.0.0.1 here whose connections go to address:port from inside the host's
        namespace; returns it."""
        return int(self.command(f"proxy {host} {address} {port}"))

    def close(self):
        """Removes every namespace: stop the processes inside first."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.process.kill()


class NamespacedChromedriver(Service):
    """chromedriver inside a host's namespace, on a port of that namespace's loopback that
    selenium reaches through a proxy here."""

    PORT_INSIDE = 9515

    def __init__(self, chromedriver, net, host):
        super().__init__(executable_path="/usr/sbin/ip")
        self.chromedriver = chromedriver
        self.namespace = net.namespaces[host]
        self.port = net.proxy(host, "127.0.0.1", self.PORT_INSIDE)

    def command_line_args(self):
        return ["netns", "exec", self.namespace, self.chromedriver, f"--port={self.PORT_INSIDE}"]
