"""OpenTelemetry traces of the real `hands` binary, received by a real OTLP receiver (receiver.py:
OTLP/HTTP protobuf and OTLP/gRPC, decoded with opentelemetry-proto). The only stand-in is the model
(tests/agent/scripted_model.py, through tests/e2e/harness.py)."""

from __future__ import annotations

import json
import os
import queue
import secrets
import string
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "e2e"))
from harness import KEY_ENV, ScriptedModel, hands_binary, user_config  # noqa: E402

from receiver import Receiver  # noqa: E402

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
EXIT_TIMEOUT = 60


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def canary() -> str:
    """A GitHub token's shape: the redactor's rules hide it as [redacted:github_token]."""
    return "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(36))


def make_home(tmp: Path, model: ScriptedModel | None = None, extra: str = "") -> Path:
    home = tmp / "home"
    (home / ".config" / "hands").mkdir(parents=True)
    config = user_config(model, home / "store" / "sessions.db", "auto", extra)
    (home / ".config" / "hands" / "config.toml").write_text(config)
    return home


def env_for(home: Path, otel: dict[str, str], model: ScriptedModel | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HANDS_", "OTEL_"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        HANDS_STATE_DIR=str(home / "state"),
    )
    if model is not None:
        env[KEY_ENV] = model.key
    env.update(otel)
    return env


def project(tmp: Path, text: str = "hello from the project\n") -> Path:
    root = tmp / "project"
    root.mkdir()
    (root / "notes.txt").write_text(text)
    return root


class McpStdio:
    """`hands mcp` over stdin/stdout: newline-delimited JSON-RPC."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(hands_binary()), "--root", str(root), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=root,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "otel-test", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                message = json.loads(self.lines.get(timeout=1))
            except queue.Empty:
                assert self.proc.poll() is None, self.stderr()
                continue
            if message.get("id") == self.next_id:
                assert "error" not in message, message
                return message["result"]
        raise AssertionError(f"no answer to {method}")

    def call(self, name: str, args: dict, meta: dict | None = None) -> dict:
        params: dict = {"name": name, "arguments": args}
        if meta is not None:
            params["_meta"] = meta
        return self.request("tools/call", params)

    def threads(self) -> list[str]:
        task = Path(f"/proc/{self.proc.pid}/task")
        names = []
        for t in task.iterdir():
            try:
                names.append((t / "comm").read_text().strip())
            except OSError:
                pass
        return names

    def close(self) -> int:
        """Close stdin (EOF ends `hands mcp`, which flushes its spans) and wait."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(EXIT_TIMEOUT)

    def stderr(self) -> str:
        if self.proc.poll() is None or self.proc.stderr is None:
            return ""
        return self.proc.stderr.read().decode(errors="replace")[-3000:]


def test_a_run_exports_its_turn_with_the_model_request_and_the_tool_call_as_children(tmp_path, receiver):
    """(1) `hands run` over OTLP/HTTP protobuf: one turn, two model requests, one tool call."""
    steps = [
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}],
         "usage": {"input_tokens": 123, "output_tokens": 45}},
        {"text": "The notes say hello.", "usage": {"input_tokens": 200, "output_tokens": 7}},
    ]
    model = ScriptedModel("anthropic", steps, tmp_path / "model")
    try:
        home = make_home(tmp_path, model)
        root = project(tmp_path)
        env = env_for(home, {
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.http_port}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        }, model)
        done = subprocess.run([str(hands_binary()), "--root", str(root), "run", "read the notes"],
                              env=env, cwd=root, capture_output=True, timeout=EXIT_TIMEOUT)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
    finally:
        model.stop()
    # Flushed before the process exited: everything is there already.
    turns = receiver.named("invoke_agent hands")
    chats = receiver.named("chat claude-e2e")
    tools = receiver.named("execute_tool read_file")
    assert len(turns) == 1 and len(chats) == 2 and len(tools) == 1, [s.name for s in receiver.spans]
    turn, tool = turns[0], tools[0]
    assert {s.via for s in receiver.spans} == {"http"}
    assert turn.parent_span_id == "", "a turn of `hands run` is a root"
    for child in [*chats, tool]:
        assert child.trace_id == turn.trace_id
        assert child.parent_span_id == turn.span_id, child.name
    a = turn.attributes
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["hands.mode"] == "build"
    assert a["hands.turn.id"] and a["hands.session.id"] == a["gen_ai.conversation.id"]
    assert a["hands.turn.outcome"] == "completed" and a["hands.turn.steps"] == 2
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (323, 52)
    first = min(chats, key=lambda s: s.start_ns)
    c = first.attributes
    assert c["gen_ai.provider.name"] == "anthropic" and c["gen_ai.request.model"] == "claude-e2e"
    assert (c["gen_ai.usage.input_tokens"], c["gen_ai.usage.output_tokens"]) == (123, 45)
    assert c["hands.model.outcome"] == "ok" and c["gen_ai.response.finish_reasons"] == "tool_call"
    assert c["hands.model.latency_ms"] >= 0 and first.kind == 3  # SPAN_KIND_CLIENT
    t = tool.attributes
    assert t["gen_ai.tool.name"] == "read_file" and t["hands.tool.outcome"] == "ok"
    assert t["hands.tool.result_bytes"] > len("hello from the project")
    assert isinstance(t["hands.tool.duration_ms"], int) and c["gen_ai.request.max_tokens"] > 0
    assert t["hands.turn.id"] == a["hands.turn.id"]
    assert "gen_ai.tool.call.arguments" not in t and "gen_ai.tool.call.result" not in t
    assert first.end_ns <= tool.start_ns, "the tool ran after the model asked for it"
    assert turn.resource["service.name"] == "hands"


