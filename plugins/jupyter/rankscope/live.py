# SPDX-License-Identifier: MIT
"""A followed run: bridge notifications into a RunView, redrawn at most a few times a second.

Notifications are only recorded on the reader thread; a drawing thread of its own turns them into one
display update per tick (coalescing bursts from many ranks), and does the requests a notification calls for
(a fresh run.get after bridge.fellBehind, and once more when the run ends, for the final rank states).
"""

import json
import logging
import threading
import time

from . import render
from .client import RUN_NOT_ACTIVE, BridgeError
from .runview import MAX_POINTS, RunView

log = logging.getLogger("rankscope")

NOTIFICATIONS = ("run.events", "run.ranks", "run.diagnoses", "run.progress", "run.finished", "bridge.fellBehind")
EVENT_PREFIX = "@rankscope "
HISTORY_LINES = 4 * MAX_POINTS  # per rank: step events plus the heartbeats between them


class RunFollower:
    """Follows one run. `update(bundle)` is called from the drawing thread with a render.bundle();
    `renderer` is auto, png or none (the table alone)."""

    def __init__(self, run=None, update=None, interval=0.25, renderer="auto"):
        self.run = run
        self.view = RunView(run)
        self._update = update
        self._interval = interval
        self._renderer = renderer
        self._client = None
        self._lock = threading.Lock()  # orders notifications against the replay of early ones
        self._early = None  # notifications kept while launching (no id yet) or loading history
        self._callbacks = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._refresh = threading.Event()
        self._thread = None
        self._drawn_version = -1

    def launch(self, client, job, mode=None):
        """Launches and follows. The bridge subscribes the launching client at once, so notifications can
        arrive before run.launch's answer: they are kept and replayed once the run's id is known."""
        self._early = []
        self._bind(client)
        try:
            run = client.launch(job, mode=mode)
        except BaseException:
            self._unbind(client)
            self._early = None
            raise
        with self._lock:
            self.run = run
            self.view = RunView(run)
        self._replay_early()
        self._start(client.subscribe(run))
        return run

    def _replay_early(self):
        with self._lock:
            early, self._early = self._early or [], None
            for method, params in early:
                self._handle(method, params)

    def follow(self, client, history=True):
        """Subscribes on `client` (again, after a reconnect) and starts drawing; with history, the chart is
        rebuilt from the ranks' stored events first. Returns the subscribe (or, for an ended run, get) result."""
        self._early = []  # live notifications wait until the stored history is in
        self._bind(client)
        try:
            try:
                result = client.subscribe(self.run)
            except BridgeError as error:
                if error.code != RUN_NOT_ACTIVE:
                    raise
                result = client.get(self.run)  # a stored run that is over: show it as it ended
            if history:
                self.load_history(client, result)
        finally:
            self._replay_early()
        self._start(result)
        return result

    def load_history(self, client, result):
        """Each rank's newest stored events (run.logs with stream "events"), for a chart that starts late."""
        world = (result.get("run") or {}).get("world_size") or len(result.get("ranks") or [])
        for rank in range(world):
            try:
                total = client.logs(self.run, rank, start=1, count=1, stream="events").get("total", 0)
                start = max(1, total - HISTORY_LINES + 1)
                while start <= total:
                    page = client.logs(self.run, rank, start=start, count=10000, stream="events")
                    self.view.apply_events(parse_event_lines(line.get("text", "") for line in page.get("lines", [])))
                    if page.get("next", total + 1) <= start:
                        break
                    start = page["next"]
            except BridgeError as error:
                log.warning("rankscope: no stored events for run %s rank %s: %s", self.run, rank, error)

    def detach(self, unsubscribe=True):
        """Stops following: no more callbacks, no more drawing."""
        client, self._client = self._client, None
        if client:
            self._unbind(client)
            if unsubscribe and not client.closed:
                try:
                    client.unsubscribe(self.run)
                except (BridgeError, TimeoutError):
                    pass
        self._stop.set()
        self._wake.set()

    def wait(self, timeout=None):
        """Blocks until the run ends (True) or the timeout passes (False); interruptible with Ctrl-C."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.view.finished.is_set():
            remaining = 0.5 if deadline is None else min(0.5, deadline - time.monotonic())
            if remaining <= 0:
                return False
            self.view.finished.wait(remaining)
            if self._client is not None and self._client.closed and not self.view.finished.is_set():
                raise self._client.close_error
        if self._thread is not None:
            self._thread.join(10)  # the final drawing, with the final rank states
        return True

    def refresh(self):
        """run.get now (not on the reader thread)."""
        if self._client is not None and not self._client.closed:
            self.view.apply_get(self._client.get(self.run))

    def _bind(self, client):
        self._client = client
        for method in NOTIFICATIONS:
            client.on(method, self._callback(method))

    def _unbind(self, client):
        for method in NOTIFICATIONS:
            client.off(method, self._callback(method))

    def _callback(self, method):
        """One bound callable per method, the same object each time so that off() finds it."""
        if method not in self._callbacks:
            self._callbacks[method] = lambda params: self._on_notification(method, params)
        return self._callbacks[method]

    def _start(self, result):
        self.view.apply_get(result)
        self._wake.set()
        if self._update and (self._thread is None or not self._thread.is_alive()):
            self._thread = threading.Thread(target=self._draw_loop, name=f"rankscope-draw-{self.run}", daemon=True)
            self._thread.start()

    # Notifications, on the reader thread: record and wake the drawer, nothing more.

    def _on_notification(self, method, params):
        with self._lock:
            if self._early is not None:
                self._early.append((method, params))
            elif params.get("run") == self.run:
                self._handle(method, params)

    def _handle(self, method, params):
        if params.get("run") != self.run:
            return
        if method == "run.events":
            self.view.apply_events(params.get("events") or [])
        elif method == "run.ranks":
            self.view.apply_ranks(params.get("ranks") or [])
        elif method == "run.diagnoses":
            self.view.apply_diagnoses(params.get("diagnoses") or [])
        elif method == "run.progress":
            self.view.apply_progress(params.get("host"), params.get("message", ""))
        elif method == "run.finished":
            self._refresh.set()
            self.view.apply_finished(params.get("record") or {})
        elif method == "bridge.fellBehind":
            self.view.note_dropped(params.get("dropped", 0))
            self._refresh.set()
        self._wake.set()

    # Drawing thread

    def _draw_loop(self):
        last = 0.0
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            pause = self._interval - (time.monotonic() - last)
            if pause > 0 and self._stop.wait(pause):
                break
            if self._refresh.is_set():
                self._refresh.clear()
                try:
                    self.refresh()
                except (BridgeError, TimeoutError) as error:
                    log.warning("rankscope: run.get %s failed: %s", self.run, error)
            self._draw()
            last = time.monotonic()  # from one update to the next, drawing time included
            if self.view.finished.is_set() and not self._refresh.is_set():
                break

    def _draw(self):
        version = self.view.version
        if version == self._drawn_version:
            return
        self._drawn_version = version
        try:
            self._update(render.bundle(self.view.snapshot(), self._renderer))
        except Exception:  # a frontend gone away must not kill the thread silently
            log.exception("rankscope: drawing run %s failed", self.run)


def parse_event_lines(lines):
    """Events from events-file lines (`@rankscope {json}`); anything else is skipped."""
    events = []
    for text in lines:
        if not text.startswith(EVENT_PREFIX):
            continue
        try:
            event = json.loads(text[len(EVENT_PREFIX):])
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events
