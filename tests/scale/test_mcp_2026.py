"""MCP 2026-07-28 clients need no sticky sessions: each request may reach any node. A request
with no state (tools/list, a first tools/call) is answered where it lands; a retry whose
`requestState` names a call parked on another node, and tasks/get, tasks/update and tasks/cancel
for a task another node runs, are forwarded to that node, which still checks the handle (an answer
never runs a call other than the one that asked). A node that is gone loses what it held: the
client gets a JSON-RPC error saying so, and nothing runs.

The requests are plain JSON-RPC POSTs at /mcp, shaped as tests/mcp/test_protocol_2026.py's
`post()` sends them (no initialize, no Mcp-Session-Id, the protocol version and capabilities in
each request's `_meta`). Waits are on events, in loops bounded in count and time."""

from __future__ import annotations

import base64
import json
import os
import signal
import time
import uuid
from pathlib import Path

import httpx

V = "2026-07-28"
TASKS = {"io.modelcontextprotocol/tasks": {}}


def meta(elicitation: bool = True, tasks: bool = False) -> dict:
    caps: dict = {}
    if elicitation:
        caps["elicitation"] = {"form": {}}
    if tasks:
        caps["extensions"] = TASKS
    return {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "scale-test", "version": "0"},
    }


def post(node, method: str, params: dict, name: str | None = None) -> dict:
    """One JSON-RPC request to `node`'s /mcp; its final message (a result or an error)."""
    headers = {
        "Authorization": f"Bearer {node.token}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": V,
        "Mcp-Method": method,
    }
    if name:
        headers["Mcp-Name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params})
    r = httpx.post(node.base_url + "/mcp", content=body, headers=headers, timeout=60)
    assert r.status_code == 200, (r.status_code, r.text)
    assert "mcp-session-id" not in r.headers, r.headers
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in r.text.splitlines()
                    if line.startswith("data:") and line[5:].strip()]
        finals = [m for m in messages if "result" in m or "error" in m]
        assert finals, r.text
        return finals[-1]
    return r.json()


def call(node, tool: str, args: dict, m: dict | None = None, **extra) -> dict:
    return post(node, "tools/call", {"name": tool, "arguments": args, "_meta": m or meta(), **extra}, name=tool)


def result(reply: dict) -> dict:
    assert "result" in reply, reply
    return reply["result"]


def error(reply: dict) -> str:
    assert "error" in reply, reply
    return reply["error"]["message"]


def node_in(handle: str) -> str:
    """The node a handle names (`n` + URL-safe base64 of the node id + `.`)."""
    assert handle.startswith("n") and "." in handle, handle
    tag = handle[1:].split(".", 1)[0]
    return base64.urlsafe_b64decode(tag + "=" * (-len(tag) % 4)).decode()


def answer(key: str, action: str = "accept", approve: bool = True) -> dict:
    content = {"approve": approve} if action == "accept" else None
    return {key: {"action": action, "content": content} if content else {"action": action}}


def asked(node, args: dict) -> tuple[str, str]:
    """A bash call that asks for approval on `node`: (the answer's key, requestState)."""
    first = result(call(node, "bash", args))
    assert first["resultType"] == "input_required", first
    (key, request), = first["inputRequests"].items()
    assert request["method"] == "elicitation/create", request
    assert args["command"].split(";")[0] in request["params"]["message"], request
    return key, first["requestState"]


def forwarded(node) -> float:
    r = node.request("GET", "/metrics")
    assert r.status_code == 200, r.text
    for line in r.text.splitlines():
        if line.startswith("hands_forwarded_requests_total "):
            return float(line.split()[1])
    raise AssertionError(f"no hands_forwarded_requests_total in /metrics:\n{r.text}")


def ask_nodes(cluster, n: int = 3):
    return [cluster.node(None, approval="ask") for _ in range(n)]


