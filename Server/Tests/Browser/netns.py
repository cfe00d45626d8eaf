"""Chromium and the server in network namespaces, for the browser's side of links that fail.

The namespaces are the Swift tests' `TestNetwork`, made and changed by `switchboard-testnet` (one
mechanism for both): a router namespace and one per host, each behind its own veth pair. Nothing
routes between them and this process's namespace, so the test reaches what runs inside through
sockets it opens from a thread that entered the namespace (`setns`): a socket stays in the
namespace it was made in, whichever thread uses it later. chromedriver runs inside its page's
namespace (it starts Chromium there and talks to it on that namespace's loopback); selenium talks
to it through a forwarder on 127.0.0.1 that opens its connections inside.
"""

import ctypes
import json
import os
import queue
import socket
import subprocess
import threading
import time

from selenium.webdriver.chrome.service import Service

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


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
        self.connectors = {}

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

    def connector(self, host):
        if host not in self.connectors:
            self.connectors[host] = Connector(self.namespaces[host])
        return self.connectors[host]

    def close(self):
        """Removes every namespace: stop the processes inside first."""
        for connector in self.connectors.values():
            connector.close()
        try:
            self.process.stdin.close()
            self.process.wait(timeout=30)
        except (BrokenPipeError, subprocess.TimeoutExpired):
            self.process.kill()


class Connector:
    """Opens TCP connections inside a namespace: a thread of its own entered it and makes them."""

    def __init__(self, namespace):
        self.requests = queue.Queue()
        ready = queue.Queue()
        self.thread = threading.Thread(target=self._serve, args=(namespace, ready), daemon=True)
        self.thread.start()
        error = ready.get(timeout=10)
        if error:
            raise OSError(error)

    def _serve(self, namespace, ready):
        descriptor = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
        try:
            if _libc.setns(descriptor, CLONE_NEWNET) != 0:
                ready.put(f"setns {namespace}: {os.strerror(ctypes.get_errno())}")
                return
        finally:
            os.close(descriptor)
        ready.put(None)
        while (request := self.requests.get()) is not None:
            address, answer = request
            try:
                answer.put(socket.create_connection(address, timeout=5))
            except OSError as error:
                answer.put(error)

    def connect(self, host, port):
        answer = queue.Queue()
        self.requests.put(((host, port), answer))
        result = answer.get(timeout=15)
        if isinstance(result, OSError):
            raise result
        result.settimeout(None)
        return result

    def close(self):
        self.requests.put(None)


class Forwarder:
    """127.0.0.1:`port` here → `host`:`target` inside a namespace, a pair of pumps per connection."""

    def __init__(self, connector, host, target, port=0):
        self.connector = connector
        self.target = (host, target)
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port = self.listener.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = self.connector.connect(*self.target)
            except OSError:
                client.close()
                continue
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def close(self):
        self.closed = True
        self.listener.close()


def _pump(source, sink):
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        # Either direction ending ends the connection: the other pump's recv returns then.
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()


class NamespacedChromedriver(Service):
    """chromedriver inside a host's namespace, listening on the same port number there as selenium
    connects to here (the forwarder's)."""

    def __init__(self, chromedriver, net, host):
        super().__init__(executable_path="/usr/sbin/ip")
        self.chromedriver = chromedriver
        self.namespace = net.namespaces[host]
        self.forwarder = Forwarder(net.connector(host), "127.0.0.1", self.port, port=self.port)

    def command_line_args(self):
        return ["netns", "exec", self.namespace, self.chromedriver, f"--port={self.port}"]

    def stop(self):
        try:
            super().stop()
        finally:
            self.forwarder.close()


def wait_for_port(connector, host, port, timeout=30):
    """Until something listens on host:port inside the connector's namespace."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            connector.connect(host, port).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
