"""Gemini CLI drives hands over stdio (`hands mcp`) and Streamable HTTP (`hands serve`).

A scripted Gemini model (tests/agent/scripted_model.py --format gemini) makes Gemini CLI call
hands' write_file, read_file, bash and edit_file and then answer; the test checks the file on disk,
that every tool's result came back to the model in the next request (read_file's content, bash's
output, edit_file's diff), and that the answer was printed.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from gemini_support import (
    HandsServe,
    ScriptedModel,
    client_bin,
    client_env,
    gemini_declared_tools,
    gemini_function_responses,
    gemini_settings,
    hands_bin,
    marker,
    run_client,
)

MODEL = "gemini-2.5-flash"
TASK = "Write notes.txt, read it back, run a command on it, edit it, then tell me you are done."


def gemini(work: Path, proj: Path, model: ScriptedModel, prompt: str = TASK, token: str = ""):
    env = client_env(work / "home", GOOGLE_GEMINI_BASE_URL=model.url, GEMINI_API_KEY="fake-gemini-key", HANDS_TOKEN=token)
    argv = [str(client_bin("gemini")), "--model", MODEL, "--approval-mode", "yolo", "--prompt", prompt]
    return run_client(argv, cwd=proj, env=env)


def hands_server(transport: str, work: Path, proj: Path, request: pytest.FixtureRequest) -> tuple[dict, str]:
    """The `mcpServers.hands` entry for `transport`, as in the README, and the bearer token
    (starting `hands serve` for HTTP; Gemini CLI expands `$HANDS_TOKEN` from its environment)."""
    if transport == "stdio":
        return {"command": str(hands_bin()), "args": ["mcp", "--root", str(proj)]}, ""
    serve = HandsServe(root=proj, work=work).start()
    request.addfinalizer(serve.stop)
    request.node.hands_serve = serve
    return {"httpUrl": serve.url, "headers": {"Authorization": "Bearer $HANDS_TOKEN"}}, serve.token


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    (tmp_path / "home").mkdir()
    return tmp_path


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_gemini_writes_reads_runs_and_edits_through_hands(transport: str, work: Path, request: pytest.FixtureRequest) -> None:
    proj = work / "proj"
    mark, answer = marker(), marker()
    steps = [
        {"text": "Writing the notes.", "tool_calls": [{"name": "mcp_hands_write_file", "input": {"path": "notes.txt", "content": "alpha line\nbeta line\n"}}]},
        {"tool_calls": [{"name": "mcp_hands_read_file", "input": {"path": "notes.txt"}}]},
        # The marker's `-42` comes from the shell: only bash's output can carry `<mark>-42`.
        {"tool_calls": [{"name": "mcp_hands_bash", "input": {"command": f"cat notes.txt && echo {mark}-$((6*7))"}}]},
        {"tool_calls": [{"name": "mcp_hands_edit_file", "input": {"path": "notes.txt", "old_string": "beta line", "new_string": "gamma line"}}]},
        {"text": f"All done: {answer}."},
    ]
    model = ScriptedModel("gemini", steps, work).start()
    request.addfinalizer(model.stop)
    server, token = hands_server(transport, work, proj, request)
    gemini_settings(work / "home", server)

    run = gemini(work, proj, model, token=token)

    assert run.returncode == 0, run.describe()
    requests = model.requests()
    assert requests, f"Gemini CLI never asked the model\n{run.describe()}"
    offered = gemini_declared_tools(requests[0])
    for tool in ("mcp_hands_write_file", "mcp_hands_read_file", "mcp_hands_bash", "mcp_hands_edit_file"):
        assert tool in offered, f"{tool} not offered to the model over {transport}: {offered}\n{run.describe()}"
    assert len(requests) == len(steps), f"{len(requests)} model requests, expected {len(steps)}\n{run.describe()}"

    # Each tool's result is the newest functionResponse of the request after its call.
    expected = [
        ("mcp_hands_write_file", ["notes.txt"]),
        ("mcp_hands_read_file", ["alpha line", "beta line"]),
        ("mcp_hands_bash", [f"{mark}-42", "alpha line"]),
        ("mcp_hands_edit_file", ["-beta line", "+gamma line"]),
    ]
    for i, (name, texts) in enumerate(expected, start=1):
        responses = gemini_function_responses(requests[i])
        assert len(responses) == i, f"request {i} carries {len(responses)} function responses, expected {i}"
        newest = responses[-1]
        assert newest.get("name") == name, newest
        shown = json.dumps(newest["response"], ensure_ascii=False)
        for text in texts:
            assert text in shown, f"{name}'s result did not reach the model: {text!r} missing from {shown}"
        assert '"error"' not in shown, f"{name} failed: {shown}"

    assert (proj / "notes.txt").read_text() == "alpha line\ngamma line\n"
    assert answer in run.stdout, run.describe()
    for noise in ("Unexpected end of JSON input", "not connected", "Error connecting to MCP server", "MCP issues detected"):
        assert noise not in run.stderr, run.describe()
    serve = getattr(request.node, "hands_serve", None)
    if serve is not None:
        # A whole Gemini session over HTTP leaves no warning (and no colour) in the log.
        logged = serve.stderr.read_text()
        assert "WARN" not in logged and "\x1b" not in logged, logged


def test_gemini_sees_hands_schemas_without_warnings(work: Path, request: pytest.FixtureRequest) -> None:
    """Gemini CLI validates hands' tool schemas with ajv: no `unknown format` line (non-standard
    `format` values such as `uint64` are what it complains about)."""
    proj = work / "proj"
    model = ScriptedModel("gemini", [{"text": "Nothing to do."}], work).start()
    request.addfinalizer(model.stop)
    gemini_settings(work / "home", hands_server("stdio", work, proj, request)[0])

    run = gemini(work, proj, model, prompt="Say nothing.")

    assert run.returncode == 0, run.describe()
    assert "mcp_hands_bash" in gemini_declared_tools(model.requests()[0])
    warnings = [line for line in run.stderr.splitlines() if "unknown format" in line]
    assert not warnings, f"{len(warnings)} schema warnings, e.g. {warnings[:3]}"


def post(url: str, body: dict, key: str | None) -> tuple[int, str, bytes]:
    headers = {"content-type": "application/json", **({"x-goog-api-key": key} if key else {})}
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.headers.get("content-type", ""), response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("content-type", ""), err.read()


def test_scripted_gemini_model_speaks_both_generate_routes(work: Path, request: pytest.FixtureRequest) -> None:
    """The scripted model's Gemini format on its own: the key check, the streamed and the whole
    answer of a step, Google's error shape."""
    steps = [
        {"text": "Reading it.", "tool_calls": [{"name": "mcp_hands_read_file", "input": {"path": "a.txt"}}]},
        {"text": "It says hello.", "usage": {"input_tokens": 7, "output_tokens": 3}},
        {"status": 429, "message": "slow down"},
    ]
    model = ScriptedModel("gemini", steps, work, expect_key="k1").start()
    request.addfinalizer(model.stop)
    base = f"{model.url}/v1beta/models/{MODEL}"
    ask = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    status, _, body = post(f"{base}:streamGenerateContent?alt=sse", ask, None)
    assert status == 401 and json.loads(body)["error"]["status"] == "UNAUTHENTICATED"

    status, kind, body = post(f"{base}:streamGenerateContent?alt=sse", ask, "k1")
    assert status == 200 and kind.startswith("text/event-stream")
    chunks = [json.loads(line[len("data: "):]) for line in body.decode().splitlines() if line.startswith("data: ")]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "Reading it."
    assert {"functionCall": {"name": "mcp_hands_read_file", "args": {"path": "a.txt"}}} in parts
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])

    status, kind, body = post(f"{base}:generateContent", ask, "k1")
    assert status == 200 and kind.startswith("application/json")
    whole = json.loads(body)
    assert whole["candidates"][0]["content"] == {"parts": [{"text": "It says hello."}], "role": "model"}
    assert whole["usageMetadata"] == {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}

    status, _, body = post(f"{base}:generateContent", ask, "k1")
    assert status == 429 and json.loads(body)["error"] == {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}
    assert len(model.requests()) == 4  # every request logged, the refused one too
