# SPDX-License-Identifier: MIT
"""What the tests against the real bridge share: the CLI under test, a private run store and runtime
directory, and a quick 2-rank local debug job (synthetic data, the MLP, a dozen steps on 127.0.0.1)."""

import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PLUGIN_DIR = os.path.join(ROOT, "plugins", "jupyter")
sys.path.insert(0, PLUGIN_DIR)

SKIP = 77  # ctest SKIP_RETURN_CODE


def main():
    """unittest.main, exiting with SKIP when nothing could run (ctest then reports the test as skipped)."""
    import unittest

    result = unittest.main(exit=False, verbosity=2).result
    if result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(SKIP)
    sys.exit(0 if result.wasSuccessful() else 1)


def cli_under_test():
    """$RANKSCOPE_CLI (ctest passes the built target), else build/bin/rankscope-cli."""
    return os.environ.get("RANKSCOPE_CLI") or os.path.join(ROOT, "build", "bin", "rankscope-cli")


def skip_reason():
    """Why the bridge cannot be tested here, or None."""
    cli = cli_under_test()
    if not os.access(cli, os.X_OK):
        return f"{cli} is not built"
    if not os.access(os.path.join(os.path.dirname(cli), "rankscope-trainer"), os.X_OK):
        return "rankscope-trainer is not built next to rankscope-cli"
    probe = subprocess.run([cli, "--help"], capture_output=True, text=True, timeout=30)
    if "bridge [--port" not in probe.stdout:
        return f"{cli} has no bridge command"
    return None


class PrivateEnvironment:
    """Temporary RANKSCOPE_HOME and RANKSCOPE_RUNTIME_DIR (and RANKSCOPE_CLI) for this process and its
    children; restores the environment on close()."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="rankscope-jupyter-test-")
        self.home = os.path.join(self.dir.name, "home")
        self.runtime = os.path.join(self.dir.name, "runtime")
        self._saved = {}
        self.set(RANKSCOPE_HOME=self.home, RANKSCOPE_RUNTIME_DIR=self.runtime, RANKSCOPE_CLI=cli_under_test())

    def path(self, *parts):
        return os.path.join(self.dir.name, *parts)

    def set(self, **variables):
        for name, value in variables.items():
            self._saved.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def close(self):
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.dir.cleanup()


def free_port():
    """A loopback port no socket holds now, chosen by the kernel: tests run side by side under ctest -j."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def debug_job(name, steps=12, slow_ms=100, extra=()):
    """Two ranks on this machine. Rank 0 sleeps slow_ms per step so that the run lasts a couple of seconds:
    long enough to subscribe and see steps stream in, short enough for a test."""
    extra_args = list(extra)
    if slow_ms:
        extra_args += ["--slow-rank", "0", "--slow-ms", str(slow_ms)]
    return {
        "version": 1,
        "name": name,
        "mode": "debug",
        "master_port": free_port(),
        "trainer": {"dataset": "synthetic", "model": "mlp", "epochs": 1, "max_steps": steps, "batch_size": 16,
                    "backend": "gloo", "device": "cpu",
                    "extra_args": extra_args + ["--synthetic-samples", "512", "--log-every", "1"]},
        "debug": {"node": "local", "procs": 2, "max_steps": steps, "verbose": True},
    }
