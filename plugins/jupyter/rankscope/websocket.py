# SPDX-License-Identifier: MIT
"""A small RFC 6455 WebSocket client on the standard library: enough for the bridge (docs/bridge.md).

Client frames are masked with os.urandom keys; server frames must not be. Fragmented messages are
reassembled; pings are answered, a close is echoed. Messages are bounded (max_message) so that a broken
or hostile peer cannot make us buffer without end.
"""

import base64
import hashlib
import os
import socket
import struct
import threading
import urllib.parse

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

CLOSE_NORMAL = 1000
CLOSE_PROTOCOL_ERROR = 1002
CLOSE_NO_STATUS = 1005
CLOSE_ABNORMAL = 1006
CLOSE_INVALID_DATA = 1007
CLOSE_TOO_BIG = 1009

MAX_HANDSHAKE = 64 * 1024


class WebSocketError(Exception):
    """The handshake failed or the peer broke the protocol."""


class WebSocketClosed(Exception):
    """The connection is closed: code and reason from the peer's close frame (1006 when it just went away)."""

    def __init__(self, code, reason=""):
        super().__init__(f"WebSocket closed ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


def accept_key(key):
    """Sec-WebSocket-Accept for a Sec-WebSocket-Key (RFC 6455 section 4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode("ascii")).digest()).decode("ascii")


def encode_frame(opcode, payload, fin=True, mask=True):
    """One frame; clients always mask (section 5.3)."""
    header = bytearray([(0x80 if fin else 0) | opcode])
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        header.append(mask_bit | length)
    elif length < 65536:
        header.append(mask_bit | 126)
        header += struct.pack("!H", length)
    else:
        header.append(mask_bit | 127)
        header += struct.pack("!Q", length)
    if not mask:
        return bytes(header) + bytes(payload)
    key = os.urandom(4)
    return bytes(header) + key + apply_mask(key, payload)


def apply_mask(key, payload):
    """XOR with the 4-byte key, done on big integers rather than byte by byte."""
    if not payload:
        return b""
    repeated = (key * (len(payload) // 4 + 1))[: len(payload)]
    value = int.from_bytes(payload, "little") ^ int.from_bytes(repeated, "little")
    return value.to_bytes(len(payload), "little")


class WebSocket:
    """A connected client socket. recv() is for one reader thread; send_*() may be called from any thread."""

    def __init__(self, sock, leftover=b"", max_message=64 * 1024 * 1024):
        self._sock = sock
        self._buffer = bytearray(leftover)
        self._send_lock = threading.Lock()
        self._max_message = max_message
        self._close_sent = False
        self.close_code = None
        self.close_reason = ""

    @classmethod
    def connect(cls, url, headers=None, timeout=10.0, max_message=64 * 1024 * 1024):
        """Opens ws://HOST:PORT/PATH?QUERY; headers are extra handshake headers (e.g. Authorization)."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "ws":
            raise WebSocketError(f"unsupported URL scheme {parts.scheme!r} (only ws:// on loopback)")
        host = parts.hostname or "127.0.0.1"
        port = parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        sock = socket.create_connection((host, port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            leftover = cls._handshake(sock, host, port, target, headers or {})
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)
        return cls(sock, leftover, max_message)

    @staticmethod
    def _handshake(sock, host, port, target, headers):
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        lines = [
            f"GET {target} HTTP/1.1",
            f"Host: {host}:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
        ]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        response = bytearray()
        while b"\r\n\r\n" not in response:
            if len(response) > MAX_HANDSHAKE:
                raise WebSocketError("handshake response too large")
            chunk = sock.recv(4096)
            if not chunk:
                raise WebSocketError("connection closed during the handshake")
            response += chunk
        head, _, leftover = bytes(response).partition(b"\r\n\r\n")
        status, *header_lines = head.decode("latin-1").split("\r\n")
        fields = status.split(" ", 2)
        if len(fields) < 2 or fields[1] != "101":
            raise WebSocketError(f"handshake refused: {status.strip()}")
        received = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            received[name.strip().lower()] = value.strip()
        if received.get("upgrade", "").lower() != "websocket":
            raise WebSocketError("handshake response lacks Upgrade: websocket")
        if "upgrade" not in received.get("connection", "").lower():
            raise WebSocketError("handshake response lacks Connection: Upgrade")
        if received.get("sec-websocket-accept") != accept_key(key):
            raise WebSocketError("handshake response has a wrong Sec-WebSocket-Accept")
        return leftover

    # Sending

    def send_text(self, text):
        self._send(OP_TEXT, text.encode("utf-8"))

    def send_binary(self, data):
        self._send(OP_BINARY, bytes(data))

    def ping(self, payload=b""):
        self._send(OP_PING, payload)

    def _send(self, opcode, payload, fin=True):
        frame = encode_frame(opcode, payload, fin=fin)
        with self._send_lock:
            if self._close_sent:
                raise WebSocketClosed(self.close_code or CLOSE_NORMAL, self.close_reason)
            self._sock.sendall(frame)

    def send_fragmented(self, text, fragment_size):
        """A text message in several frames (the bridge must reassemble them; used by tests)."""
        data = text.encode("utf-8")
        pieces = [data[i : i + fragment_size] for i in range(0, len(data), fragment_size)] or [b""]
        with self._send_lock:
            for index, piece in enumerate(pieces):
                opcode = OP_TEXT if index == 0 else OP_CONTINUATION
                self._sock.sendall(encode_frame(opcode, piece, fin=index == len(pieces) - 1))

    def close(self, code=CLOSE_NORMAL, reason="", wait=1.0):
        """Sends a close frame (once), waits briefly for the peer's, then closes the socket. Only for a
        socket without a reader thread: one that has one calls send_close(), lets the reader see the
        peer's close, then abort()."""
        self.send_close(code, reason)
        if wait and self.close_code is None:
            try:
                self._sock.settimeout(wait)
                while self.close_code is None:
                    self.recv()
            except (WebSocketClosed, WebSocketError, OSError):
                pass
        self.abort()

    def send_close(self, code=CLOSE_NORMAL, reason=""):
        """Starts the closing handshake; later sends raise WebSocketClosed."""
        with self._send_lock:
            if self._close_sent:
                return
            self._close_sent = True
            payload = b"" if code == CLOSE_NO_STATUS else struct.pack("!H", code) + reason.encode("utf-8")[:123]
            try:
                self._sock.sendall(encode_frame(OP_CLOSE, payload))
            except OSError:
                pass

    def abort(self):
        """Closes the socket now; a blocked recv() ends with WebSocketClosed."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    # Receiving

    def recv(self):
        """The next data message: (OP_TEXT, str) or (OP_BINARY, bytes). Raises WebSocketClosed at the end."""
        message_opcode = None
        parts = []
        size = 0
        while True:
            fin, opcode, payload = self._read_frame()
            if opcode >= 0x8:
                self._control(opcode, payload)
                continue
            if opcode == OP_CONTINUATION:
                if message_opcode is None:
                    self._fail(CLOSE_PROTOCOL_ERROR, "continuation frame without a message")
            elif opcode in (OP_TEXT, OP_BINARY):
                if message_opcode is not None:
                    self._fail(CLOSE_PROTOCOL_ERROR, "new message inside a fragmented one")
                message_opcode = opcode
            else:
                self._fail(CLOSE_PROTOCOL_ERROR, f"reserved opcode {opcode:#x}")
            size += len(payload)
            if size > self._max_message:
                self._fail(CLOSE_TOO_BIG, f"message over {self._max_message} bytes")
            parts.append(payload)
            if fin:
                data = b"".join(parts)
                if message_opcode == OP_BINARY:
                    return OP_BINARY, data
                try:
                    return OP_TEXT, data.decode("utf-8")
                except UnicodeDecodeError:
                    self._fail(CLOSE_INVALID_DATA, "text message is not UTF-8")

    def _control(self, opcode, payload):
        if opcode == OP_PING:
            try:
                self._send(OP_PONG, payload)
            except (OSError, WebSocketClosed):
                pass
        elif opcode == OP_CLOSE:
            code, reason = CLOSE_NO_STATUS, ""
            if len(payload) >= 2:
                code = struct.unpack("!H", payload[:2])[0]
                reason = payload[2:].decode("utf-8", "replace")
            elif len(payload) == 1:
                code = CLOSE_PROTOCOL_ERROR
            self.close_code, self.close_reason = code, reason
            self.send_close(code if len(payload) >= 2 else CLOSE_NO_STATUS)
            self.abort()
            raise WebSocketClosed(code, reason)
        elif opcode != OP_PONG:
            self._fail(CLOSE_PROTOCOL_ERROR, f"reserved control opcode {opcode:#x}")

    def _read_frame(self):
        first, second = self._read_exact(2)
        fin = bool(first & 0x80)
        if first & 0x70:
            self._fail(CLOSE_PROTOCOL_ERROR, "reserved bits set without an extension")
        opcode = first & 0x0F
        if second & 0x80:
            self._fail(CLOSE_PROTOCOL_ERROR, "server frames must not be masked")
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", self._read_exact(2))[0]
        elif length == 127:
            length = struct.unpack("!Q", self._read_exact(8))[0]
        if opcode >= 0x8 and (length > 125 or not fin):
            self._fail(CLOSE_PROTOCOL_ERROR, "control frames are at most 125 bytes and never fragmented")
        if length > self._max_message:
            self._fail(CLOSE_TOO_BIG, f"frame over {self._max_message} bytes")
        return fin, opcode, self._read_exact(length)

    def _read_exact(self, count):
        while len(self._buffer) < count:
            try:
                chunk = self._sock.recv(max(65536, count - len(self._buffer)))
            except OSError as error:
                if self.close_code is None:
                    self.close_code = CLOSE_ABNORMAL
                raise WebSocketClosed(self.close_code, str(error)) from error
            if not chunk:
                if self.close_code is None:
                    self.close_code = CLOSE_ABNORMAL
                raise WebSocketClosed(self.close_code, self.close_reason or "connection lost")
            self._buffer += chunk
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def _fail(self, code, reason):
        """The peer broke the protocol: close with the code and raise."""
        self.close_code, self.close_reason = code, reason
        self.send_close(code, reason)
        self.abort()
        raise WebSocketClosed(code, reason)
