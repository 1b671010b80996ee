"""Chaos, bounded to 90 s: 30 sessions run turns with tool calls on three nodes (two speak to an
Anthropic-format model, one to an OpenAI-format one) while a node is killed with SIGKILL and
started again every few seconds; event streams follow each session and reconnect with
Last-Event-ID to a live node whenever theirs dies. Afterwards every turn has ended (`completed`
or `aborted`), every session's events are numbered 1..N with no gap or repeat, every stream saw
exactly the stored events, and every transcript, sent on in either wire format, answers each
tool call."""

from __future__ import annotations

import json
import random
import signal
import threading
import time

import httpx

from harness import EventStream, tool_calls_in, tool_results, transcript_is_valid, wait_until

SESSIONS = 30
CHAOS_S = 40.0  # killing and restarting; the rest of the 90 s settles and checks
BUDGET_S = 90.0


def steps(n: int) -> list[dict]:
    """Turns of a tool call (a short bash, so that kills land mid-call) then text, many times."""
    out: list[dict] = []
    for i in range(n):
        out.append({"text": f"step {i}", "tool_calls": [{"name": "bash", "input": {"command": "sleep 0.3; echo ok"}}],
                    "chunk_delay_ms": 20})
        out.append({"text": f"done {i}", "chunk_delay_ms": 20})
    return out


