"""MCP 2026-07-28 against hands (issue 33): no initialize, protocol version and capabilities in each
request's `_meta`, and every question to the user as an input-required result (SEP-2322) that the
client answers by retrying with `inputResponses` and the echoed `requestState`.

Over stdio the official Python SDK's `Client(mode="2026-07-28")` drives hands: it answers each
input request through its elicitation callback and retries by itself; the tampered retry uses its
`session.call_tool(..., allow_input_required=True)` to drive the rounds by hand. Over HTTP the
requests are raw JSON-RPC POSTs (http.client), so the test sees that no `Mcp-Session-Id` is sent or given
and that the `Mcp-Method`/`Mcp-Name` headers are accepted."""

from __future__ import annotations

import http.client
import json
import uuid
from pathlib import Path

import pytest

from conftest import start_serve, stop_process

pytestmark = pytest.mark.anyio

V = "2026-07-28"


def stdio_params(hands: Path, root: Path, *extra: str):
    from mcp import StdioServerParameters

    args = ["mcp", "--root", str(root), "-c", "approval=ask", *extra]
    return StdioServerParameters(command=str(hands), args=args, env={"RUST_BACKTRACE": "1"}, cwd=str(root))


def text_of(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


class Answers:
    """An elicitation callback that answers from a list and records what it was asked."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.asked: list = []

    async def __call__(self, context, params):
        from mcp import types

        self.asked.append(params)
        action, content = self.answers.pop(0)
        return types.ElicitResult(action=action, content=content)


async def test_bash_approved_through_input_required_runs_once(hands: Path, root: Path):
    from mcp import Client

    answers = Answers(("accept", {"approve": True}))
    async with Client(stdio_params(hands, root), mode=V, elicitation_callback=answers) as client:
        result = await client.call_tool("bash", {"command": "echo run >> ran.txt; echo done"})
    assert not result.is_error, text_of(result)
    assert "done" in text_of(result)
    assert len(answers.asked) == 1, answers.asked
    assert "echo run" in answers.asked[0].message
    assert (root / "ran.txt").read_text() == "run\n"


async def test_bash_declined_through_input_required_runs_nothing(hands: Path, root: Path):
    from mcp import Client

    answers = Answers(("decline", None))
    async with Client(stdio_params(hands, root), mode=V, elicitation_callback=answers) as client:
        result = await client.call_tool("bash", {"command": "echo run >> ran.txt"})
    assert result.is_error, text_of(result)
    assert len(answers.asked) == 1
    assert not (root / "ran.txt").exists()


async def test_an_answer_that_is_no_boolean_true_runs_nothing(hands: Path, root: Path):
    # The red-team rule of tests/redteam/approve-malformed-answer, through input-required too.
    from mcp import Client

    answers = Answers(("accept", {"approve": "true"}))
    async with Client(stdio_params(hands, root), mode=V, elicitation_callback=answers) as client:
        result = await client.call_tool("bash", {"command": "echo run >> ran.txt"})
    assert result.is_error, text_of(result)
    assert not (root / "ran.txt").exists()


async def test_a_retry_with_other_arguments_is_refused(hands: Path, root: Path):
    from mcp import Client, MCPError, types

    async with Client(stdio_params(hands, root), mode=V, elicitation_callback=Answers()) as client:
        asked = await client.session.call_tool(
            "bash", {"command": "echo harmless > ran.txt"}, allow_input_required=True
        )
        assert isinstance(asked, types.InputRequiredResult), asked
        (key,) = asked.input_requests.keys()
        yes = {key: types.ElicitResult(action="accept", content={"approve": True})}
        with pytest.raises(MCPError) as refused:
            await client.session.call_tool(
                "bash",
                {"command": "echo evil > evil.txt"},
                input_responses=yes,
                request_state=asked.request_state,
                allow_input_required=True,
            )
        assert "another call" in str(refused.value)
        # The call that asked was told no: the genuine retry finds nothing to resume.
        with pytest.raises(MCPError) as gone:
            await client.session.call_tool(
                "bash",
                {"command": "echo harmless > ran.txt"},
                input_responses=yes,
                request_state=asked.request_state,
                allow_input_required=True,
            )
        assert "unknown or expired" in str(gone.value)
    assert not (root / "evil.txt").exists()
    assert not (root / "ran.txt").exists()


async def test_a_retry_without_the_answer_is_asked_again(hands: Path, root: Path):
    from mcp import Client, types

    async with Client(stdio_params(hands, root), mode=V, elicitation_callback=Answers()) as client:
        args = {"command": "echo once >> ran.txt"}
        asked = await client.session.call_tool("bash", args, allow_input_required=True)
        again = await client.session.call_tool(
            "bash", args, request_state=asked.request_state, allow_input_required=True
        )
        assert isinstance(again, types.InputRequiredResult)
        assert again.input_requests.keys() == asked.input_requests.keys()
        (key,) = again.input_requests.keys()
        yes = {key: types.ElicitResult(action="accept", content={"approve": True})}
        done = await client.session.call_tool(
            "bash", args, input_responses=yes, request_state=again.request_state, allow_input_required=True
        )
        assert isinstance(done, types.CallToolResult) and not done.is_error, done
    assert (root / "ran.txt").read_text() == "once\n"


async def test_ask_user_through_input_required(hands: Path, root: Path):
    from mcp import Client

    answers = Answers(("accept", {"answer": "blue"}))
    async with Client(stdio_params(hands, root, "-c", "approval=auto"), mode=V, elicitation_callback=answers) as client:
        result = await client.call_tool("ask_user", {"question": "Which colour?", "options": ["red", "blue"]})
    assert not result.is_error, text_of(result)
    assert "blue" in text_of(result)
    assert answers.asked[0].message == "Which colour?"


# --- HTTP: raw JSON-RPC, no session ---------------------------------------------------------------


def meta(elicitation: bool = True) -> dict:
    caps = {"elicitation": {"form": {}}} if elicitation else {}
    return {
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
    }


def post(srv, method: str, params: dict, name: str | None = None, status: int = 200) -> dict:
    headers = {
        "Authorization": f"Bearer {srv.bearer}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": V,
        "Mcp-Method": method,
    }
    if name:
        headers["Mcp-Name"] = name
    body = json.dumps({"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params})
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    try:
        conn.request("POST", "/mcp", body=body, headers=headers)
        response = conn.getresponse()
        text = response.read().decode()
        got = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    assert response.status == status, (response.status, text)
    assert "mcp-session-id" not in got, got
    if got.get("content-type", "").startswith("text/event-stream"):
        messages = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
        finals = [m for m in messages if "result" in m or "error" in m]
        assert finals, text
        return finals[-1]
    return json.loads(text)


@pytest.fixture
def ask_server(hands: Path, root: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HANDS_APPROVAL", "ask")
    srv = start_serve(hands, root, tmp_path / "serve.log")
    yield srv
    crashed = not srv.alive()
    stop_process(srv.proc)
    assert not crashed, srv.stderr()


def test_http_bash_approval_without_a_session(ask_server, root: Path):
    srv = ask_server
    listed = post(srv, "tools/list", {"_meta": meta()})
    assert any(t["name"] == "bash" for t in listed["result"]["tools"]), listed
    args = {"command": "echo http >> ran.txt; echo done"}
    call = {"name": "bash", "arguments": args, "_meta": meta()}
    first = post(srv, "tools/call", call, name="bash")["result"]
    assert first["resultType"] == "input_required", first
    (key, request), = first["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert "echo http" in request["params"]["message"]
    assert not (root / "ran.txt").exists()
    # A retry naming another command is refused.
    tampered = dict(call, arguments={"command": "echo evil > evil.txt"}, requestState=first["requestState"],
                    inputResponses={key: {"action": "accept", "content": {"approve": True}}})
    refused = post(srv, "tools/call", tampered, name="bash")
    assert "error" in refused and "another call" in refused["error"]["message"], refused
    assert not (root / "evil.txt").exists()
    # Asked again, answered yes: it runs once.
    second = post(srv, "tools/call", call, name="bash")["result"]
    (key, _), = second["inputRequests"].items()
    retry = dict(call, requestState=second["requestState"],
                 inputResponses={key: {"action": "accept", "content": {"approve": True}}})
    done = post(srv, "tools/call", retry, name="bash")["result"]
    assert done.get("resultType", "complete") == "complete", done
    assert not done.get("isError"), done
    assert "done" in json.dumps(done)
    assert (root / "ran.txt").read_text() == "http\n"
    assert not (root / "evil.txt").exists()


# --- progress: a heartbeat with the client's token ----------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", V])
async def test_a_long_call_sends_progress_with_the_clients_token(hands: Path, root: Path, mode: str):
    """A call longer than the heartbeat interval (HANDS_MCP_HEARTBEAT_MS, short here) sends
    progress; the SDK calls progress_callback only for notifications that carry the token it
    sent, so every one counted here carried it. The call ends on an event (a file the test
    writes), not on a clock."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=str(hands),
        args=["mcp", "--root", str(root)],
        env={"RUST_BACKTRACE": "1", "HANDS_MCP_HEARTBEAT_MS": "50"},
        cwd=str(root),
    )
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))
        if len(seen) == 3:
            (root / "go").write_text("")

    async with Client(params, mode=mode) as client:
        result = await client.call_tool(
            "bash",
            {"command": "for i in $(seq 600); do [ -e go ] && break; sleep 0.1; done; echo waited", "timeout": 120000},
            progress_callback=on_progress,
        )
    assert not result.is_error, text_of(result)
    assert (root / "go").exists(), seen
    assert len(seen) >= 3, seen
    values = [p for p, _, _ in seen]
    assert values == sorted(values) and len(set(values)) == len(values), values
    assert any(m and "still running" in m for _, _, m in seen), seen