def test_mcp_tool_calls_continue_the_clients_trace_over_grpc(tmp_path, receiver):
    """(2) `hands mcp` over gRPC: `_meta.traceparent` makes the tool span the client's child; a
    malformed one is ignored (the call works, its span is a root)."""
    home = make_home(tmp_path)
    root = project(tmp_path)
    env = env_for(home, {
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.grpc_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_SERVICE_NAME": "hands-under-test",
    })
    mcp = McpStdio(root, env)
    result = mcp.call("read_file", {"path": "notes.txt"},
                      {"traceparent": TRACEPARENT, "tracestate": "vendor=1"})
    assert not result.get("isError"), result
    result = mcp.call("read_file", {"path": "notes.txt"}, {"traceparent": "00-not-a-trace-01"})
    assert not result.get("isError"), result
    result = mcp.call("read_file", {"path": "missing.txt"})
    assert result.get("isError"), result
    assert mcp.close() == 0, mcp.stderr()
    tools = sorted(receiver.named("execute_tool read_file"), key=lambda s: s.start_ns)
    assert len(tools) == 3, [s.name for s in receiver.spans]
    assert {s.via for s in tools} == {"grpc"}
    joined, malformed, failed = tools
    assert joined.trace_id == TRACE_ID and joined.parent_span_id == PARENT_ID
    assert malformed.trace_id != TRACE_ID and malformed.parent_span_id == ""
    assert failed.parent_span_id == ""
    assert joined.attributes["hands.tool.outcome"] == "ok"
    assert failed.attributes["hands.tool.outcome"] == "error" and failed.status_code == 2
    assert joined.attributes["gen_ai.tool.call.id"].startswith("mcp-")
    assert joined.resource["service.name"] == "hands-under-test"


