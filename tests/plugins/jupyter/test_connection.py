# SPDX-License-Identifier: MIT
"""Finding the bridge's connection file: the directory rules, the newest live one, insecure and stale
files passed over, the token kept out of repr(), and a bridge that fails to start reported with its words."""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "plugins", "jupyter"))

from rankscope import connection  # noqa: E402
from rankscope.connection import BridgeNotFound, ConnectionInfo  # noqa: E402

TOKEN = "ab" * 32


def write_connection(directory, pid, port, mode=0o600, mtime=None):
    path = os.path.join(directory, f"bridge-{pid}.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump({"version": 1, "url": f"ws://127.0.0.1:{port}/", "host": "127.0.0.1", "port": port,
                   "token": TOKEN, "pid": pid, "started": "2026-11-22T09:00:00Z", "server": "rankscope-cli"}, file)
    os.chmod(path, mode)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


class ConnectionFileTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.sleeper = subprocess.Popen(["sleep", "60"])
        self.addCleanup(self.sleeper.wait)
        self.addCleanup(self.sleeper.kill)

    def dead_pid(self):
        process = subprocess.Popen(["true"])
        process.wait()
        return process.pid

    def test_runtime_dir_rules(self):
        self.assertEqual(connection.runtime_dir({"RANKSCOPE_RUNTIME_DIR": "/r", "XDG_RUNTIME_DIR": "/x"}), "/r")
        self.assertEqual(connection.runtime_dir({"XDG_RUNTIME_DIR": "/x"}), "/x/rankscope")
        self.assertEqual(connection.runtime_dir({}),
                         os.path.join(os.path.expanduser("~"), ".local", "share", "rankscope", "runtime"))

    def test_newest_live_file_wins_and_stale_or_insecure_ones_are_skipped(self):
        now = time.time()
        own = os.getpid()
        write_connection(self.dir.name, own, 1001, mtime=now - 100)
        write_connection(self.dir.name, self.sleeper.pid, 1002, mtime=now - 50)
        write_connection(self.dir.name, self.dead_pid(), 1003, mtime=now)  # newest, but its bridge is gone
        insecure = write_connection(self.dir.name, 1, 1004, mode=0o644, mtime=now)  # pid 1 is alive
        with open(os.path.join(self.dir.name, "bridge-7.json"), "w") as file:
            file.write("{not json")
        os.chmod(file.name, 0o600)
        skipped = []
        info = connection.find_bridge(self.dir.name, skipped)
        self.assertEqual((info.port, info.pid), (1002, self.sleeper.pid))
        reasons = dict(skipped)
        self.assertIn("not running", " ".join(reasons.values()))
        self.assertEqual(reasons[insecure], "mode 0644 (must be 0600)")
        self.assertEqual(len(skipped), 3)

    def test_no_file_is_none(self):
        self.assertIsNone(connection.find_bridge(self.dir.name))
        self.assertIsNone(connection.find_bridge(os.path.join(self.dir.name, "missing")))

    def test_repr_never_shows_the_token(self):
        info = ConnectionInfo.from_file(write_connection(self.dir.name, os.getpid(), 1001))
        self.assertEqual(info.token, TOKEN)
        self.assertNotIn(TOKEN, repr(info))
        self.assertNotIn(TOKEN, str(info))

    def test_a_bridge_that_fails_to_start_is_reported_with_its_output(self):
        cli = os.path.join(self.dir.name, "fake-cli")
        with open(cli, "w") as file:
            file.write(textwrap.dedent("""\
                #!/bin/sh
                echo "rankscope-cli: unknown command $1" >&2
                exit 2
            """))
        os.chmod(cli, 0o755)
        os.environ["RANKSCOPE_RUNTIME_DIR"] = self.dir.name
        self.addCleanup(os.environ.pop, "RANKSCOPE_RUNTIME_DIR")
        with self.assertRaisesRegex(BridgeNotFound, "exited with status 2: rankscope-cli: unknown command bridge"):
            connection.start_bridge(cli, timeout=10)

    def test_a_missing_cli_is_reported(self):
        with self.assertRaisesRegex(BridgeNotFound, "cannot start"):
            connection.start_bridge(os.path.join(self.dir.name, "no-such-cli"), timeout=1)


if __name__ == "__main__":
    unittest.main()