# --- sub-agents: the configured model before the client's sampling ------------------------------


@pytest.fixture
def scripted_model(tmp_path: Path):
    """tests/agent/scripted_model.py (Anthropic's wire format) answering every request with one
    text; yields the `-c` flags that make it hands' `[model]`."""
    import subprocess
    import sys
    import time as _time

    from conftest import REPO, stop_process

    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "The configured model says 7."}] * 4))
    port_file = tmp_path / "model-port"
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests/agent/scripted_model.py"), "--format", "anthropic", "--port", "0",
         "--script", str(script), "--port-file", str(port_file), "--log", str(tmp_path / "model.jsonl")],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = _time.monotonic() + 30
    while not (port_file.exists() and port_file.read_text().strip()) and _time.monotonic() < deadline:
        assert proc.poll() is None, "scripted_model.py exited"
        _time.sleep(0.02)
    port = port_file.read_text().strip()
    yield [
        "-c", "model.provider=anthropic", "-c", "model.model=claude-sonnet-4-5",
        "-c", f"model.base_url=http://127.0.0.1:{port}", "-c", "model.api_key_env=HANDS_TEST_MODEL_KEY",
    ]
    stop_process(proc)


@pytest.mark.parametrize("mode", ["legacy", V])
async def test_spawn_subagent_prefers_the_configured_model(hands: Path, root: Path, scripted_model, mode: str):
    """A model is configured and the (legacy) client offers sampling too: the sub-agent runs on the
    configured model, the client is never asked to sample, and the result says which model it
    was. A 2026-07-28 client (no initialize, so no sampling) gets spawn_subagent the same way."""
    from mcp import Client, StdioServerParameters, types

    sampled: list = []

    async def sample(context, params):
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sampled"), model="s", stop_reason="endTurn"
        )

    params = StdioServerParameters(
        command=str(hands),
        args=["mcp", "--root", str(root), *scripted_model],
        env={"RUST_BACKTRACE": "1", "HANDS_TEST_MODEL_KEY": "k"},
        cwd=str(root),
    )
    async with Client(params, mode=mode, sampling_callback=sample) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "spawn_subagent" in names, names
        result = await client.call_tool("spawn_subagent", {"prompt": "What does it say?"})
    text = text_of(result)
    assert not result.is_error, text
    assert "The configured model says 7." in text, text
    assert "[sub-agent model: the one configured for hands]" in text, text
    assert not sampled, "the client was asked to sample although a model is configured"


