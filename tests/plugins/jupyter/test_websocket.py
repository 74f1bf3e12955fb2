# SPDX-License-Identifier: MIT
"""The WebSocket client's framing against a tiny scripted server on loopback (framing only: the protocol
above it is tested against the real bridge in test_bridge_client.py)."""

import base64
import hashlib
import os
import socket
import struct
import sys
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "plugins", "jupyter"))

from rankscope import websocket  # noqa: E402
from rankscope.websocket import WebSocket, WebSocketClosed, WebSocketError  # noqa: E402

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def server_frame(opcode, payload, fin=True, masked=False, rsv=0):
    header = bytearray([(0x80 if fin else 0) | rsv | opcode])
    length = len(payload)
    mask_bit = 0x80 if masked else 0
    if length < 126:
        header.append(mask_bit | length)
    elif length < 65536:
        header += bytes([mask_bit | 126]) + struct.pack("!H", length)
    else:
        header += bytes([mask_bit | 127]) + struct.pack("!Q", length)
    if masked:
        key = b"\x01\x02\x03\x04"
        payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        return bytes(header) + key + payload
    return bytes(header) + payload


class ScriptedServer:
    """Accepts one client per script: completes the handshake (or not), records the client's frames,
    and reacts to each text message with `script(server, text)`."""

    def __init__(self, script=None, accept=None, status=b"101 Switching Protocols"):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.script = script or (lambda server, text: server.send(server_frame(1, text.encode())))
        self.accept = accept
        self.status = status
        self.request_headers = {}
        self.frames = []  # (fin, opcode, masked, payload) as received from the client
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def url(self, path="/"):
        return f"ws://127.0.0.1:{self.port}{path}"

    def send(self, data):
        self.conn.sendall(data)

    def _serve(self):
        self.conn, _ = self.listener.accept()
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.conn.recv(4096)
        head, _, rest = data.partition(b"\r\n\r\n")
        request_line, *lines = head.decode().split("\r\n")
        self.request_line = request_line
        for line in lines:
            name, _, value = line.partition(":")
            self.request_headers[name.strip().lower()] = value.strip()
        key = self.request_headers.get("sec-websocket-key", "")
        accept = self.accept or base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        self.send(b"HTTP/1.1 " + self.status + b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  b"Sec-WebSocket-Accept: " + accept.encode() + b"\r\n\r\n")
        self.buffer = rest
        message = b""
        try:
            while True:
                fin, opcode, masked, payload = self._read_frame()
                self.frames.append((fin, opcode, masked, payload))
                if opcode == 8:
                    self.send(server_frame(8, payload))
                    return
                if opcode in (1, 0):
                    message += payload
                    if fin:
                        self.script(self, message.decode())
                        message = b""
        except (ConnectionError, OSError):
            pass
        finally:
            self.conn.close()
            self.listener.close()

    def _read(self, count):
        while len(self.buffer) < count:
            chunk = self.conn.recv(65536)
            if not chunk:
                raise ConnectionError("client went away")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _read_frame(self):
        first, second = self._read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._read(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self._read(8))[0]
        key = self._read(4) if second & 0x80 else b""
        payload = self._read(length)
        if key:
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        return bool(first & 0x80), first & 0x0F, bool(second & 0x80), payload


