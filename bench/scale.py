#!/usr/bin/env python3
"""bench/scale.sh's driver: several `hands serve` nodes on a throwaway PostgreSQL, measured.

1. appends/s across 3 appending processes (the store code every node runs, one `append_event`
   per event) while 500 SSE subscribers spread over 3 `hands serve` nodes follow the sessions;
   each event carries its send time, so each subscriber measures how long an event took to reach
   it through another process, PostgreSQL's NOTIFY and a node (p50/p99/max), and counts that it
   got every event of its session;
2. lease takeover: a node is killed mid-turn; the time until another node ends the turn;
3. memory: 10,000 sessions created and idle on one node (SQLite and PostgreSQL): RSS, and the
   first request to an evicted session;
4. the same appends on SQLite, one process (the single-node reference).
Loopback only; every loop bounded in count and time."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "scale"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))

import httpx  # noqa: E402

from harness import Hands, ScriptedModel, wait_until  # noqa: E402
from pg import Postgres, pg_bin  # noqa: E402

TOKEN = "bench-scale-token"
SECONDS = float(os.environ.get("SCALE_SECONDS", "10"))
SUBSCRIBERS = int(os.environ.get("SCALE_SUBSCRIBERS", "500"))
SESSIONS = 100
IDLE_SESSIONS = int(os.environ.get("SCALE_IDLE_SESSIONS", "10000"))


class Node(Hands):
    def __init__(self, binary, home, root, model, *, store: str, cluster: str = "", url: str | None = None):
        super().__init__(binary, home, root, model)
        self.token = TOKEN
        self.url = url
        config = self.home / ".config" / "hands" / "config.toml"
        head, _, _ = config.read_text().partition("[store]")
        config.write_text(head + "[store]\n" + store + "\n[cluster]\n" + cluster)

    def env(self):
        env = super().env()
        if self.url:
            env["HANDS_STORE_URL"] = self.url
        return env

    def rss_mb(self) -> tuple[float, float]:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        field = lambda name: int(next(l for l in status.splitlines() if l.startswith(name)).split()[1]) / 1024
        return field("VmRSS"), field("VmHWM")


class Subscribers:
    """Many SSE connections read by one thread with a selector: each event's latency."""

    def __init__(self, targets: list[tuple[int, str]]) -> None:
        self.sel = selectors.DefaultSelector()
        self.latencies: list[float] = []
        self.counts: dict[int, int] = {}
        self.buffers: dict[int, bytes] = {}
        self.stop = threading.Event()
        for i, (port, session) in enumerate(targets):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall((f"GET /v1/sessions/{session}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       f"Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n\r\n").encode())
            s.setblocking(False)
            self.sel.register(s, selectors.EVENT_READ, i)
            self.counts[i] = 0
            self.buffers[i] = b""
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            for key, _ in self.sel.select(0.2):
                try:
                    chunk = key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                now = time.time() * 1000
                if not chunk:
                    self.sel.unregister(key.fileobj)
                    continue
                i = key.data
                buf = self.buffers[i] + chunk
                *lines, rest = buf.split(b"\n")
                self.buffers[i] = rest
                for line in lines:
                    if line.startswith(b"data: {") and b'"process_notice"' in line:
                        sent = float(json.loads(line[6:])["text"])
                        self.latencies.append(now - sent)
                        self.counts[i] += 1

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        for key in list(self.sel.get_map().values()):
            key.fileobj.close()


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))] if values else float("nan")


def appenders(example: Path, backend: str, sessions_file: Path, procs: int, url: str | None) -> float:
    env = dict(os.environ, HANDS_STORE_URL=url or "")
    runs = [subprocess.Popen([str(example), backend, str(sessions_file), str(SECONDS), "16"],
                             stdout=subprocess.PIPE, text=True, env=env) for _ in range(procs)]
    total, longest = 0, 0.0
    for run in runs:
        out, _ = run.communicate(timeout=SECONDS + 120)
        fields = dict(f.split("=") for f in out.split())
        total += int(fields["appended"])
        longest = max(longest, float(fields["seconds"]))
    return total / longest


def create_sessions(node: Node, root: Path, n: int) -> list[str]:
    def one(i: int) -> str:
        r = node.client.post("/v1/sessions", json={"root": str(root), "id": f"s{i:05d}"})
        assert r.status_code == 201, r.text
        return r.json()["id"]
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(one, range(n)))


