"""Small servers of the tests' own on loopback: a listener that counts connections (a stranger's
server, or a push service), a forwarder to the Switchboard server (another origin), and a site on
another origin that frames the page."""

import http.server
import socket
import threading

import harness


class Listener:
    """A TCP listener that counts the connections it gets: a stranger's server."""

    def __init__(self, host, port=0, serve=None):
        self.socket = socket.create_server((host, port))
        self.port = self.socket.getsockname()[1]
        self.connections = 0
        self.serve = serve or (lambda connection: connection.close())
        self.open = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.connections += 1
            self.open.append(connection)
            threading.Thread(target=self.serve, args=(connection,), daemon=True).start()

    def close(self):
        self.socket.close()
        for connection in self.open:
            try:
                connection.close()
            except OSError:
                pass


def forward_to_switchboard(connection):
    """Carries one connection to the Switchboard server and back, byte for byte."""
    upstream = socket.create_connection(("127.0.0.1", harness.SERVER.port))

    def pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    back = threading.Thread(target=pump, args=(upstream, connection), daemon=True)
    back.start()
    pump(connection, upstream)
    back.join(timeout=5)
    upstream.close()


class FramingSite:
    """Another origin whose page shows the Switchboard page in a frame."""

    def __init__(self, host, target):
        page = f'<!doctype html><title>prize</title><iframe id="switchboard" src="{target}"></iframe>'.encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
