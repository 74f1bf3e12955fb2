# SPDX-License-Identifier: MIT
"""The %rankscope line magic: launch, attach, status, logs, wait, stop and runs against the bridge.

    %load_ext rankscope
    %rankscope launch job.json --mode debug     # a live per-rank loss chart in this cell's output
    %rankscope wait                             # block until the run ends, print the final summary
    %rankscope status
    %rankscope logs --rank 1 --tail 20
"""

import argparse
import atexit
import json
import os
import shlex

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.display import display

from . import render
from .client import BridgeClient, BridgeError, RUN_NOT_ACTIVE
from .connection import BridgeNotFound
from .live import RunFollower
from .runview import RunView

PROTOCOL_VERSION = 1


class ArgumentError(Exception):
    pass


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises instead of exiting the kernel."""

    def error(self, message):
        raise ArgumentError(f"{message}\n{self.format_usage()}")


def build_parser():
    parser = ArgumentParser(prog="%rankscope", description="RankScope in a notebook, through the IDE bridge.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    launch = commands.add_parser("launch", help="launch a job and show its live loss chart")
    launch.add_argument("job", help="a job file (relative to the notebook's directory) or a dict variable")
    launch.add_argument("--mode", choices=("debug", "submit"))
    launch.add_argument("--no-chart", action="store_true", help="do not show the live chart")
    attach = commands.add_parser("attach", help="follow a run still on its nodes (or show a stored one)")
    attach.add_argument("run", help="a run id (as in %%rankscope runs)")
    attach.add_argument("--no-chart", action="store_true")
    for name, text in (("status", "run state, per-rank step and loss, diagnoses"),
                       ("stop", "stop the run on every node"),
                       ("wait", "block until the run ends, then print its summary")):
        command = commands.add_parser(name, help=text)
        command.add_argument("run", nargs="?", help="default: the run launched or attached last")
        if name == "wait":
            command.add_argument("--timeout", type=float, help="seconds (default: no limit)")
    logs = commands.add_parser("logs", help="a rank's stdout or stderr from the run store")
    logs.add_argument("run", nargs="?")
    logs.add_argument("--rank", type=int, required=True)
    logs.add_argument("--tail", type=int, help="only the last N lines")
    logs.add_argument("--stream", choices=("out", "err", "both", "events"), default="both")
    commands.add_parser("runs", help="every stored run, newest first")
    commands.add_parser("hello", help="which bridge this notebook talks to")
    return parser


@magics_class
class RankScopeMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self._client = None
        self._current = None
        self._followers = {}
        self._parser = build_parser()

    @line_magic
    def rankscope(self, line):
        """%rankscope COMMAND ...: launch, attach, status, logs, wait, stop, runs (see %rankscope --help)."""
        try:
            args = self._parser.parse_args(shlex.split(line))
        except ArgumentError as error:
            raise UsageError(str(error)) from None
        except SystemExit:  # --help printed the help
            return None
        if not args.command:
            print(self._parser.format_help())
            return None
        try:
            return getattr(self, "_cmd_" + args.command)(args)
        except BridgeError as error:
            raise UsageError(describe_error(error)) from None
        except (BridgeNotFound, TimeoutError) as error:
            raise UsageError(str(error)) from None

    # Commands

    def _cmd_hello(self, args):
        client = self.client()
        hello = client.hello()
        print(f"{hello.get('server')} {hello.get('server_version')} (protocol {hello.get('version')}) at {client.url}")

    def _cmd_launch(self, args):
        job = self._resolve_job(args.job)
        handle = None if args.no_chart else display({"text/plain": "launching…"}, raw=True, display_id=True)
        follower = RunFollower(update=chart_updater(handle))
        try:
            run = follower.launch(self.client(), job, mode=args.mode)
        except BaseException:
            if handle is not None:
                handle.update({"text/plain": "launch failed"}, raw=True)
            raise
        self._adopt(run, follower)
        print(f"launched run {run}")
        return None

    def _cmd_attach(self, args):
        try:
            self.client().attach(args.run)
        except BridgeError as error:
            if error.code != RUN_NOT_ACTIVE:
                raise
            print(f"run {args.run} is no longer running: {describe_error(error)}")
        self._follow(args.run, chart=not args.no_chart)

    def _cmd_status(self, args):
        run = self._run(args.run)
        client = self.client()
        follower = self._followers.get(run)
        if follower:  # its view has the losses seen so far
            follower.refresh()
            view = follower.view
        else:
            view = RunView(run)
            view.apply_get(client.get(run))
        print(render.status_text(view.snapshot()))

    def _cmd_wait(self, args):
        run = self._run(args.run)
        follower = self._followers.get(run) or self._follow(run, chart=False)
        self.client()  # reconnects (and follows again) when the connection was lost
        if not follower.wait(args.timeout):
            print(f"run {run} still {follower.view.snapshot().record.get('state', 'running')} "
                  f"after {args.timeout:g} s")
            return None
        follower.refresh()
        print("\n".join(render.summary_lines(follower.view.snapshot())))
        return None

    def _cmd_stop(self, args):
        run = self._run(args.run)
        result = self.client().stop(run)
        print(f"stopping run {result.get('run', run)}")

    def _cmd_logs(self, args):
        run = self._run(args.run)
        client = self.client()
        streams = ("out", "err") if args.stream == "both" else (args.stream,)
        for stream in streams:
            total = client.logs(run, args.rank, start=1, count=1, stream=stream).get("total", 0)
            start = 1 if args.tail is None else max(1, total - args.tail + 1)
            if len(streams) > 1:
                if not total:
                    continue
                print(f"--- rank {args.rank} std{stream}, lines {start}-{total} of {total} ---")
            elif not total:
                print(f"(rank {args.rank} has no {stream} lines yet)")
            for text in read_lines(client, run, args.rank, start, total - start + 1, stream):
                print(text)

    def _cmd_runs(self, args):
        runs = self.client().runs()
        rows = [("id", "name", "mode", "state", "ranks", "created", "summary")]
        for record in runs:
            state = record.get("state", "") + (" (followed)" if record.get("active") else "")
            rows.append(tuple(str(value) for value in (record.get("id", ""), record.get("name", ""),
                                                       record.get("mode", ""), state, record.get("world_size", ""),
                                                       record.get("created", ""), render.run_verdict(record))))
        widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
        for row in rows:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())

    # Helpers

    def client(self):
        """The bridge connection: found (or started) on first use, and again when it was lost."""
        if self._client is None or self._client.closed:
            lost = self._client is not None
            client = BridgeClient.connect()
            version = client.hello().get("version")
            if version != PROTOCOL_VERSION:
                client.close(stop_bridge=True)
                raise UsageError(f"the bridge at {client.url} speaks protocol {version}; this extension speaks "
                                 f"{PROTOCOL_VERSION} (docs/bridge.md)")
            self._client = client
            if lost:
                for follower in self._followers.values():
                    if not follower.view.finished.is_set():
                        follower.follow(self._client)
        return self._client

    def _run(self, run):
        run = run or self._current
        if not run:
            raise UsageError("no run yet: give a run id, or %rankscope launch JOB first")
        return run

    def _resolve_job(self, job):
        """A job file, relative to the notebook's working directory, sent as an absolute path (the bridge has
        a working directory of its own); else a dict (or JSON text) held by a variable of that name."""
        path = os.path.abspath(os.path.expanduser(job))
        if os.path.isfile(path):
            return path
        value = self.shell.user_ns.get(job) if job.isidentifier() else None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError as error:
                raise UsageError(f"{job} holds text that is not a JSON job: {error}") from None
        if isinstance(value, dict):
            return value
        raise UsageError(f"no job file {path} (nor a dict variable {job!r})")

    def _follow(self, run, chart=True):
        handle = display({"text/plain": f"run {run}…"}, raw=True, display_id=True) if chart else None
        follower = RunFollower(run, update=chart_updater(handle))
        follower.follow(self.client())
        self._adopt(run, follower)
        return follower

    def _adopt(self, run, follower):
        old = self._followers.pop(run, None)
        if old:
            old.detach(unsubscribe=False)
        self._followers[run] = follower
        self._current = run

    def close(self):
        for follower in self._followers.values():
            follower.detach(unsubscribe=False)
        if self._client is not None:
            self._client.close(stop_bridge=True)
            self._client = None


def chart_updater(handle):
    """The live chart's update function for a display handle (None: no chart)."""
    if handle is None:
        return None
    return lambda bundle: handle.update(bundle, raw=True)


def read_lines(client, run, rank, start, count, stream):
    """Lines from..from+count-1 of a rank's stream, paged by run.logs (at most 10000 per request)."""
    left = count
    while left > 0:
        page = client.logs(run, rank, start=start, count=min(left, 10000), stream=stream)
        lines = page.get("lines") or []
        for line in lines:
            yield line.get("text", "")
        left -= len(lines)
        following = page.get("next", start + len(lines))
        if not lines or following <= start or following > page.get("total", 0):
            return
        start = following


def describe_error(error):
    """One message for the user: the bridge's, with a bad job's issues each on a line."""
    issues = error.issues()
    if issues:
        return error.message + "\n" + "\n".join("  " + issue for issue in issues)
    if error.code == 4401:
        return f"the bridge refused this notebook ({error.message}): its connection file is stale or not ours"
    return str(error)


_magics = None


def load(ipython):
    global _magics
    if _magics is None:
        _magics = RankScopeMagics(ipython)
        atexit.register(unload)
    ipython.register_magics(_magics)


def unload(ipython=None):
    """Ends what this kernel started: the subscriptions, and a bridge it started itself."""
    global _magics
    if _magics is not None:
        _magics.close()
        _magics = None