class Follower:
    """One session's event stream that reconnects to a live node with Last-Event-ID."""

    def __init__(self, nodes, session: str) -> None:
        self.nodes = nodes
        self.session = session
        self.events: list[tuple[int, dict]] = []
        self.reconnects = 0
        self.stream: EventStream | None = None
        self.lock = threading.Lock()
        self.connect()

    def connect(self) -> None:
        live = [n for n in self.nodes if n.alive() and n.client is not None]
        node = random.choice(live)
        last = self.events[-1][0] if self.events else None
        try:
            self.stream = EventStream(node.base_url, node.token, self.session, last_event_id=last,
                                      after=None if last is not None else 0)
        except AssertionError:
            self.stream = None

    def poll(self) -> None:
        """Take what the stream has; reconnect when it ended."""
        stream = self.stream
        if stream is not None:
            with stream._cond:
                fresh = list(stream.events)
                stream.events.clear()
            for e in fresh:
                self.events.append((e.id, e.data))
        if stream is None or (stream.ended.is_set() and not stream.events):
            if stream is not None:
                stream._closing = True
                stream._client.close()
            self.reconnects += 1
            self.connect()

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def test_chaos_kills_lose_no_event_and_leave_no_turn_running(cluster):
    anthropic = cluster.model("anthropic", steps(400))
    openai = cluster.model("openai", steps(400))
    nodes = [cluster.node(m, lease_ms=2000, renew_ms=400, sweep_ms=300) for m in (anthropic, openai, anthropic)]
    for node in nodes:
        node.listen = f"127.0.0.1:{node.port}"  # restarted on the same port
    sessions = [random.choice(nodes).create_session()["id"] for _ in range(SESSIONS)]
    followers = [Follower(nodes, s) for s in sessions]
    stop = threading.Event()
    posted: dict[str, list[str]] = {s: [] for s in sessions}
    errors: list[str] = []

    def drive(session: str) -> None:
        while not stop.is_set():
            live = [n for n in nodes if n.alive() and n.client is not None]
            if not live:
                time.sleep(0.2)
                continue
            node = random.choice(live)
            try:
                r = httpx.post(f"{node.base_url}/v1/sessions/{session}/messages", json={"text": "work"},
                               headers={"Authorization": f"Bearer {node.token}"}, timeout=20)
            except httpx.HTTPError:
                time.sleep(0.2)
                continue
            if r.status_code == 202:
                posted[session].append(r.json()["turn_id"])
            elif r.status_code not in (409, 502, 503):
                errors.append(f"POST message to {node.name}: {r.status_code} {r.text}")
            time.sleep(random.uniform(0.3, 1.0))

    drivers = [threading.Thread(target=drive, args=(s,), daemon=True) for s in sessions]
    for t in drivers:
        t.start()
    kills = 0
    restarting: set[str] = set()

    def restart(node) -> None:
        time.sleep(random.uniform(0.5, 1.5))
        try:
            node.start()
        finally:
            restarting.discard(node.name)

    restarts = []
    deadline = time.monotonic() + BUDGET_S  # chaos and settling
    chaos_end = time.monotonic() + CHAOS_S
    while time.monotonic() < chaos_end:
        time.sleep(random.uniform(2.0, 3.5))
        for f in followers:
            f.poll()
        up = [n for n in nodes if n.name not in restarting and n.alive()]
        if len(up) < 2:
            continue  # one node always answers
        victim = random.choice(up)
        restarting.add(victim.name)
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(10)
        kills += 1
        t = threading.Thread(target=restart, args=(victim,), daemon=True)
        t.start()
        restarts.append(t)
    for t in restarts:
        t.join(60)
    for f in followers:
        f.poll()
    stop.set()
    for t in drivers:
        t.join(30)
    # Settle: the last kill's turns end once its leases expire (2 s) and a sweep finds them.
    def all_ended() -> bool:
        rows = cluster.sql("SELECT count(*) FROM turns WHERE status = 'running'")
        return rows == [["0"]]
    wait_until(all_ended, max(20.0, deadline - time.monotonic()), "every turn to end", interval=0.5)
    assert not errors, errors[:5]
    assert kills >= 2, kills

    statuses = cluster.sql("SELECT status, count(*) FROM turns GROUP BY status")
    assert {s for s, _ in statuses} <= {"completed", "aborted"}, statuses
    total = sum(int(n) for _, n in statuses)
    assert total >= SESSIONS, statuses
    turn_ids = {row[0] for row in cluster.sql("SELECT id FROM turns")}
    accepted = {t for v in posted.values() for t in v}
    assert accepted <= turn_ids, f"accepted messages without a turn: {accepted - turn_ids}"

    for session, follower in zip(sessions, followers):
        stored = [(int(i), json.loads(d)) for i, d in
                  cluster.sql(f"SELECT id, data FROM events WHERE session_id = '{session}' ORDER BY id")]
        ids = [i for i, _ in stored]
        assert ids == list(range(1, len(ids) + 1)), f"{session}: gap or repeat in {ids}"
        started = [d["turn_id"] for _, d in stored if d["type"] == "turn_started"]
        ended = [d["turn_id"] for _, d in stored if d["type"] == "turn_ended"]
        assert sorted(started) == sorted(ended) == sorted(set(started)), f"{session}: {started} vs {ended}"
        # The follower catches up with the store, then must hold exactly the stored events.
        def caught_up() -> bool:
            follower.poll()
            return bool(follower.events) and follower.events[-1][0] >= ids[-1]
        wait_until(caught_up, 20, f"{session}'s stream to catch up", interval=0.2)
        got = [i for i, _ in follower.events]
        assert got == ids, f"{session}: stream saw {len(got)} events, the store has {len(ids)}"
        for (_, data), (_, want) in zip(follower.events, stored):
            assert {k: v for k, v in data.items() if k not in ("id", "session_id", "at_ms")} == want
        assert transcript_is_valid(nodes[0].transcript(session)) == [], session
    reconnects = sum(f.reconnects for f in followers)
    # Each kill cuts the streams of the killed node (about a third of them); a follower notices
    # at its next poll, so several kills between two polls count once: at least one per kill.
    assert reconnects >= kills, f"the kills should have cut streams: {reconnects} reconnects, {kills} kills"
    print(f"chaos: {kills} kills, {reconnects} reconnects, {total} turns {statuses}")

    # Every transcript, sent on to a model in either wire format, answers each of its calls.
    for model, node in ((anthropic, nodes[0]), (openai, nodes[1])):
        before = len(model.requests())
        sample = sessions[:5]
        for session in sample:
            turn = node.post_message(session, "one more")
            wait_until(lambda: cluster.sql(f"SELECT status FROM turns WHERE id = '{turn}'") != [["running"]],
                       30, "the last turn")
        for request in model.requests()[before:]:
            calls = {c[0] for m in request["messages"] if m["role"] == "assistant"
                     for c in tool_calls_in(model.fmt, m)}
            answered = set()
            for i in range(len(request["messages"])):
                answered |= {r.call_id for r in tool_results(model.fmt, {"messages": request["messages"][: i + 1]})}
            assert calls <= answered, f"{model.fmt}: unanswered calls {calls - answered}"
    for f in followers:
        f.close()
    assert time.monotonic() < deadline + 60, "the chaos scenario overran its budget"
