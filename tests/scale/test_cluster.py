"""Several `hands serve` nodes on one PostgreSQL database: a session created on one node runs on
another and streams from a third (live and after a reconnect with Last-Event-ID); answers posted
to a node that does not run the turn are forwarded; a node paused past its lease cannot write
when it wakes; nodes starting at once on an empty database migrate it once; a draining node ends
its turns within the grace and hands its sessions over; readiness and metrics."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import httpx

from harness import transcript_is_valid, wait_until


def stored_events(cluster, session: str) -> list[tuple[int, dict]]:
    rows = cluster.sql(f"SELECT id, data FROM events WHERE session_id = '{session}' ORDER BY id")
    return [(int(i), json.loads(d)) for i, d in rows]


def metric(node, name: str) -> float:
    r = node.request("GET", "/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain"), r.headers
    for line in r.text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not in /metrics:\n{r.text}")


def test_a_session_made_on_a_runs_on_b_and_streams_from_c(cluster):
    model = cluster.model("anthropic", [
        {"text": "Reading the file.", "tool_calls": [{"name": "read_file", "input": {"path": "hello.txt"}}],
         "chunk_delay_ms": 40},
        {"text": "It says hello world.", "chunk_delay_ms": 40},
        {"text": "One question first.",
         "tool_calls": [{"name": "ask_user", "input": {"question": "Which one?", "options": ["x", "y"]}}]},
        {"text": "You chose x."},
    ])
    a, b, c = (cluster.node(model) for _ in range(3))
    sid = a.create_session()["id"]

    live = c.events(sid)
    turn = b.post_message(sid, "read hello.txt")
    live.wait_type("tool_call_started", name="read_file")
    seen = list(live.events)
    live.close()
    c.streams.remove(live)
    resumed = c.events(sid, last_event_id=seen[-1].id)
    end = resumed.turn_end(turn)
    assert end["reason"] == "completed", end
    received = [(e.id, e.data) for e in seen + resumed.events]
    stored = stored_events(cluster, sid)
    assert [i for i, _ in received] == [i for i, _ in stored], "the streams saw exactly the stored events"
    for (_, got), (_, want) in zip(received, stored):
        assert {k: v for k, v in got.items() if k not in ("id", "session_id", "at_ms")} == want

    # A question of a turn running on b, answered through a: forwarded to b.
    turn2 = b.post_message(sid, "ask me")
    question = resumed.wait_type("question")
    r = a.request("POST", f"/v1/sessions/{sid}/answer", json={"answer": "x", "question_id": question["question_id"]})
    assert r.status_code == 204, r.text
    assert resumed.turn_end(turn2)["reason"] == "completed"
    assert metric(a, "hands_forwarded_requests_total") >= 1
    # Any node describes the session and its transcript; the transcript answers every call.
    for node in (a, b, c):
        assert node.get_session(sid)["id"] == sid
        assert transcript_is_valid(node.transcript(sid)) == []
    assert metric(b, "hands_events_appended_total") > 0
    for node in (a, b, c):
        r = httpx.get(node.base_url + "/readyz", timeout=10)
        assert (r.status_code, r.text) == (200, "ready\n")


def test_a_node_paused_past_its_lease_cannot_write_when_it_wakes(cluster):
    model = cluster.model("anthropic", [
        # The paused node gets this answer after it wakes.
        {"delay_ms": 4000, "text": "late words from the paused node",
         "tool_calls": [{"name": "bash", "input": {"command": "echo late > late.txt"}}]},
        {"text": "done on the node that took over"},
        {"text": "spare"},
    ])
    a, b = cluster.node(model), cluster.node(model)
    sid = a.create_session()["id"]
    stream = b.events(sid)
    turn = a.post_message(sid, "go")
    stream.wait_type("turn_started")
    wait_until(lambda: len(model.requests()) >= 1, 30, "the paused node's model request")
    os.kill(a.proc.pid, signal.SIGSTOP)
    try:
        ended = stream.turn_end(turn, timeout=30)
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    assert ended["reason"] == "aborted", ended
    aborted_at = max(e.id for e in stream.events if e.data.get("type") == "turn_ended")
    # The woken node's words and call are refused; nothing of its turn lands after the abort.
    wait_until(lambda: metric(a, "hands_fenced_writes_total") >= 1, 30, "a refused write on the woken node")
    time.sleep(1.0)
    late = [d for i, d in stored_events(cluster, sid) if i > aborted_at]
    assert not [d for d in late if d.get("turn_id") == turn], late
    assert not (cluster.project / "late.txt").exists(), "a call of the woken node ran"
    assert cluster.sql(f"SELECT status FROM turns WHERE id = '{turn}'") == [["aborted"]]
    assert metric(b, "hands_lease_takeovers_total") >= 1
    # The session goes on.
    turn2 = b.post_message(sid, "again")
    assert stream.turn_end(turn2)["reason"] == "completed"
    ids = [i for i, _ in stored_events(cluster, sid)]
    assert ids == list(range(1, len(ids) + 1))
    assert transcript_is_valid(b.transcript(sid)) == []


def test_nodes_starting_at_once_on_an_empty_database_migrate_it_once(cluster):
    nodes = [cluster.node(None, start=False) for _ in range(3)]
    threads = [threading.Thread(target=n.start) for n in nodes]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    for node in nodes:
        assert node.alive(), node.stderr()
        assert httpx.get(node.base_url + "/readyz", timeout=10).status_code == 200
    rows = cluster.sql("SELECT version, name, applied_by FROM hands_schema ORDER BY version")
    assert [r[0] for r in rows] == ["1", "2"], rows
    assert len({r[2] for r in rows}) == 1, f"one node applied every migration: {rows}"


def test_a_draining_node_ends_its_turn_within_the_grace_and_hands_the_session_over(cluster):
    model = cluster.model("anthropic", [{"hang": True}, {"text": "picked up elsewhere"}])
    a, b = cluster.node(model), cluster.node(model)
    sid = a.create_session()["id"]
    stream = b.events(sid)
    turn = a.post_message(sid, "wait forever")
    wait_until(lambda: len(model.requests()) >= 1, 30, "the model request")
    assert metric(a, "hands_turns_running") == 1
    started = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: httpx.get(a.base_url + "/readyz", timeout=5).status_code == 503, 10, "readyz to fail")
    assert stream.turn_end(turn, timeout=20)["reason"] == "aborted"
    a.proc.wait(20)
    assert a.proc.returncode == 0, a.stderr()
    assert time.monotonic() - started < 15, "the drain took longer than its grace"
    a.client = None
    assert cluster.sql(f"SELECT count(*) FROM leases WHERE node_id = '{a.name}'") == [["0"]]
    turn2 = b.post_message(sid, "go on")
    assert stream.turn_end(turn2)["reason"] == "completed"