def test_http_a_task_without_a_session(hands: Path, root: Path, tmp_path: Path):
    """Over `hands serve` with no session: spawn_process of a daemon is a task, and `tasks/get`
    in later requests (each its own, stateless) polls it to completion."""
    import time as _time

    srv = start_serve(hands, root, tmp_path / "serve.log")
    try:
        caps = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        m = dict(meta(elicitation=False), **{"io.modelcontextprotocol/clientCapabilities": caps})
        args = {"command": "while [ ! -e go ]; do sleep 0.05; done; echo READY; exec sleep 1000",
                "type": "daemon", "ready_pattern": "READY"}
        created = post(srv, "tools/call", {"name": "spawn_process", "arguments": args, "_meta": m}, name="spawn_process")["result"]
        assert created["resultType"] == "task", created
        (root / "go").write_text("")
        deadline = _time.monotonic() + 120
        task = created
        while task["status"] not in ("completed", "failed", "cancelled") and _time.monotonic() < deadline:
            _time.sleep(0.1)
            task = post(srv, "tasks/get", {"taskId": created["taskId"], "_meta": m}, name=created["taskId"])["result"]
        assert task["status"] == "completed", task
        assert "ready" in json.dumps(task["result"]).lower(), task
    finally:
        crashed = not srv.alive()
        stop_process(srv.proc)
        assert not crashed, srv.stderr()
