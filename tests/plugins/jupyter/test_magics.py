# SPDX-License-Identifier: MIT
"""The %rankscope magics in an IPython shell against the real bridge: a job from a dict variable, mistakes
reported as usage errors, stop, wait, runs, and attach to an ended run rebuilding its chart from the store.
(The notebook test covers launch/wait/status/logs in a real kernel.)"""

import contextlib
import io
import os
import re
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bridgefixture  # noqa: E402

try:
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
except ImportError as error:  # Debian: python3-ipykernel brings IPython
    InteractiveShell = None
    MISSING = str(error)


class FakeHandle:
    """Stands in for IPython's DisplayHandle: records what the live chart showed."""

    def __init__(self, bundle):
        self.bundles = [bundle]

    def update(self, bundle, raw=False):
        self.bundles.append(bundle)


class MagicsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if InteractiveShell is None:
            raise unittest.SkipTest(f"IPython is not installed: {MISSING}")
        reason = bridgefixture.skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        cls.env = bridgefixture.PrivateEnvironment()
        cls.env.set(IPYTHONDIR=cls.env.path("ipython"))
        config = Config()
        config.HistoryManager.enabled = False  # no history database in the temporary IPYTHONDIR
        cls.shell = InteractiveShell.instance(config=config)
        cls.shell.run_line_magic("load_ext", "rankscope")
        from rankscope import magics

        cls.handles = []

        def display(bundle, raw=False, display_id=False):
            cls.handles.append(FakeHandle(bundle))
            return cls.handles[-1]

        cls.magics_module = magics
        cls.saved_display, magics.display = magics.display, display

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "shell"):
            cls.magics_module.display = cls.saved_display
            cls.shell.run_line_magic("unload_ext", "rankscope")
            cls.env.close()

    def magic(self, line):
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            self.shell.run_line_magic("rankscope", line)
        return output.getvalue()

    def test_mistakes_are_usage_errors_that_say_what_is_wrong(self):
        self.shell.user_ns["bad_job"] = {"version": 1, "name": "bad", "modee": "debug"}
        with self.assertRaisesRegex(UsageError, r"(?m)^  modee: unknown field"):
            self.magic("launch bad_job")
        self.assertEqual(self.handles[-1].bundles[-1], {"text/plain": "launch failed"})
        with self.assertRaisesRegex(UsageError, "no job file .*no-such-job.json"):
            self.magic("launch no-such-job.json")
        with self.assertRaisesRegex(UsageError, "invalid choice: 'lunch'"):
            self.magic("lunch job.json")
        with self.assertRaisesRegex(UsageError, "the following arguments are required: --rank"):
            self.magic("logs")
        with self.assertRaisesRegex(UsageError, r"\(-32001\)"):
            self.magic("status 19700101-000000-none")
        self.assertIn("rankscope-cli", self.magic("hello"))

    def test_stop_wait_runs_and_attach_after_the_end(self):
        self.shell.user_ns["long_job"] = bridgefixture.debug_job("magics-stop", steps=400, slow_ms=200)
        printed = self.magic("launch long_job")
        run = re.search(r"launched run (\S+)", printed).group(1)
        chart = self.handles[-1]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(re.search(r"(?m)^[01] .* running ", b.get("text/plain", ""))
                                                      for b in chart.bundles):
            time.sleep(0.1)
        self.assertIn("running", self.magic("status"))
        self.assertEqual(self.magic("stop").strip(), f"stopping run {run}")
        summary = self.magic("wait --timeout 60")
        self.assertIn(f"run {run} stopped", summary)
        self.assertRegex(summary, r"rank 0 final loss \d+\.\d{4}")
        self.assertRegex(summary, r"rank 1 final loss \d+\.\d{4}")
        self.assertIn("final loss", chart.bundles[-1]["text/plain"], "the live chart ends on the summary")
        self.assertRegex(self.magic("runs"), rf"{run}\s+magics-stop\s+debug\s+stopped")

        attached = self.magic(f"attach {run}")
        self.assertIn("no longer running", attached)
        self.assertIn(f"run {run} stopped", self.magic(f"wait {run}"))
        follower = self.magics_module._magics._followers[run]
        series = follower.view.snapshot().series
        self.assertEqual(sorted(series), [0, 1], "the chart rebuilt from the stored events")
        self.assertEqual([step for step, _ in series[0]], list(range(1, len(series[0]) + 1)))
        final = self.handles[-1].bundles[-1]
        self.assertRegex(final["text/html"], r"<img alt=\"loss per rank\"")


if __name__ == "__main__":
    bridgefixture.main()