class WebSocketFramingTest(unittest.TestCase):
    def test_accept_key_matches_rfc_example(self):
        self.assertEqual(websocket.accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")

    def test_echo_of_every_length_class_with_masked_client_frames(self):
        server = ScriptedServer()
        ws = WebSocket.connect(server.url("/?token=x"), {"Authorization": "Bearer secret"})
        for size in (0, 1, 125, 126, 65535, 65536, 300000):
            text = ("é" * size)[:size] if size < 200 else "x" * size
            ws.send_text(text)
            self.assertEqual(ws.recv(), (websocket.OP_TEXT, text))
        ws.close()
        server.thread.join(5)
        self.assertEqual(server.request_line, "GET /?token=x HTTP/1.1")
        self.assertEqual(server.request_headers["authorization"], "Bearer secret")
        self.assertEqual(server.request_headers["sec-websocket-version"], "13")
        self.assertTrue(all(masked for _, _, masked, _ in server.frames), "every client frame is masked")
        self.assertEqual(server.frames[-1][1], 8)
        self.assertEqual(ws.close_code, 1000)

    def test_masks_are_random(self):
        first = websocket.encode_frame(1, b"same payload")
        second = websocket.encode_frame(1, b"same payload")
        self.assertNotEqual(first[2:6], second[2:6])
        self.assertEqual(websocket.apply_mask(first[2:6], first[6:]), b"same payload")

    def test_fragmented_message_with_a_ping_in_between_is_reassembled_and_the_ping_answered(self):
        def script(server, text):
            server.send(server_frame(1, b"frag", fin=False))
            server.send(server_frame(9, b"are you there"))
            server.send(server_frame(0, b"men", fin=False))
            server.send(server_frame(10, b"unsolicited pong"))
            server.send(server_frame(0, "ted ✓".encode(), fin=True))

        server = ScriptedServer(script)
        ws = WebSocket.connect(server.url())
        ws.send_text("go")
        self.assertEqual(ws.recv(), (websocket.OP_TEXT, "fragmented ✓"))
        ws.close()
        server.thread.join(5)
        pongs = [payload for _, opcode, _, payload in server.frames if opcode == 10]
        self.assertEqual(pongs, [b"are you there"])

    def test_client_fragmentation(self):
        server = ScriptedServer()
        ws = WebSocket.connect(server.url())
        ws.send_fragmented("abcdefghij", 3)
        self.assertEqual(ws.recv(), (websocket.OP_TEXT, "abcdefghij"))
        ws.close()
        server.thread.join(5)
        self.assertEqual([(fin, op) for fin, op, _, _ in server.frames[:4]],
                         [(False, 1), (False, 0), (False, 0), (True, 0)])

    def test_server_close_gives_code_and_reason_and_is_echoed(self):
        server = ScriptedServer(lambda s, text: s.send(server_frame(8, struct.pack("!H", 4401) + b"wrong token")))
        ws = WebSocket.connect(server.url())
        ws.send_text("hello")
        with self.assertRaises(WebSocketClosed) as caught:
            ws.recv()
        self.assertEqual((caught.exception.code, caught.exception.reason), (4401, "wrong token"))
        with self.assertRaises(WebSocketClosed):
            ws.send_text("after close")

    def test_message_over_the_limit_closes_with_1009(self):
        server = ScriptedServer(lambda s, text: s.send(server_frame(1, b"y" * 2000)))
        ws = WebSocket.connect(server.url(), max_message=1000)
        ws.send_text("x")
        with self.assertRaises(WebSocketClosed) as caught:
            ws.recv()
        self.assertEqual(caught.exception.code, 1009)
        server.thread.join(5)
        self.assertEqual(struct.unpack("!H", server.frames[-1][3][:2])[0], 1009)

    def test_fragments_adding_up_over_the_limit_close_with_1009(self):
        def script(server, text):
            for _ in range(3):
                server.send(server_frame(1 if _ == 0 else 0, b"z" * 400, fin=False))

        server = ScriptedServer(script)
        ws = WebSocket.connect(server.url(), max_message=1000)
        ws.send_text("x")
        with self.assertRaises(WebSocketClosed) as caught:
            ws.recv()
        self.assertEqual(caught.exception.code, 1009)

    def test_protocol_errors_close_with_1002_or_1007(self):
        cases = [
            (server_frame(1, b"masked", masked=True), 1002),
            (server_frame(1, b"rsv", rsv=0x40), 1002),
            (server_frame(0, b"orphan continuation"), 1002),
            (server_frame(9, b"p" * 126), 1002),
            (server_frame(9, b"fragmented ping", fin=False), 1002),
            (server_frame(3, b"reserved opcode"), 1002),
            (server_frame(1, b"\xff\xfe not utf-8"), 1007),
        ]
        for frame, code in cases:
            with self.subTest(code=code, frame=frame[:12]):
                server = ScriptedServer(lambda s, text, frame=frame: s.send(frame))
                ws = WebSocket.connect(server.url())
                ws.send_text("x")
                with self.assertRaises(WebSocketClosed) as caught:
                    ws.recv()
                self.assertEqual(caught.exception.code, code)

    def test_abrupt_end_is_1006(self):
        server = ScriptedServer(lambda s, text: s.conn.shutdown(socket.SHUT_RDWR))
        ws = WebSocket.connect(server.url())
        ws.send_text("x")
        with self.assertRaises(WebSocketClosed) as caught:
            ws.recv()
        self.assertEqual(caught.exception.code, 1006)

    def test_handshake_with_a_wrong_accept_or_status_is_refused(self):
        server = ScriptedServer(accept="bm90IHRoZSByaWdodCBrZXk=")
        with self.assertRaisesRegex(WebSocketError, "Sec-WebSocket-Accept"):
            WebSocket.connect(server.url())
        server = ScriptedServer(status=b"403 Forbidden")
        with self.assertRaisesRegex(WebSocketError, "403"):
            WebSocket.connect(server.url())

    def test_data_after_the_handshake_in_the_same_segment_is_kept(self):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def serve():
            conn, _ = listener.accept()
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            key = [l for l in data.decode().split("\r\n") if l.lower().startswith("sec-websocket-key")][0]
            accept = websocket.accept_key(key.split(":", 1)[1].strip())
            conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Accept: " + accept.encode() + b"\r\n\r\n" + server_frame(1, b"early"))
            conn.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        ws = WebSocket.connect(f"ws://127.0.0.1:{listener.getsockname()[1]}/")
        self.assertEqual(ws.recv(), (websocket.OP_TEXT, "early"))
        ws.abort()
        thread.join(5)
        listener.close()


if __name__ == "__main__":
    unittest.main()
