# SPDX-License-Identifier: MIT
"""Finding the bridge: its connection file in the runtime directory, or a bridge started for us.

The rules are docs/bridge.md's: $RANKSCOPE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/rankscope, else
~/.local/share/rankscope/runtime; the newest bridge-<pid>.json whose pid is alive wins.
"""

import glob
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

LISTENING = re.compile(r"bridge listening on (ws://\S+) \(connection file (.+)\)\s*$")


class BridgeNotFound(Exception):
    """No live bridge, and none could be started (the message says why)."""


@dataclass(frozen=True)
class ConnectionInfo:
    """What a connection file says; the token stays out of repr() so that it is never printed by accident."""

    url: str
    token: str = field(repr=False)
    pid: int = 0
    host: str = "127.0.0.1"
    port: int = 0
    server: str = ""
    started: str = ""
    path: str = ""

    @classmethod
    def from_file(cls, path):
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
        if not isinstance(data, dict) or data.get("version") != 1:
            raise ValueError(f"{path}: not a version 1 connection file")
        for key, kind in (("url", str), ("token", str), ("pid", int)):
            if not isinstance(data.get(key), kind):
                raise ValueError(f"{path}: field {key!r} missing or not a {kind.__name__}")
        return cls(url=data["url"], token=data["token"], pid=data["pid"], host=str(data.get("host", "")),
                   port=int(data.get("port", 0) or 0), server=str(data.get("server", "")),
                   started=str(data.get("started", "")), path=os.path.abspath(path))


def runtime_dir(environ=None):
    """The directory the bridge writes its connection file into."""
    environ = os.environ if environ is None else environ
    if environ.get("RANKSCOPE_RUNTIME_DIR"):
        return environ["RANKSCOPE_RUNTIME_DIR"]
    if environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(environ["XDG_RUNTIME_DIR"], "rankscope")
    return os.path.join(os.path.expanduser("~"), ".local", "share", "rankscope", "runtime")


def pid_alive(pid):
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def insecure_reason(path):
    """Why a connection file must not be trusted (its token readable by others, someone else's), or None."""
    info = os.stat(path)
    if info.st_uid != os.getuid():
        return "owned by another user"
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"mode {stat.S_IMODE(info.st_mode):04o} (must be 0600)"
    return None


def find_bridge(directory=None, skipped=None):
    """The newest connection file whose bridge is alive, or None. Files that are stale, unreadable or
    insecure are passed over; with a list as `skipped`, each is appended as (path, reason)."""
    directory = directory or runtime_dir()
    candidates = []
    for path in glob.glob(os.path.join(directory, "bridge-*.json")):
        try:
            reason = insecure_reason(path)
            info = None if reason else ConnectionInfo.from_file(path)
            if info and not pid_alive(info.pid):
                reason = f"pid {info.pid} is not running"
            mtime = os.stat(path).st_mtime_ns
        except (OSError, ValueError) as error:
            reason = str(error)
        if reason:
            if skipped is not None:
                skipped.append((path, reason))
            continue
        candidates.append(((mtime, info.started), info))
    if not candidates:
        return None
    return max(candidates, key=lambda item: item[0])[1]


def cli_path(environ=None):
    """rankscope-cli: $RANKSCOPE_CLI, else the first on PATH."""
    environ = os.environ if environ is None else environ
    return environ.get("RANKSCOPE_CLI") or shutil.which("rankscope-cli")


@dataclass
class StartedBridge:
    """A bridge this process started; stop() ends it (its runs in submit mode go on, on their nodes)."""

    process: subprocess.Popen
    info: ConnectionInfo
    log_path: str

    def stop(self, timeout=10.0):
        """SIGTERM (the bridge then removes its connection file), SIGKILL after the timeout."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        try:
            os.unlink(self.log_path)
        except OSError:
            pass


def start_bridge(cli=None, timeout=60.0, extra_args=(), directory=None):
    """Starts `rankscope-cli bridge` and waits for its connection file (in `directory`, by default the
    runtime directory). Its output goes to a log file beside it (quoted in errors), so that a full pipe can
    never block it; it gets a session of its own, so that interrupting the notebook's kernel does not stop it."""
    cli = cli or cli_path()
    if not cli:
        raise BridgeNotFound("no running bridge, and rankscope-cli is not on PATH (set RANKSCOPE_CLI)")
    directory = directory or runtime_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    environment = dict(os.environ, RANKSCOPE_RUNTIME_DIR=directory)
    log = tempfile.NamedTemporaryFile(prefix="started-bridge-", suffix=".log", dir=directory, delete=False)
    try:
        process = subprocess.Popen([cli, "bridge", *extra_args], stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True, env=environment)
    except OSError as error:
        log.close()
        os.unlink(log.name)
        raise BridgeNotFound(f"cannot start {cli} bridge: {error.strerror}") from error
    log.close()
    started = StartedBridge(process, None, log.name)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = _started_connection(process.pid, directory, log.name)
        if info:
            started.info = info
            return started
        if process.poll() is not None:
            output = _tail(log.name)
            started.stop()
            raise BridgeNotFound(f"{cli} bridge exited with status {process.returncode}: {output}")
        time.sleep(0.05)
    output = _tail(log.name)
    started.stop()
    raise BridgeNotFound(f"{cli} bridge wrote no connection file within {timeout:g} s: {output}")


def _started_connection(pid, directory, log_path):
    """The started bridge's connection file: the path it printed, else bridge-<pid>.json."""
    paths = []
    try:
        with open(log_path, encoding="utf-8", errors="replace") as file:
            for line in file:
                match = LISTENING.search(line)
                if match:
                    paths.append(match.group(2))
    except OSError:
        pass
    paths.append(os.path.join(directory, f"bridge-{pid}.json"))
    for path in paths:
        try:
            return ConnectionInfo.from_file(path)
        except (OSError, ValueError):
            continue  # not there yet, or being written
    return None


def _tail(path, limit=800):
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.read().strip()
    except OSError:
        return "(no output)"
    return text[-limit:] if text else "(no output)"
