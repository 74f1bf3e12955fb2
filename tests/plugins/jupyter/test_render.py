# SPDX-License-Identifier: MIT
"""A run's state fed with trainer events and bridge results, and drawn: the text status and summary, the
table without matplotlib and matplotlib's PNG, and the throttled live redraw (no bridge needed)."""

import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "plugins", "jupyter"))

from rankscope import render  # noqa: E402
from rankscope.live import RunFollower  # noqa: E402
from rankscope.runview import MAX_POINTS, RunView  # noqa: E402


def steps(rank, first, last, loss0=2.3):
    return [{"v": "1.0", "type": "step", "rank": rank, "time": 1.0 + s, "epoch": 1, "step": s,
             "loss": loss0 - 0.01 * s} for s in range(first, last + 1)]


class RunViewTest(unittest.TestCase):
    def test_series_per_rank_and_non_finite_losses(self):
        view = RunView("r1")
        view.apply_events(steps(0, 1, 5) + steps(1, 1, 5, 2.4))
        view.apply_events([{"type": "step", "rank": 1, "step": 6, "loss": "nan"},
                           {"type": "heartbeat", "rank": 0, "step": 5}])
        snapshot = view.snapshot()
        self.assertEqual(len(snapshot.series[0]), 5)
        self.assertEqual(len(snapshot.series[1]), 5, "a NaN loss is not drawn")
        self.assertEqual(snapshot.last_loss[1][0], 6)
        self.assertEqual(render.format_loss(render.rank_loss(snapshot, 1)), "nan")

    def test_repeated_steps_are_kept_once_and_series_are_bounded(self):
        view = RunView("r1")
        view.apply_events(steps(0, 1, 10))
        view.apply_events(steps(0, 5, 10))
        self.assertEqual([p[0] for p in view.snapshot().series[0]], list(range(1, 11)))
        view.apply_events(steps(0, 11, MAX_POINTS + 100))
        self.assertEqual(len(view.snapshot().series[0]), MAX_POINTS)

    def test_an_older_get_does_not_undo_notifications(self):
        view = RunView("r1")
        view.apply_ranks([{"rank": 0, "state": "running", "step": 9, "loss": 1.5}])
        view.apply_finished({"id": "r1", "state": "finished", "summary": "2 ranks finished"})
        view.apply_get({"run": {"id": "r1", "state": "running"},
                        "ranks": [{"rank": 0, "state": "running", "step": 3, "loss": 2.0}]})
        snapshot = view.snapshot()
        self.assertTrue(snapshot.finished)
        self.assertEqual(snapshot.record["state"], "finished")
        self.assertEqual(snapshot.ranks[0]["step"], 9)

    def test_a_get_of_an_ended_run_finishes_the_view(self):
        view = RunView("r1")
        view.apply_get({"run": {"id": "r1", "state": "failed"}, "ranks": [], "diagnoses": []})
        self.assertTrue(view.finished.is_set())


