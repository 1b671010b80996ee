"""The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) against `hands mcp`: a call that
may outlast a client's timeout (here spawn_process of a daemon, which waits until it is ready)
answers a 2026-07-28 client that declares the extension with a task at once; `tasks/get` polls it
to completion, and `tasks/cancel` stops the call and its process.

The official Python SDK (mcp 2.3.0) has no client for the Tasks extension, so this speaks raw
JSON-RPC over the server's stdio. Waits are on events (a file the test creates, the task's status),
in loops bounded in count and time."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import live_processes_with

V = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": V,
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-tasks-test", "version": "0"},
}


class Raw:
    """`hands mcp` with newline-delimited JSON-RPC on its stdin/stdout."""

    def __init__(self, hands: Path, root: Path, marker: str, *extra: str, meta: dict = META):
        env = dict(os.environ, HANDS_TEST_TOKEN=marker, RUST_BACKTRACE="1")
        self.meta = meta
        self.proc = subprocess.Popen(
            [str(hands), "mcp", "--root", str(root), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=root,
        )

    def request(self, method: str, params: dict) -> dict:
        rid = uuid.uuid4().hex
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": dict(params, _meta=self.meta)}
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        for _ in range(10_000):
            line = self.proc.stdout.readline()
            assert line, "hands mcp closed its stdout"
            reply = json.loads(line)
            if reply.get("id") == rid:
                assert "error" not in reply, reply
                return reply["result"]
        raise AssertionError("no reply")

    def poll(self, task_id: str, until: set[str]) -> dict:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            task = self.request("tasks/get", {"taskId": task_id})
            if task["status"] in until:
                return task
            time.sleep(0.1)
        raise AssertionError(f"task {task_id} never reached {until}: {task}")

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture
def raw(hands: Path, root: Path):
    marker = uuid.uuid4().hex
    server = Raw(hands, root, marker)
    server.marker = marker
    yield server
    server.close()


def daemon(root: Path) -> dict:
    # Ready once the test creates `go`.
    return {
        "name": "spawn_process",
        "arguments": {
            "command": "while [ ! -e go ]; do sleep 0.05; done; echo READY; exec sleep 1000",
            "type": "daemon",
            "ready_pattern": "READY",
            "name": "waits",
        },
    }


def test_a_daemon_call_is_a_task_polled_to_completion(raw, root: Path):
    created = raw.request("tools/call", daemon(root))
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    assert created["status"] == "working"
    working = raw.request("tasks/get", {"taskId": task_id})
    assert working["status"] == "working", working
    (root / "go").write_text("")
    done = raw.poll(task_id, {"completed", "failed", "cancelled"})
    assert done["status"] == "completed", done
    text = json.dumps(done["result"])
    assert not done["result"].get("isError"), text
    assert "ready" in text.lower(), text
    assert live_processes_with(raw.marker, exclude={raw.proc.pid}), "the daemon is not running"


def test_a_cancelled_task_stops_the_call_and_its_process(raw, root: Path):
    created = raw.request("tools/call", daemon(root))
    task_id = created["taskId"]
    # The daemon is started (the shell waits for `go`) before it is cancelled.
    deadline = time.monotonic() + 60
    while not live_processes_with(raw.marker, exclude={raw.proc.pid}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert live_processes_with(raw.marker, exclude={raw.proc.pid}), "the daemon never started"
    raw.request("tasks/cancel", {"taskId": task_id})
    cancelled = raw.poll(task_id, {"completed", "failed", "cancelled"})
    assert cancelled["status"] == "cancelled", cancelled
    deadline = time.monotonic() + 30
    while live_processes_with(raw.marker, exclude={raw.proc.pid}) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not live_processes_with(raw.marker, exclude={raw.proc.pid}), "the cancelled call's process lives on"


def test_a_quick_call_is_answered_directly(raw, root: Path):
    result = raw.request("tools/call", {"name": "read_file", "arguments": {"path": "hello.txt"}})
    assert result["resultType"] == "complete", result
    assert "hello world" in json.dumps(result)


def test_an_approval_inside_a_task_is_answered_with_tasks_update(hands: Path, root: Path):
    """Under approval = "ask" a long bash (a timeout over 60 s) is a task whose question is its
    `input_required` state; `tasks/update` with a boolean yes runs it, once."""
    caps = dict(META["io.modelcontextprotocol/clientCapabilities"], elicitation={"form": {}})
    meta = dict(META, **{"io.modelcontextprotocol/clientCapabilities": caps})
    raw = Raw(hands, root, uuid.uuid4().hex, "-c", "approval=ask", meta=meta)
    try:
        call = {"name": "bash", "arguments": {"command": "echo task >> ran.txt", "timeout": 120000}}
        created = raw.request("tools/call", call)
        assert created["resultType"] == "task", created
        asking = raw.poll(created["taskId"], {"input_required", "completed", "failed", "cancelled"})
        assert asking["status"] == "input_required", asking
        (key, request), = asking["inputRequests"].items()
        assert "echo task" in request["params"]["message"], request
        assert not (root / "ran.txt").exists()
        raw.request("tasks/update", {"taskId": created["taskId"],
                                     "inputResponses": {key: {"action": "accept", "content": {"approve": True}}}})
        done = raw.poll(created["taskId"], {"completed", "failed", "cancelled"})
        assert done["status"] == "completed" and not done["result"].get("isError"), done
    finally:
        raw.close()
    assert (root / "ran.txt").read_text() == "task\n"
