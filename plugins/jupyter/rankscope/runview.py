# SPDX-License-Identifier: MIT
"""What a notebook knows about one run: its record, the ranks' states, per-rank loss series, diagnoses.

Fed from the bridge's reader thread (notifications) and the caller's thread (run.get results); read as
immutable snapshots by whoever draws it. Series are bounded: the newest MAX_POINTS steps per rank.
"""

import collections
import math
import threading
from dataclasses import dataclass, field

MAX_POINTS = 5000
TERMINAL_STATES = ("finished", "failed", "stopped", "lost")


def as_number(value):
    """Event numbers: floats, or the strings "nan", "inf", "-inf" the trainer writes for non-finite ones."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class Snapshot:
    run: str
    record: dict
    ranks: dict  # rank -> RankState
    series: dict  # rank -> [(step, loss)], finite losses only
    last_loss: dict  # rank -> (step, loss) of the newest step event, non-finite included
    diagnoses: list
    finished: bool
    dropped: int = 0  # notifications the bridge dropped for us (bridge.fellBehind)
    evals: dict = field(default_factory=dict)  # epoch -> eval event
    progress: dict = field(default_factory=dict)  # host -> latest launch or teardown message


class RunView:
    def __init__(self, run):
        self.run = run
        self._lock = threading.Lock()
        self._record = {"id": run}
        self._ranks = {}
        self._series = {}
        self._last_loss = {}
        self._diagnoses = collections.OrderedDict()
        self._evals = {}
        self._progress = {}
        self._dropped = 0
        self._version = 0
        self.finished = threading.Event()

    @property
    def version(self):
        """Grows with every change: a drawer redraws only when it moved."""
        return self._version

    def apply_get(self, result):
        """A run.get (or run.subscribe) result. The reader thread may already have applied newer
        notifications, so a rank never goes back to an earlier step and a finished run stays finished."""
        with self._lock:
            record = result.get("run") or {}
            if record and not (self.finished.is_set() and record.get("state") not in TERMINAL_STATES):
                self._record = record
            for state in result.get("ranks") or []:
                self._merge_rank(state, authoritative=record.get("state") in TERMINAL_STATES)
            for diagnosis in result.get("diagnoses") or []:
                self._diagnoses[self._diagnosis_key(diagnosis)] = diagnosis
            self._version += 1
            done = self._record.get("state") in TERMINAL_STATES
        if done:
            self.finished.set()

    def apply_events(self, events):
        with self._lock:
            for event in events:
                kind = event.get("type")
                rank = event.get("rank")
                if not isinstance(rank, int):
                    continue
                if kind == "step":
                    self._add_step(rank, event)
                elif kind == "eval":
                    self._evals[event.get("epoch")] = event
            self._version += 1

    def apply_ranks(self, ranks):
        with self._lock:
            for state in ranks:
                self._merge_rank(state, authoritative=True)
            self._version += 1

    def apply_diagnoses(self, diagnoses):
        with self._lock:
            for diagnosis in diagnoses:
                self._diagnoses[self._diagnosis_key(diagnosis)] = diagnosis
            self._version += 1

    def apply_finished(self, record):
        with self._lock:
            if record:
                self._record = record
            self._version += 1
        self.finished.set()

    def apply_progress(self, host, message):
        with self._lock:
            self._progress[host or "?"] = message
            self._version += 1

    def note_dropped(self, count):
        with self._lock:
            self._dropped += int(count or 0)
            self._version += 1

    def snapshot(self):
        with self._lock:
            return Snapshot(run=self.run, record=dict(self._record), ranks=dict(self._ranks),
                            series={rank: list(points) for rank, points in self._series.items()},
                            last_loss=dict(self._last_loss), diagnoses=list(self._diagnoses.values()),
                            finished=self.finished.is_set(), dropped=self._dropped, evals=dict(self._evals),
                            progress=dict(self._progress))

    def _add_step(self, rank, event):
        step = event.get("step")
        loss = as_number(event.get("loss"))
        if not isinstance(step, int) or loss is None:
            return
        self._last_loss[rank] = (step, loss)
        if not math.isfinite(loss):
            return
        points = self._series.setdefault(rank, collections.deque(maxlen=MAX_POINTS))
        if points and points[-1][0] >= step:
            return  # a repeat (e.g. after re-subscribing): steps only move forward
        points.append((step, loss))

    def _merge_rank(self, state, authoritative):
        rank = state.get("rank")
        if not isinstance(rank, int):
            return
        known = self._ranks.get(rank)
        if known and not authoritative and (known.get("step") or 0) > (state.get("step") or 0):
            return
        self._ranks[rank] = {**(known or {}), **state}

    @staticmethod
    def _diagnosis_key(diagnosis):
        return (diagnosis.get("kind"), diagnosis.get("key"))
