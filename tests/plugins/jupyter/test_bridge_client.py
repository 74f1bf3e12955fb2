# SPDX-License-Identifier: MIT
"""The Python client against the real bridge (`rankscope-cli bridge`, started by the client itself):
the connection file, refused tokens, errors, and a real 2-rank debug run on this machine followed to its end
through notifications and paged logs."""

import json
import os
import stat
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bridgefixture  # noqa: E402  (puts plugins/jupyter on sys.path)
from rankscope import BridgeClient, BridgeClosed, BridgeError, connection  # noqa: E402
from rankscope.live import RunFollower, parse_event_lines  # noqa: E402
from rankscope.websocket import OP_TEXT, WebSocket, WebSocketClosed  # noqa: E402


class Recorder:
    """Every notification, with a condition to wait on."""

    def __init__(self, client):
        self.items = []
        self.changed = threading.Condition()
        client.on("*", self.add)

    def add(self, method, params):
        with self.changed:
            self.items.append((method, params))
            self.changed.notify_all()

    def of(self, method, run):
        with self.changed:
            return [params for m, params in self.items if m == method and params.get("run") == run]

    def wait_for(self, method, run, timeout):
        deadline = time.monotonic() + timeout
        with self.changed:
            while not any(m == method and p.get("run") == run for m, p in self.items):
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.changed.wait(left)
        return self.of(method, run)[0]


class BridgeClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = bridgefixture.skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        cls.env = bridgefixture.PrivateEnvironment()
        started = time.monotonic()
        cls.client = BridgeClient.connect()  # none is running in the private runtime dir: starts one
        cls.start_seconds = time.monotonic() - started
        cls.bridge = cls.client.started_bridge

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "client"):
            cls.client.close(stop_bridge=True)
            cls.env.close()

    def test_the_client_started_the_bridge_and_found_its_connection_file(self):
        self.assertIsNotNone(self.bridge, "a bridge was started by the client")
        self.assertLess(self.start_seconds, 30)
        info = connection.find_bridge()
        self.assertEqual(info.pid, self.bridge.process.pid)
        self.assertEqual(info.path, os.path.join(self.env.runtime, f"bridge-{info.pid}.json"))
        self.assertEqual(stat.S_IMODE(os.stat(info.path).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(self.env.runtime).st_mode), 0o700)
        self.assertEqual(info.server, "rankscope-cli")
        self.assertRegex(info.token, r"^[0-9a-f]{64}$")
        self.assertEqual(info.url, f"ws://127.0.0.1:{info.port}/")
        self.assertEqual(info.host, "127.0.0.1")
        for text in (repr(self.client), str(self.client), repr(info), repr(self.bridge)):
            self.assertNotIn(info.token, text)
        with open(self.bridge.log_path, encoding="utf-8", errors="replace") as file:
            output = file.read()
        self.assertIn(f"bridge listening on {info.url} (connection file {info.path})", output)
        self.assertNotIn(info.token, output, "the bridge never prints the token")

    def test_a_second_client_finds_the_running_bridge_instead_of_starting_one(self):
        with BridgeClient.connect(start=False) as other:
            self.assertIsNone(other.started_bridge)
            self.assertEqual(other.url, self.client.url)
            self.assertEqual(other.hello()["version"], 1)

    def test_wrong_and_missing_tokens_are_closed_with_4401(self):
        info = connection.find_bridge()
        wrong = BridgeClient(info.url, "0" * 64)
        closed = wrong.wait_closed(10)
        self.assertIsInstance(closed, BridgeClosed)
        self.assertEqual((closed.code, closed.message), (4401, "wrong token"))
        with self.assertRaises(BridgeClosed) as caught:
            wrong.request("bridge.hello", timeout=5)
        self.assertEqual(caught.exception.code, 4401)
        self.assertNotIn(info.token, repr(wrong))

        bare = WebSocket.connect(info.url)
        bare.send_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "bridge.hello", "params": {}}))
        with self.assertRaises(WebSocketClosed) as refused:
            bare.recv()  # nothing else is sent to such a peer: the first thing is the close
        self.assertEqual((refused.exception.code, refused.exception.reason), (4401, "missing token"))

    def test_the_token_in_the_query_is_accepted(self):
        info = connection.find_bridge()
        ws = WebSocket.connect(f"{info.url}?token={info.token}")
        ws.send_text(json.dumps({"jsonrpc": "2.0", "id": 7, "method": "bridge.hello", "params": {}}))
        opcode, text = ws.recv()
        self.assertEqual(opcode, OP_TEXT)
        self.assertEqual(json.loads(text)["result"]["server"], "rankscope-cli")
        ws.close()

    def test_hello(self):
        hello = self.client.hello()
        self.assertEqual(hello["version"], 1)
        self.assertEqual(hello["server"], "rankscope-cli")
        self.assertRegex(hello["server_version"], r"^\d+\.\d+\.\d+")

    def test_errors_carry_code_message_and_data(self):
        cases = [
            ("no.such.method", {}, -32601, {"method": "no.such.method"}),
            ("run.get", {"run": "no-such-run"}, -32001, {"run": "no-such-run"}),
            ("run.get", {}, -32602, {"field": "run"}),
        ]
        for method, params, code, data in cases:
            with self.subTest(method=method, params=params):
                with self.assertRaises(BridgeError) as caught:
                    self.client.request(method, params)
                self.assertEqual(caught.exception.code, code)
                self.assertTrue(caught.exception.message)
                self.assertLessEqual(data.items(), (caught.exception.data or {}).items())

    def test_a_request_over_4_mib_is_refused_and_the_connection_stays(self):
        limit = 4 * 1024 * 1024
        with self.assertRaises(BridgeError) as caught:  # refused before sending: the bridge's answer has no id
            self.client.request("bridge.hello", {"padding": "x" * limit})
        self.assertEqual((caught.exception.code, caught.exception.data), (-32600, {"limit": limit}))
        info = connection.find_bridge()
        ws = WebSocket.connect(info.url, {"Authorization": f"Bearer {info.token}"})
        ws.send_text(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "bridge.hello", "params": {"x": "x" * limit}}))
        answer = json.loads(ws.recv()[1])
        self.assertEqual((answer["id"], answer["error"]["code"], answer["error"]["data"]),
                         (None, -32600, {"limit": limit}))
        ws.send_text(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "bridge.hello", "params": {}}))
        self.assertEqual(json.loads(ws.recv()[1])["id"], 6, "the socket stays open")
        ws.close()

    def test_a_bad_job_lists_every_issue_with_its_path(self):
        job = bridgefixture.debug_job("bad")
        job["modee"] = "debug"
        job["trainer"]["batch_size"] = 0
        with self.assertRaises(BridgeError) as caught:
            self.client.launch(job)
        self.assertEqual(caught.exception.code, -32602)
        paths = {issue["path"] for issue in caught.exception.data["issues"]}
        self.assertLessEqual({"modee", "trainer.batch_size"}, paths)
        self.assertTrue(any(line.startswith("modee: ") for line in caught.exception.issues()))

    def test_not_json_and_not_an_object_are_protocol_errors(self):
        info = connection.find_bridge()
        ws = WebSocket.connect(info.url, {"Authorization": f"Bearer {info.token}"})
        ws.send_text("{not json")
        self.assertEqual(json.loads(ws.recv()[1])["error"]["code"], -32700)
        ws.send_text("[]")
        self.assertEqual(json.loads(ws.recv()[1])["error"]["code"], -32600)
        ws.send_fragmented(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "bridge.hello", "params": {}}), 7)
        self.assertEqual(json.loads(ws.recv()[1])["id"], 3)
        ws.close()

    def test_a_two_rank_debug_run_from_launch_to_finished(self):
        client = self.client
        recorder = Recorder(client)
        run = client.launch(bridgefixture.debug_job("jupyter-client"), mode="debug")
        self.assertRegex(run, r"^\d{8}-\d{6}-")
        subscribed = client.subscribe(run)
        self.assertEqual(subscribed["run"]["id"], run)
        listed = {record["id"]: record for record in client.runs()}
        self.assertTrue(listed[run]["active"])

        finished = recorder.wait_for("run.finished", run, 120)
        self.assertIsNotNone(finished, "run.finished within two minutes")
        self.assertEqual(finished["record"]["state"], "finished")

        steps = [event for params in recorder.of("run.events", run) for event in params["events"]
                 if event.get("type") == "step"]
        for rank in (0, 1):
            losses = [event["loss"] for event in steps if event["rank"] == rank]
            self.assertEqual(len(losses), 12, f"rank {rank}: every step's event, once")
            self.assertTrue(all(isinstance(loss, float) and 0 < loss < 10 for loss in losses))
        self.assertTrue(recorder.of("run.ranks", run))

        final = client.get(run)
        self.assertEqual(final["run"]["state"], "finished")
        self.assertEqual(final["run"]["world_size"], 2)
        ranks = {state["rank"]: state for state in final["ranks"]}
        self.assertEqual(sorted(ranks), [0, 1])
        for rank in (0, 1):
            self.assertEqual((ranks[rank]["state"], ranks[rank]["step"], ranks[rank]["exit_status"]),
                             ("finished", 12, 0))
            last = [event["loss"] for event in steps if event["rank"] == rank][-1]
            self.assertAlmostEqual(ranks[rank]["loss"], last)
        self.assertFalse({record["id"]: record for record in client.runs()}[run]["active"])

        with self.assertRaises(BridgeError) as caught:
            client.stop(run)
        self.assertEqual(caught.exception.code, -32002)
        with self.assertRaises(BridgeError) as caught:
            client.logs(run, 2)
        self.assertEqual((caught.exception.code, caught.exception.data.get("rank")), (-32004, 2))
        self.check_log_paging(run)
        self.check_late_follower(run, steps)
        self.assertEqual(client.unsubscribe(run)["run"], run)

    def check_log_paging(self, run):
        whole = self.client.logs(run, 1, start=1, count=10000, stream="err")
        total = whole["total"]
        self.assertGreaterEqual(total, 12, "--log-every 1: a progress line per step on stderr")
        self.assertEqual([line["line"] for line in whole["lines"]], list(range(1, total + 1)))
        self.assertEqual(whole["next"], total + 1)
        paged, start = [], 1
        while start <= total:
            page = self.client.logs(run, 1, start=start, count=5, stream="err")
            self.assertLessEqual(len(page["lines"]), 5)
            self.assertEqual(page["total"], total)
            paged += page["lines"]
            start = page["next"]
        self.assertEqual(paged, whole["lines"])
        self.assertTrue(any("[rank 1]" in line["text"] and "loss" in line["text"] for line in paged))
        self.assertEqual(self.client.logs(run, 1, start=total + 1, count=5, stream="err")["lines"], [])

    def check_late_follower(self, run, steps):
        """A follower that comes after the end rebuilds the chart from the stored events."""
        follower = RunFollower(run)
        follower.follow(self.client)
        snapshot = follower.view.snapshot()
        self.assertTrue(snapshot.finished)
        for rank in (0, 1):
            stored = [(event["step"], event["loss"]) for event in steps if event["rank"] == rank]
            self.assertEqual(snapshot.series[rank], stored)
        follower.detach(unsubscribe=False)
        events = parse_event_lines(line["text"] for line in
                                   self.client.logs(run, 0, count=10000, stream="events")["lines"])
        self.assertEqual(events[-1]["type"], "end")

    def test_stop_a_running_job_given_as_a_file_path(self):
        job = bridgefixture.debug_job("jupyter-stop", steps=400, slow_ms=200)
        path = self.env.path("stop-job.json")
        with open(path, "w", encoding="utf-8") as file:
            json.dump(job, file)
        recorder = Recorder(self.client)
        run = self.client.launch(path)
        self.client.subscribe(run)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
                event.get("type") == "step" for params in recorder.of("run.events", run) for event in params["events"]):
            time.sleep(0.1)
        self.assertEqual(self.client.get(run)["run"]["name"], "jupyter-stop")
        self.assertEqual(self.client.stop(run), {"run": run, "stopping": True})
        finished = recorder.wait_for("run.finished", run, 60)
        self.assertIsNotNone(finished)
        self.assertEqual(finished["record"]["state"], "stopped")


if __name__ == "__main__":
    bridgefixture.main()