def test_an_approval_asked_on_a_and_answered_on_b_runs_once(cluster, project: Path):
    a, b, c = ask_nodes(cluster)
    # No state: any node answers.
    for node in (a, b, c):
        tools = result(post(node, "tools/list", {"_meta": meta()}))["tools"]
        assert any(t["name"] == "bash" for t in tools), tools
    read = result(call(c, "read_file", {"path": "hello.txt"}))
    assert "hello world" in json.dumps(read), read

    args = {"command": "echo run >> ran.txt; echo done"}
    key, state = asked(a, args)
    assert node_in(state) == a.name, state
    assert not (project / "ran.txt").exists()
    before = forwarded(b)
    done = result(call(b, "bash", args, requestState=state, inputResponses=answer(key)))
    assert done.get("resultType", "complete") == "complete", done
    assert not done.get("isError"), done
    assert "done" in json.dumps(done), done
    assert (project / "ran.txt").read_text() == "run\n"
    assert forwarded(b) == before + 1
    # The same answer again, through a third node: the call was resumed once, nothing waits.
    again = error(call(c, "bash", args, requestState=state, inputResponses=answer(key)))
    assert "unknown or expired" in again, again
    assert (project / "ran.txt").read_text() == "run\n"


def test_a_declined_answer_on_b_runs_nothing(cluster, project: Path):
    a, b, _ = ask_nodes(cluster)
    args = {"command": "echo run >> ran.txt"}
    key, state = asked(a, args)
    declined = result(call(b, "bash", args, requestState=state, inputResponses=answer(key, "decline")))
    assert declined.get("isError"), declined
    assert not (project / "ran.txt").exists()
    # An accept that is no boolean true is a no as well, across nodes too.
    key, state = asked(a, args)
    odd = {key: {"action": "accept", "content": {"approve": "true"}}}
    refused = result(call(b, "bash", args, requestState=state, inputResponses=odd))
    assert refused.get("isError"), refused
    assert not (project / "ran.txt").exists()


def test_a_retry_with_other_arguments_on_b_is_refused(cluster, project: Path):
    a, b, c = ask_nodes(cluster)
    args = {"command": "echo harmless > ran.txt"}
    key, state = asked(a, args)
    evil = {"command": "echo evil > evil.txt"}
    refused = error(call(b, "bash", evil, requestState=state, inputResponses=answer(key)))
    assert "another call" in refused, refused
    # Another tool with the same state, through the third node: refused too.
    other = error(call(c, "write_file", {"path": "evil.txt", "content": "x"}, requestState=state,
                       inputResponses=answer(key)))
    assert "unknown or expired" in other or "another call" in other, other
    # The call that asked was told no: the genuine retry finds nothing to resume.
    gone = error(call(c, "bash", args, requestState=state, inputResponses=answer(key)))
    assert "unknown or expired" in gone, gone
    # A state of a's written as c's: c has no such call (the tag is no capability).
    key, state = asked(a, args)
    forged = "n" + base64.urlsafe_b64encode(c.name.encode()).decode().rstrip("=") + "." + state.split(".", 1)[1]
    assert node_in(forged) == c.name
    lost = error(call(b, "bash", args, requestState=forged, inputResponses=answer(key)))
    assert "unknown or expired" in lost, lost
    assert not (project / "evil.txt").exists()
    assert not (project / "ran.txt").exists()
    # The real one still runs, once, through b.
    done = result(call(b, "bash", args, requestState=state, inputResponses=answer(key)))
    assert not done.get("isError"), done
    assert (project / "ran.txt").read_text() == "harmless\n"