class RenderTest(unittest.TestCase):
    def snapshot(self):
        view = RunView("20261122-090102-3fa1")
        view.apply_get({"run": {"id": "20261122-090102-3fa1", "name": "local-debug", "mode": "debug",
                                "state": "finished", "world_size": 2, "summary": "2 ranks finished in 3.1 s"},
                        "ranks": [{"rank": 0, "host": "local", "state": "finished", "epoch": 1, "step": 12,
                                   "loss": 2.1234, "exit_status": 0},
                                  {"rank": 1, "host": "local", "state": "finished", "epoch": 1, "step": 12,
                                   "loss": 2.2345, "exit_status": 0}],
                        "diagnoses": [{"kind": "straggler", "key": "1", "ranks": [1], "time": 1.0,
                                       "message": "rank 1 is slow", "resolved": True}]})
        view.apply_events(steps(0, 1, 12) + steps(1, 1, 12, 2.4))
        view.apply_events([{"type": "eval", "rank": r, "epoch": 1, "val_loss": 0.41, "val_accuracy": 0.875,
                            "samples": 1000} for r in (0, 1)])
        return view.snapshot()

    def test_status_and_summary_text(self):
        text = render.status_text(self.snapshot())
        self.assertIn("run 20261122-090102-3fa1 (local-debug): finished, debug mode, 2 ranks", text)
        self.assertIn("straggler: rank 1 is slow (resolved)", text)
        self.assertIn("rank 0 final loss 2.1234 (step 12, finished, exit 0)", text)
        self.assertIn("rank 1 final loss 2.2345 (step 12, finished, exit 0)", text)
        self.assertIn("run 20261122-090102-3fa1 finished: 2 ranks finished in 3.1 s", text)
        self.assertIn("validation after epoch 1: loss 0.4100, accuracy 0.8750", text)

    def test_the_summary_line_is_the_verdict_where_the_run_has_one(self):
        view = RunView("r3")
        verdict = ("stopped by the user; hang: rank 1 on node-b stuck at step 5 in phase forward (collective #12); "
                   "ranks 0 waiting in collective #13")
        view.apply_get({"run": {"id": "r3", "state": "stopped", "world_size": 2, "summary": "stopped by the user",
                                "verdict": verdict}, "ranks": [], "diagnoses": []})
        self.assertIn(f"run r3 stopped: {verdict}", render.summary_lines(view.snapshot()))
        self.assertEqual(render.run_verdict({"summary": "stopped by the user"}), "stopped by the user")
        self.assertEqual(render.run_verdict({"summary": "", "verdict": ""}), "")

    def test_a_root_cause_shows_what_its_rank_said_last(self):
        view = RunView("r2")
        view.apply_get({"run": {"id": "r2", "state": "failed", "world_size": 2}, "ranks": [],
                        "diagnoses": [{"kind": "root-cause", "key": "root-cause", "ranks": [1], "time": 2.0,
                                       "message": "rank 1 on node-b failed first: exit status 1",
                                       "resolved": False,
                                       "last_lines": [{"stream": "out", "text": "step 7 loss 0.5"},
                                                      {"stream": "err", "text": "  File \"train.py\", line 3"}]}]})
        text = render.status_text(view.snapshot())
        self.assertIn("root-cause: rank 1 on node-b failed first: exit status 1\n"
                      "    rank 1 said last:\n"
                      "      [out] step 7 loss 0.5\n"
                      "      [err]   File \"train.py\", line 3\n", text)

    def test_launch_progress_is_shown_until_the_run_ends(self):
        view = RunView("r1")
        view.apply_progress("node-a", "deploying to /scratch/rankscope")
        self.assertIn("node-a: deploying to /scratch/rankscope", render.status_text(view.snapshot()))
        view.apply_finished({"id": "r1", "state": "stopped"})
        self.assertNotIn("deploying", render.status_text(view.snapshot()))

    def test_without_a_chart_the_table_still_has_every_rank(self):
        bundle = render.bundle(self.snapshot(), renderer="none")
        self.assertNotIn("<img", bundle["text/html"])
        self.assertIn("python3-matplotlib", bundle["text/html"])
        self.assertIn("rank 1 final loss 2.2345", bundle["text/plain"])

    @unittest.skipUnless(render.HAVE_MATPLOTLIB, "matplotlib (python3-matplotlib) is not installed")
    def test_png_chart(self):
        png = render.chart_png(self.snapshot())
        self.assertTrue(png.startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertIn("data:image/png;base64,", render.chart_html(self.snapshot(), "png"))

    def test_bundle_holds_html_and_text(self):
        bundle = render.bundle(self.snapshot(), renderer="png" if render.HAVE_MATPLOTLIB else "none")
        if render.HAVE_MATPLOTLIB:
            self.assertIn("data:image/png;base64,", bundle["text/html"])
        self.assertIn("rank 1 final loss 2.2345", bundle["text/plain"])
        self.assertIn("waiting for the first steps", render.bundle(RunView("x").snapshot())["text/html"])

    def test_long_series_are_thinned_for_drawing_keeping_the_last_point(self):
        points = [(s, 1.0) for s in range(1, 5001)]
        thinned = render.thin(points, 800)
        self.assertLessEqual(len(thinned), 801)
        self.assertEqual(thinned[-1], points[-1])


class FakeClient:
    """Just enough of BridgeClient for RunFollower: callbacks and the two requests it makes."""

    closed = False

    def __init__(self):
        self.callbacks = {}
        self.gets = 0

    def on(self, method, callback):
        self.callbacks.setdefault(method, []).append(callback)

    def off(self, method, callback):
        self.callbacks[method].remove(callback)

    def subscribe(self, run):
        return {"run": {"id": run, "state": "running", "world_size": 2}, "ranks": [], "diagnoses": []}

    def get(self, run):
        self.gets += 1
        return {"run": {"id": run, "state": "finished", "summary": "done"},
                "ranks": [{"rank": 0, "state": "finished", "step": 200, "loss": 0.5}], "diagnoses": []}

    def logs(self, run, rank, start=1, count=1000, stream=None):
        lines = ["@rankscope " + json.dumps(event) for event in steps(rank, 1, 3)] + ["not an event"]
        return {"lines": [{"line": n, "text": text} for n, text in enumerate(lines, 1)][start - 1:start - 1 + count],
                "next": min(len(lines), start - 1 + count) + 1, "total": len(lines)}

    def unsubscribe(self, run):
        return {"run": run}

    def notify(self, method, params):
        for callback in list(self.callbacks.get(method, [])):
            callback(params)


class RunFollowerTest(unittest.TestCase):
    def test_bursts_are_drawn_at_most_four_times_a_second_and_the_end_once_more(self):
        updates = []
        follower = RunFollower("r1", update=lambda bundle: updates.append((time.monotonic(), bundle)), interval=0.25)
        client = FakeClient()
        follower.follow(client)
        started = time.monotonic()
        for step in range(1, 201):  # 200 notifications over about one second
            client.notify("run.events", {"run": "r1", "events": steps(0, step, step)})
            client.notify("run.events", {"run": "other", "events": steps(5, step, step)})
            time.sleep(0.005)
        client.notify("run.finished", {"run": "r1", "record": {"id": "r1", "state": "finished"}})
        self.assertTrue(follower.wait(10))
        elapsed = time.monotonic() - started
        self.assertLessEqual(len(updates), elapsed / 0.25 + 3)
        gaps = [b[0] - a[0] for a, b in zip(updates, updates[1:])]
        self.assertTrue(all(gap >= 0.2 for gap in gaps), gaps)
        final = updates[-1][1]["text/plain"]
        self.assertIn("run r1 finished: done", final)
        self.assertIn("rank 0 final loss 0.5000", final)
        self.assertNotIn("rank 5", final)
        self.assertEqual(client.gets, 1, "one run.get for the final states")
        follower.detach()

    def test_a_late_follower_rebuilds_the_chart_from_stored_events(self):
        follower = RunFollower("r1")
        client = FakeClient()
        follower.follow(client)
        client.notify("run.events", {"run": "r1", "events": steps(1, 3, 4)})
        series = follower.view.snapshot().series
        self.assertEqual([p[0] for p in series[0]], [1, 2, 3])
        self.assertEqual([p[0] for p in series[1]], [1, 2, 3, 4])

    def test_notifications_before_the_launch_answer_are_kept(self):
        class LaunchingClient(FakeClient):
            def launch(self, job, mode=None):
                self.notify("run.events", {"run": "r9", "events": steps(0, 1, 2)})  # before the answer
                return "r9"

        follower = RunFollower()
        self.assertEqual(follower.launch(LaunchingClient(), {"version": 1}), "r9")
        self.assertEqual(len(follower.view.snapshot().series[0]), 2)


if __name__ == "__main__":
    unittest.main()
