"""A member the tests speak the signaling protocol for themselves (docs/PROTOCOL.md), over one
WebSocket: for what neither the page nor `switchboard call` asks from its interface (a call placed
with `record`). It sends no media."""

import itertools
import json

import websocket  # websocket-client, which selenium installs


class SignalingClient:
    """One device of `user`, logged in to the server on `port` with the development app's UserSig."""

    def __init__(self, port, credentials, user):
        self.socket = websocket.create_connection(f"ws://127.0.0.1:{port}/v1/ws", timeout=10)
        self.ids = itertools.count(1)
        self.events = []
        self.request("login", {"sdkAppID": credentials["sdkAppID"], "userID": user, "userSig": credentials["userSig"],
                               "protocolVersion": 1, "platform": "test"})

    def request(self, kind, data):
        """Sends a request and returns its result (events read meanwhile are kept in `events`);
        an error answer raises with its code."""
        request_id = str(next(self.ids))
        self.socket.send(json.dumps({"id": request_id, "type": kind, "data": data}))
        while True:
            message = json.loads(self.socket.recv())
            if "event" in message:
                self.events.append(message)
            elif message.get("id") == request_id:
                if "error" in message:
                    raise AssertionError(f"{kind} refused: {message['error']}")
                return message["result"]

    def close(self):
        self.socket.close()