def command_lines_with(needle: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                line = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in line and "pytest" not in line:
            found.append(line)
    return found


def poll(nodes, task_id: str, until: set[str], m: dict) -> dict:
    """tasks/get, turn about on `nodes`, until the status is one of `until`."""
    deadline = time.monotonic() + 120
    task: dict = {}
    for i in range(2000):
        task = result(post(nodes[i % len(nodes)], "tasks/get", {"taskId": task_id, "_meta": m}, name=task_id))
        if task["status"] in until or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert task.get("status") in until, task
    return task


def test_a_task_started_on_a_is_polled_on_b_and_c_and_cancelled_on_b(cluster, project: Path):
    a, b, c = (cluster.node(None) for _ in range(3))
    m = meta(elicitation=False, tasks=True)
    daemon = {"command": "while [ ! -e go ]; do sleep 0.05; done; echo READY; exec sleep 1000",
              "type": "daemon", "ready_pattern": "READY"}
    created = result(call(a, "spawn_process", daemon, m))
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    assert node_in(task_id) == a.name, task_id
    working = result(post(b, "tasks/get", {"taskId": task_id, "_meta": m}, name=task_id))
    assert working["status"] == "working", working
    (project / "go").write_text("")
    done = poll([b, c], task_id, {"completed", "failed", "cancelled"}, m)
    assert done["status"] == "completed", done
    assert "ready" in json.dumps(done["result"]).lower(), done

    # A task id of a's written as c's: c has no such task.
    forged = "n" + base64.urlsafe_b64encode(c.name.encode()).decode().rstrip("=") + "." + task_id.split(".", 1)[1]
    unknown = error(post(b, "tasks/get", {"taskId": forged, "_meta": m}, name=forged))
    assert "unknown task" in unknown, unknown

    # One cancelled through b: the call and its process stop on a.
    marker = uuid.uuid4().hex
    waits = {"command": f"echo {marker} >/dev/null; while [ ! -e never ]; do sleep 0.05; done; echo READY",
             "type": "daemon", "ready_pattern": "READY"}
    created = result(call(a, "spawn_process", waits, m))
    task_id = created["taskId"]
    deadline = time.monotonic() + 60
    while not command_lines_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert command_lines_with(marker), "the daemon never started"
    cancelled = post(b, "tasks/cancel", {"taskId": task_id, "_meta": m}, name=task_id)
    assert "result" in cancelled, cancelled
    task = poll([c, b], task_id, {"completed", "failed", "cancelled"}, m)
    assert task["status"] == "cancelled", task
    deadline = time.monotonic() + 30
    while command_lines_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not command_lines_with(marker), "the cancelled call's process lives on"


def test_an_approval_inside_a_task_on_a_is_answered_on_b(cluster, project: Path):
    a, b, c = ask_nodes(cluster)
    m = meta(elicitation=True, tasks=True)
    created = result(call(a, "bash", {"command": "echo task >> ran.txt", "timeout": 120000}, m))
    assert created["resultType"] == "task", created
    task_id = created["taskId"]
    waiting = poll([b, c], task_id, {"input_required", "completed", "failed", "cancelled"}, m)
    assert waiting["status"] == "input_required", waiting
    (key, request), = waiting["inputRequests"].items()
    assert "echo task" in request["params"]["message"], request
    assert not (project / "ran.txt").exists()
    updated = post(b, "tasks/update", {"taskId": task_id, "inputResponses": answer(key), "_meta": m}, name=task_id)
    assert "result" in updated, updated
    done = poll([c, b], task_id, {"completed", "failed", "cancelled"}, m)
    assert done["status"] == "completed", done
    assert (project / "ran.txt").read_text() == "task\n"


def test_a_killed_owner_loses_its_call_and_task_with_a_clear_error(cluster, project: Path):
    a, b, _ = ask_nodes(cluster)
    args = {"command": "echo run >> ran.txt"}
    key, state = asked(a, args)
    m = meta(elicitation=True, tasks=True)
    created = result(call(a, "bash", {"command": "echo task >> task.txt", "timeout": 120000}, m))
    task_id = created["taskId"]
    poll([a], task_id, {"input_required"}, m)
    assert a.stop(signal.SIGKILL) == -signal.SIGKILL

    lost = error(call(b, "bash", args, requestState=state, inputResponses=answer(key)))
    assert a.name in lost and "gone" in lost and "make the call again" in lost, lost
    gone = error(post(b, "tasks/get", {"taskId": task_id, "_meta": m}, name=task_id))
    assert a.name in gone and "gone" in gone and "lost" in gone, gone
    gone = error(post(b, "tasks/update", {"taskId": task_id, "inputResponses": answer("k"), "_meta": m},
                      name=task_id))
    assert "gone" in gone, gone
    assert not (project / "ran.txt").exists()
    assert not (project / "task.txt").exists()
    # Made again, on b: asked again there, and runs once when approved.
    key, state = asked(b, args)
    assert node_in(state) == b.name
    done = result(call(b, "bash", args, requestState=state, inputResponses=answer(key)))
    assert not done.get("isError"), done
    assert (project / "ran.txt").read_text() == "run\n"