def first_request_ms(node: Node, sessions: list[str]) -> list[float]:
    out = []
    for session in sessions:
        started = time.perf_counter()
        r = node.client.get(f"/v1/sessions/{session}/processes")
        assert r.status_code == 200, r.text
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    binary = Path(os.environ["HANDS_BIN"])
    example = Path(os.environ["APPEND_LOAD"])
    work = Path(tempfile.mkdtemp(prefix="hands-bench-scale-"))
    root = work / "proj"
    root.mkdir()
    pg = Postgres(pg_bin())
    nodes: list[Node] = []
    try:
        # 1. appends across nodes, SSE on three nodes.
        db = pg.create_database()
        url = pg.url(db)
        store = 'backend = "postgres"\npool_size = 16\n'
        cluster = "lease_ms = 3000\nrenew_ms = 1000\nsweep_ms = 500\n"
        model = ScriptedModel("anthropic", [{"hang": True}] * 4, work / "model")
        for i in range(3):
            home = work / f"node-{i}"
            home.mkdir()
            node = Node(binary, home, root, model, store=store, cluster=cluster + f'node_id = "n{i}"\n', url=url)
            nodes.append(node.start())
        sessions = create_sessions(nodes[0], root, SESSIONS)
        sessions_file = work / "sessions.txt"
        sessions_file.write_text("\n".join(sessions) + "\n")
        targets = [(nodes[i % 3].port, sessions[i % SESSIONS]) for i in range(SUBSCRIBERS)]
        subs = Subscribers(targets)
        time.sleep(3)
        rate = appenders(example, "postgres", sessions_file, 3, url)
        time.sleep(2)
        subs.close()
        stored = {s: int(n) for s, n in pg.psql(db, "SELECT id, last_event_id FROM sessions")}
        complete = sum(1 for i, (_, s) in enumerate(targets) if subs.counts[i] == stored[s])
        lat = subs.latencies
        print(f"postgres, 3 appending processes x 16: {rate:,.0f} events/s")
        print(f"SSE, {SUBSCRIBERS} subscribers on 3 nodes: {len(lat):,} deliveries, latency p50 "
              f"{pct(lat, .5):.1f} ms, p99 {pct(lat, .99):.1f} ms, max {max(lat):.1f} ms; "
              f"{complete}/{SUBSCRIBERS} subscribers got every event of their session")

        # 2. lease takeover after a node's death.
        s = nodes[1].create_session()["id"]
        nodes[1].post_message(s, "hang")
        wait_until(lambda: len(model.requests()) >= 1, 30, "the model request")
        stream = nodes[2].events(s)
        killed = time.monotonic()
        nodes[1].proc.send_signal(signal.SIGKILL)
        nodes[1].proc.wait(10)
        stream.wait_type("turn_ended", timeout=30)
        took = time.monotonic() - killed
        print(f"lease takeover after SIGKILL (lease 3.0 s, sweep 0.5 s): turn ended after {took:.2f} s")
        for node in nodes:
            if node.alive():
                node.stop()
        nodes.clear()

        # 3. memory with many idle sessions, and the first request to an evicted one.
        for name, store_cfg, node_url in (
            ("sqlite", f'path = "{work / "idle.db"}"\n', None),
            ("postgres", 'backend = "postgres"\n', pg.url(pg.create_database())),
        ):
            home = work / f"idle-{name}"
            home.mkdir()
            node = Node(binary, home, root, None, store=store_cfg, url=node_url).start()
            nodes.append(node)
            created = time.monotonic()
            ids = create_sessions(node, root, IDLE_SESSIONS)
            created = time.monotonic() - created
            rss, peak = node.rss_mb()
            first = first_request_ms(node, ids[:50])
            print(f"{name}: {IDLE_SESSIONS:,} sessions created in {created:.1f} s; RSS {rss:.0f} MB "
                  f"(peak {peak:.0f} MB); first request to an evicted session: median "
                  f"{statistics.median(first):.1f} ms, max {max(first):.1f} ms")
            node.stop()
            nodes.clear()

        # 4. the single-node reference: the same appends on SQLite, one process.
        sqlite_file = work / "single.db"
        subprocess.run([str(example), f"sqlite:{sqlite_file}", str(sessions_file), "0.1", "1"],
                       capture_output=True)  # creates the schema
        import sqlite3
        con = sqlite3.connect(sqlite_file)
        for session in sessions:
            con.execute("INSERT OR IGNORE INTO projects VALUES ('p', '/p', 0, 0)")
            con.execute("INSERT OR IGNORE INTO sessions (id, project_id, root, mode, created_at_ms, "
                        "updated_at_ms) VALUES (?, 'p', '/p', 'build', 0, 0)", (session,))
        con.commit()
        con.close()
        rate = appenders(example, f"sqlite:{sqlite_file}", sessions_file, 1, None)
        print(f"sqlite, 1 process x 16: {rate:,.0f} events/s")
    finally:
        for node in nodes:
            if node.alive():
                node.stop()
        pg.stop()


if __name__ == "__main__":
    main()