@pytest.mark.parametrize("capture", [False, True])
def test_a_canary_secret_never_reaches_the_collector(tmp_path, receiver, capture):
    """(3) A secret read from a file: absent from every byte received with content capture off;
    with it on the result is there, redacted."""
    secret = canary()
    extra = "\n[otel]\ncapture_content = true\n" if capture else ""
    home = make_home(tmp_path, None, extra)
    root = project(tmp_path, f"token = {secret}\n")
    env = env_for(home, {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.http_port}"})
    mcp = McpStdio(root, env)
    result = mcp.call("read_file", {"path": "notes.txt"})
    assert secret not in json.dumps(result) and "[redacted:github_token]" in json.dumps(result)
    result = mcp.call("bash", {"command": f"echo {secret} >&2; echo done"})
    assert mcp.close() == 0, mcp.stderr()
    assert len(receiver.named("execute_tool read_file")) == 1
    assert len(receiver.named("execute_tool bash")) == 1
    received = receiver.all_bytes()
    assert secret.encode() not in received
    read = receiver.named("execute_tool read_file")[0].attributes
    bash = receiver.named("execute_tool bash")[0].attributes
    if capture:
        assert json.loads(read["gen_ai.tool.call.arguments"]) == {"path": "notes.txt"}
        assert "[redacted:github_token]" in read["gen_ai.tool.call.result"]
        assert "[redacted:github_token]" in bash["gen_ai.tool.call.arguments"]
    else:
        for attrs in (read, bash):
            assert "gen_ai.tool.call.arguments" not in attrs and "gen_ai.tool.call.result" not in attrs
        assert b"[redacted:" not in received and b"notes.txt" not in received


def exporter_threads(names: list[str]) -> list[str]:
    # The runtime the exports run on, and the SDK's batch processor ("OpenTelemetry.Traces…",
    # cut to 15 characters by the kernel).
    return [n for n in names if n.startswith("hands-otel") or n.startswith("OpenTelemetry")]


@pytest.mark.parametrize("how", ["no variables", "OTEL_SDK_DISABLED", "enabled = false"])
def test_with_export_off_no_exporter_runs_and_nothing_connects(tmp_path, receiver, how):
    """(4) Export off: no exporter thread in the running process, no connection to the receiver.
    The same check with export on finds the threads (so that it can fail)."""
    extra = "\n[otel]\nenabled = false\n" if how == "enabled = false" else ""
    home = make_home(tmp_path, None, extra)
    root = project(tmp_path)
    endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.http_port}"}
    otel = {"no variables": {}, "OTEL_SDK_DISABLED": {**endpoint, "OTEL_SDK_DISABLED": "true"},
            "enabled = false": endpoint}[how]
    mcp = McpStdio(root, env_for(home, otel))
    mcp.call("read_file", {"path": "notes.txt"})
    threads = mcp.threads()
    assert threads, "the process' threads are readable"
    assert exporter_threads(threads) == [], threads
    assert mcp.close() == 0, mcp.stderr()
    assert receiver.http_connections == 0 and receiver.spans == []

    # The control: the same process with export on has them, and sends.
    on = McpStdio(root, env_for(home, endpoint) if how != "enabled = false" else env_for(make_home(tmp_path / "on"), endpoint))
    on.call("read_file", {"path": "notes.txt"})
    assert "hands-otel" in exporter_threads(on.threads()), on.threads()
    assert on.close() == 0, on.stderr()
    assert receiver.http_connections >= 1 and receiver.named("execute_tool read_file")


def test_a_session_api_turn_continues_the_traceparent_header(tmp_path, receiver):
    """(5) `hands serve`: the `traceparent` header of the request that starts a turn is the turn's
    parent; SIGTERM flushes the spans."""
    from harness import Hands

    class Traced(Hands):
        def env(self) -> dict[str, str]:
            env = {k: v for k, v in super().env().items() if not k.startswith("OTEL_")}
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{receiver.http_port}"
            return env

    steps = [
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
        {"text": "Done."},
    ]
    model = ScriptedModel("openai", steps, tmp_path / "model")
    root = project(tmp_path)
    hands = Traced(hands_binary(), tmp_path / "home", root, model).start()
    try:
        session = hands.create_session()
        events = hands.events(session["id"])
        answer = hands.request("POST", f"/v1/sessions/{session['id']}/messages",
                               json={"text": "read the notes"}, headers={"traceparent": TRACEPARENT})
        assert answer.status_code == 202, answer.text
        end = events.turn_end(answer.json()["turn_id"])
        assert end["reason"] == "completed", end
        assert hands.stop() == 0, hands.stderr()
    finally:
        if hands.alive():
            hands.stop()
        model.stop()
    turns = receiver.named("invoke_agent hands")
    tools = receiver.named("execute_tool read_file")
    assert len(turns) == 1 and len(tools) == 1, [s.name for s in receiver.spans]
    assert turns[0].trace_id == TRACE_ID and turns[0].parent_span_id == PARENT_ID
    assert tools[0].trace_id == TRACE_ID and tools[0].parent_span_id == turns[0].span_id
    assert turns[0].attributes["hands.session.id"] == session["id"]
    assert {s.name for s in receiver.named("chat gpt-e2e")} == {"chat gpt-e2e"}
