# SPDX-License-Identifier: MIT
"""rankscope_demo.ipynb executed headless (nbclient, a real ipykernel on this python3) against the real
bridge, which the kernel starts itself: a 2-rank debug run launched, followed and summarised in the cells'
outputs. The outputs must hold both ranks' losses, equal to the run store's, and the final summary."""

import json
import os
import re
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bridgefixture  # noqa: E402
from rankscope import connection  # noqa: E402

NOTEBOOK = os.path.join(bridgefixture.HERE, "rankscope_demo.ipynb")
LOSS = r"(\d+\.\d{4})"

try:
    import nbclient
    import nbformat
except ImportError as error:  # Debian: python3-nbclient, python3-nbformat, python3-ipykernel
    nbclient = None
    MISSING = str(error)


def texts(cell):
    """Everything a cell shows: streams, and each display's text and HTML."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        for mime in ("text/plain", "text/html"):
            if mime in output.get("data", {}):
                parts.append(output["data"][mime])
    return "\n".join(parts)


def install_kernel_spec(jupyter_path):
    """A "python3" kernel running this interpreter (Debian's /usr/bin/python3, where ipykernel is), first on
    JUPYTER_PATH so that no other python3 kernel is picked."""
    directory = os.path.join(jupyter_path, "kernels", "python3")
    os.makedirs(directory)
    spec = {"argv": [sys.executable, "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (rankscope test)", "language": "python"}
    with open(os.path.join(directory, "kernel.json"), "w", encoding="utf-8") as file:
        json.dump(spec, file)


def final_step_losses(home, run):
    """Each rank's last step loss, from the run store's events files."""
    losses = {}
    for rank in (0, 1):
        with open(os.path.join(home, "runs", run, f"rank{rank}.events"), encoding="utf-8") as file:
            for line in file:
                if line.startswith("@rankscope "):
                    event = json.loads(line[len("@rankscope "):])
                    if event.get("type") == "step":
                        losses[rank] = event["loss"]
    return losses


if nbclient is not None:
    class RecordingClient(nbclient.NotebookClient):
        """Keeps every update_display_data message: the live chart's redraws as they came."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.display_updates = []

        def process_message(self, msg, cell, cell_index):
            if msg["msg_type"] == "update_display_data":
                self.display_updates.append(msg["content"]["data"].get("text/plain", ""))
            return super().process_message(msg, cell, cell_index)


class NotebookTest(unittest.TestCase):
    def setUp(self):
        if nbclient is None:
            self.skipTest(f"nbclient is not installed: {MISSING}")
        reason = bridgefixture.skip_reason()
        if reason:
            self.skipTest(reason)
        self.env = bridgefixture.PrivateEnvironment()
        self.addCleanup(self.env.close)
        self.addCleanup(self.stop_leftover_bridges)
        self.work = self.env.path("notebook")
        os.makedirs(self.work)
        install_kernel_spec(self.env.path("jupyter"))
        self.env.set(JUPYTER_PATH=self.env.path("jupyter"), JUPYTER_RUNTIME_DIR=self.env.path("jupyter-runtime"),
                     JUPYTER_CONFIG_DIR=self.env.path("jupyter-config"), IPYTHONDIR=self.env.path("ipython"),
                     JUPYTER_PLATFORM_DIRS="1", PYDEVD_DISABLE_FILE_VALIDATION="1",
                     PYTHONPATH=os.pathsep.join(filter(None, [bridgefixture.PLUGIN_DIR, os.environ.get("PYTHONPATH")])))
        with open(os.path.join(self.work, "job.json"), "w", encoding="utf-8") as file:
            json.dump(bridgefixture.debug_job("notebook-demo"), file, indent=2)

    def stop_leftover_bridges(self):
        """Bridges in this test's private runtime directory are the test's own; none should be left."""
        for path in os.listdir(self.env.runtime) if os.path.isdir(self.env.runtime) else []:
            match = re.fullmatch(r"bridge-(\d+)\.json", path)
            if match and connection.pid_alive(int(match.group(1))):
                os.kill(int(match.group(1)), signal.SIGTERM)

    def test_notebook_shows_both_ranks_losses_and_the_final_summary(self):
        notebook = nbformat.read(NOTEBOOK, as_version=4)
        started = time.monotonic()
        client = RecordingClient(notebook, timeout=180, kernel_name="python3",
                                         resources={"metadata": {"path": self.work}})
        try:
            client.execute()
        finally:
            saved = os.environ.get("RANKSCOPE_JUPYTER_TEST_OUT")
            if saved:
                nbformat.write(notebook, saved)
        elapsed = time.monotonic() - started
        cells = {cell["source"].strip(): cell for cell in notebook.cells if cell["cell_type"] == "code"}
        launch = texts(cells["%rankscope launch job.json --mode debug"])
        wait = texts(cells["%rankscope wait --timeout 120"])
        status = texts(cells["%rankscope status"])
        logs = texts(cells["%rankscope logs --rank 1 --tail 5"])
        runs = texts(cells["%rankscope runs"])

        run = re.search(r"launched run (\S+)", launch).group(1)
        expected = final_step_losses(self.env.home, run)
        self.assertEqual(sorted(expected), [0, 1])

        # The live chart's display, redrawn while the run went on (at most 4 times a second) and at its end:
        # a chart, and the summary under it.
        live = [text for text in client.display_updates if re.search(r"(?m)^[01] .* running ", text)]
        self.assertGreaterEqual(len(live), 2, f"redraws during the run: {client.display_updates}")
        self.assertIn("final loss", client.display_updates[-1])
        print(f"{len(client.display_updates)} chart updates, {len(live)} while running", file=sys.stderr)
        self.assertRegex(launch, r"<img alt=\"loss per rank\" src=\"data:image/png;base64,")
        for text in (launch, wait):
            self.assertIn(f"run {run} finished", text)
            for rank in (0, 1):
                shown = re.search(rf"rank {rank} final loss {LOSS} \(step 12, finished, exit 0\)", text)
                self.assertIsNotNone(shown, f"rank {rank}'s final loss in:\n{text}")
                self.assertAlmostEqual(float(shown.group(1)), expected[rank], places=4)

        self.assertIn(f"run {run} (notebook-demo): finished, debug mode, 2 ranks", status)
        for rank in (0, 1):
            self.assertRegex(status, rf"(?m)^{rank}\s+\S+\s+finished\s+1\s+12\s+{LOSS}")
        self.assertEqual(len(re.findall(r"\[rank 1\]", logs)), 5, logs)
        self.assertRegex(runs, rf"{run}\s+notebook-demo\s+debug\s+finished")

        # The kernel started the bridge and stopped it when it shut down.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and connection.find_bridge(self.env.runtime):
            time.sleep(0.1)
        self.assertIsNone(connection.find_bridge(self.env.runtime), "the kernel's bridge ended with the kernel")
        print(f"notebook executed in {elapsed:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    bridgefixture.main()
