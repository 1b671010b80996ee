"""Gemini CLI (the real CLI, pinned in package-lock.json) uses hands over stdio and Streamable HTTP.

Gemini CLI talks to the scripted model in the Gemini API format (`GOOGLE_GEMINI_BASE_URL`,
`--format gemini`: `streamGenerateContent`) and runs the task of task.py headless; it names hands'
tools `mcp_hands_<tool>` and sends each result back as a `functionResponse` part. The guide's
snippets this covers, run as written: `gemini-stdio` and `gemini-run` (test_stdio), `hands-serve`,
`gemini-http` and `gemini-run` (test_http). The scripted model's Gemini format on its own is in
test_scripted_gemini.py."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import client
from task import FINAL_ANSWER, TOOLS, check_task, make_task, readme_block, readme_serve, results_gemini

PROMPT = "Write notes/plan.txt, read it back, run it through bash, then edit its second line."

# The part of settings.json that is the test's, not the user's: API-key auth (the scripted model's
# fake key), no telemetry, usage statistics, update checks or folder-trust prompt.
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}

# What Gemini CLI prints when it loses or cannot reach an MCP server.
NOISE = ("Unexpected end of JSON input", "not connected", "Error connecting to MCP server", "MCP issues detected")


def new_task():
    """The task with Gemini's tool names; Gemini 2.5 gives its calls no id (the client makes its own),
    so results are matched by tool name (each tool is called once)."""
    task = make_task(lambda t: f"mcp_hands_{t}", lambda n: f"mcp_hands_{TOOLS[n]}")
    for step in task.steps:
        for call in step.get("tool_calls", []):
            call.pop("id", None)
    return task


def run_gemini(run_client, node_bin: Path, project: Path, home: Path, model, servers: dict, env: dict[str, str], prompt: str = PROMPT):
    """The guide's `gemini-run` command with `prompt`, hands configured by the guide's block."""
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({**servers, **SETTINGS}, indent=2))
    argv = shlex.split(readme_block("gemini-run").strip())
    assert argv[0] == "gemini", argv
    argv[argv.index("--prompt") + 1] = prompt
    argv[:1] = [str(node_bin / "node"), str(client("gemini"))]
    env = {**env, "GOOGLE_GEMINI_BASE_URL": model.base, "GEMINI_API_KEY": "fake-gemini-key-for-the-scripted-model",
           "NO_UPDATE_NOTIFIER": "1"}
    return run_client(argv, env, project)


def check_run(run, model, task, project: Path, refusing_proxy) -> None:
    assert run.rc == 0, run.report()
    assert FINAL_ANSWER in run.stdout, run.report()
    requests = [r for r in model.requests() if isinstance(r, dict) and "contents" in r]
    assert requests, f"Gemini CLI never asked the model\n{run.report()}"
    offered = {d.get("name") for t in requests[0].get("tools", []) for d in t.get("functionDeclarations", [])}
    assert {f"mcp_hands_{t}" for t in TOOLS} <= offered, f"hands' tools were not offered to the model: {sorted(offered)}"
    check_task(task, requests, results_gemini, project)
    failed = {name: text for body in requests for name, text in results_gemini(body).items() if '"error"' in text}
    assert not failed, f"hands calls failed: {failed}"
    for noise in (*NOISE, "unknown format"):
        assert noise not in run.stderr, run.report()
    assert not refusing_proxy.attempts, f"Gemini CLI tried to reach other hosts: {refusing_proxy.attempts}"


def stdio_servers(hands: Path, project: Path) -> dict:
    servers = json.loads(readme_block("gemini-stdio").replace("/path/to/project", str(project)))
    server = servers["mcpServers"]["hands"]
    assert server["command"] == "hands"
    server["command"] = str(hands)
    return servers


def test_stdio(hands, node_bin, project, home, model_server, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("gemini", task.steps)
    run = run_gemini(run_client, node_bin, project, home, model, stdio_servers(hands, project), client_env)
    check_run(run, model, task, project, refusing_proxy)


def test_http(hands, node_bin, project, home, model_server, hands_serve, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("gemini", task.steps)
    serve = readme_serve(hands_serve, project)
    block = readme_block("gemini-http")
    assert "http://127.0.0.1:7777/mcp" in block
    servers = json.loads(block.replace("http://127.0.0.1:7777/mcp", serve.url))
    run = run_gemini(run_client, node_bin, project, home, model, servers, {**client_env, "HANDS_TOKEN": serve.token})
    check_run(run, model, task, project, refusing_proxy)
    # A whole Gemini session over HTTP (with its probes) leaves no warning and no colour in the log.
    serve.assert_quiet()


def test_schemas_raise_no_warning(hands, node_bin, project, home, model_server, client_env, run_client, refusing_proxy):
    """Gemini CLI validates hands' tool schemas with ajv when it loads them: no `unknown format` line
    (non-standard `format` values such as `uint64` are what it complains about)."""
    model = model_server("gemini", [{"text": "Nothing to do."}])
    run = run_gemini(run_client, node_bin, project, home, model, stdio_servers(hands, project), client_env, prompt="Say nothing.")
    assert run.rc == 0, run.report()
    requests = model.requests()
    assert requests and "mcp_hands_bash" in json.dumps(requests[0].get("tools", [])), run.report()
    warnings = [line for line in run.stderr.splitlines() if "unknown format" in line]
    assert not warnings, f"{len(warnings)} schema warnings, e.g. {warnings[:3]}"
    assert not refusing_proxy.attempts, f"Gemini CLI tried to reach other hosts: {refusing_proxy.attempts}"


@pytest.fixture(autouse=True)
def _installed():
    client("gemini")
