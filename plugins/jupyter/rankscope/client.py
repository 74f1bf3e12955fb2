# SPDX-License-Identifier: MIT
"""JSON-RPC 2.0 over the bridge's WebSocket (docs/bridge.md).

One reader thread per client takes every message off the socket: responses go to the waiting request,
notifications to the callbacks registered with on(). Callbacks run on that thread, so they must be quick
and must not call request() (it would wait for a response only that thread could read).
"""

import itertools
import json
import logging
import threading

from . import connection
from .websocket import OP_TEXT, WebSocket, WebSocketClosed, WebSocketError

log = logging.getLogger("rankscope")

# docs/bridge.md error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
NO_SUCH_RUN = -32001
RUN_NOT_ACTIVE = -32002
LAUNCH_FAILED = -32003
NO_SUCH_RANK = -32004
CLOSE_UNAUTHORIZED = 4401

DEFAULT_TIMEOUT = 60.0
MAX_REQUEST = 4 * 1024 * 1024  # the bridge answers larger messages with -32600 and id null: refused here


class BridgeError(Exception):
    """A JSON-RPC error from the bridge: code, message and data as sent."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{message} ({code})" if code is not None else message)
        self.code = code
        self.message = message
        self.data = data

    def issues(self):
        """For an invalid job (-32602): every issue as "path: message"."""
        items = (self.data or {}).get("issues", []) if isinstance(self.data, dict) else []
        return [f"{item.get('path', '')}: {item.get('message', '')}" for item in items]


class BridgeClosed(BridgeError):
    """The connection is gone; code is the WebSocket close code (4401: refused token)."""


class BridgeClient:
    """A connection to one bridge. Use connect() to find (or start) one, or construct with url and token."""

    def __init__(self, url, token, timeout=10.0, started=None):
        self.url = url  # the token is used for the handshake only, and kept nowhere
        self.started_bridge = started  # a connection.StartedBridge when this client started the bridge
        self._ids = itertools.count(1)
        self._pending = {}
        self._lock = threading.Lock()
        self._callbacks = {}
        self._close_callbacks = []
        self._closed = None  # BridgeClosed once the connection is gone
        try:
            self._ws = WebSocket.connect(url, {"Authorization": f"Bearer {token}"}, timeout=timeout)
        except (OSError, WebSocketError) as error:
            raise BridgeClosed(None, f"cannot connect to the bridge at {url}: {error}") from error
        self._reader = threading.Thread(target=self._read_loop, name="rankscope-bridge-reader", daemon=True)
        self._reader.start()

    @classmethod
    def connect(cls, directory=None, start=True, cli=None, timeout=10.0):
        """The newest live bridge in the runtime directory; else, with start, a bridge started for us."""
        info = connection.find_bridge(directory)
        started = None
        if info is None:
            if not start:
                raise connection.BridgeNotFound(f"no live bridge in {directory or connection.runtime_dir()}")
            started = connection.start_bridge(cli, directory=directory)
            info = started.info
        try:
            return cls(info.url, info.token, timeout=timeout, started=started)
        except BaseException:
            if started:
                started.stop()
            raise

    def __repr__(self):
        state = "closed" if self._closed else "open"
        return f"<BridgeClient {self.url} {state}>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def closed(self):
        return self._closed is not None

    @property
    def close_error(self):
        """The BridgeClosed that ended the connection, or None while it is open."""
        return self._closed

    # Requests

    def request(self, method, params=None, timeout=DEFAULT_TIMEOUT):
        """Sends a request and returns its result; raises BridgeError, BridgeClosed, or TimeoutError."""
        if threading.current_thread() is self._reader:
            raise RuntimeError("request() from a notification callback would wait for itself")
        request_id = next(self._ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}
        text = json.dumps(message, separators=(",", ":"))
        size = len(text.encode("utf-8"))
        if size > MAX_REQUEST:
            raise BridgeError(INVALID_REQUEST, f"{method}: request of {size} bytes is over the bridge's limit",
                              {"limit": MAX_REQUEST})
        slot = {"event": threading.Event()}
        with self._lock:
            if self._closed:
                raise self._closed
            self._pending[request_id] = slot
        try:
            try:
                self._ws.send_text(text)
            except (OSError, WebSocketClosed) as error:
                raise self._closed or BridgeClosed(None, f"connection to the bridge lost: {error}") from error
            answered = slot["event"].wait(timeout)
        finally:
            with self._lock:
                self._pending.pop(request_id, None)
        if not answered:
            raise TimeoutError(f"{method}: no answer from the bridge within {timeout:g} s")
        if "error" in slot:
            raise slot["error"]
        return slot["result"]

    def hello(self):
        return self.request("bridge.hello")

    def runs(self):
        return self.request("runs.list")["runs"]

    def get(self, run):
        return self.request("run.get", {"run": run})

    def launch(self, job, mode=None, timeout=900.0, **extra):
        """job: a job object, or the path of a job file (absolute: the bridge has its own working directory).
        Launching can deploy and build on nodes, hence the long timeout."""
        params = {"job": job, **extra}
        if mode:
            params["mode"] = mode
        return self.request("run.launch", params, timeout=timeout)["run"]

    def attach(self, run, timeout=300.0):
        return self.request("run.attach", {"run": run}, timeout=timeout)

    def stop(self, run, timeout=120.0):
        return self.request("run.stop", {"run": run}, timeout=timeout)

    def logs(self, run, rank, start=1, count=1000, stream=None):
        params = {"run": run, "rank": rank, "from": start, "count": count}
        if stream:
            params["stream"] = stream
        return self.request("run.logs", params)

    def subscribe(self, run):
        return self.request("run.subscribe", {"run": run})

    def unsubscribe(self, run):
        return self.request("run.unsubscribe", {"run": run})

    # Notifications

    def on(self, method, callback):
        """Calls callback(params) for each notification `method` ("*": every one, as callback(method, params))."""
        with self._lock:
            self._callbacks.setdefault(method, []).append(callback)

    def off(self, method, callback):
        with self._lock:
            callbacks = self._callbacks.get(method, [])
            if callback in callbacks:
                callbacks.remove(callback)

    def on_close(self, callback):
        """Calls callback(BridgeClosed) once when the connection ends."""
        with self._lock:
            if not self._closed:
                self._close_callbacks.append(callback)
                return
        callback(self._closed)

    # Lifetime

    def close(self, stop_bridge=False, timeout=2.0):
        """Closes the connection (and, with stop_bridge, the bridge this client started)."""
        try:
            self._ws.send_close()
        except OSError:
            pass
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout)  # the peer's close frame ends the reader
        self._ws.abort()
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout)
        if stop_bridge and self.started_bridge:
            self.started_bridge.stop()

    def wait_closed(self, timeout=None):
        """Waits for the connection to end (e.g. a refused token); returns the BridgeClosed, or None."""
        self._reader.join(timeout)
        return self._closed

    def _read_loop(self):
        reason = None
        try:
            while True:
                opcode, data = self._ws.recv()
                if opcode == OP_TEXT:
                    self._dispatch(data)
        except WebSocketClosed as error:
            reason = BridgeClosed(error.code, error.reason or "connection closed")
        except (OSError, WebSocketError) as error:
            reason = BridgeClosed(None, f"connection to the bridge lost: {error}")
        finally:
            self._ws.abort()
            self._finish(reason or BridgeClosed(None, "connection closed"))

    def _finish(self, closed):
        with self._lock:
            self._closed = closed
            pending = list(self._pending.values())
            callbacks, self._close_callbacks = self._close_callbacks, []
        for slot in pending:
            slot["error"] = closed
            slot["event"].set()
        for callback in callbacks:
            self._call(callback, closed)

    def _dispatch(self, text):
        try:
            message = json.loads(text)
        except ValueError:
            log.warning("bridge sent a message that is not JSON (%d bytes)", len(text))
            return
        if not isinstance(message, dict):
            log.warning("bridge sent a JSON-RPC message that is not an object")
            return
        if "method" in message and "id" not in message:
            self._notify(message["method"], message.get("params") or {})
            return
        with self._lock:
            slot = self._pending.get(message.get("id"))
        if slot is None:  # id null: a message the bridge could not read as a request (none of ours)
            log.warning("bridge answered request id %r, not one waiting: %s", message.get("id"),
                        message.get("error", {}).get("message", "") if isinstance(message.get("error"), dict) else "")
            return
        error = message.get("error")
        if isinstance(error, dict):
            slot["error"] = BridgeError(error.get("code"), str(error.get("message", "error")), error.get("data"))
        else:
            slot["result"] = message.get("result")
        slot["event"].set()

    def _notify(self, method, params):
        with self._lock:
            specific = list(self._callbacks.get(method, []))
            catch_all = list(self._callbacks.get("*", []))
        for callback in specific:
            self._call(callback, params)
        for callback in catch_all:
            self._call(callback, method, params)

    @staticmethod
    def _call(callback, *args):
        try:
            callback(*args)
        except Exception:  # a broken callback must not end the reader
            log.exception("rankscope notification callback failed")
