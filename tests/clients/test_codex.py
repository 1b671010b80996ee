"""Codex CLI (the real CLI, pinned in package-lock.json) uses hands over stdio and Streamable HTTP.

Codex talks to the scripted model in the OpenAI Responses format (a model provider with
`wire_api = "responses"` in an isolated CODEX_HOME) and runs the task of task.py with
`codex exec --json`. It offers hands' tools to the model as a `namespace` tool named `mcp__hands`;
the scripted model answers with `function_call` items carrying `namespace: "mcp__hands"`. The
guide's snippets this covers, run as written: `codex-stdio` and `codex-run` (test_stdio),
`hands-serve`, `codex-http` and `codex-run` (test_http)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import client
from task import FINAL_ANSWER, check_task, make_task, readme_block, readme_serve, results_responses

PROMPT = "Write notes/plan.txt, read it back, run it through bash, then edit its second line."

# The part of config.toml that is the test's, not the user's: the scripted model as the provider,
# and no update checks, web search or other calls besides the model's.
PROVIDER = """\
model = "scripted"
model_provider = "scripted"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.scripted]
name = "Scripted model"
base_url = "{base}/v1"
wire_api = "responses"
env_key = "SCRIPTED_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

# Features that call hosts other than the model's: connectors, plugins and their marketplaces.
[features]
apps = false
plugins = false
remote_plugin = false
plugin_sharing = false
tool_suggest = false

"""


def run_codex(run_client, project: Path, home: Path, model, server_block: str, env: dict[str, str]):
    codex_home = home / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(PROVIDER.format(base=model.base) + server_block)
    argv = shlex.split(readme_block("codex-run").strip())
    assert argv[:2] == ["codex", "exec"], argv
    argv[0] = str(client("codex"))
    argv[-1] = PROMPT
    env = {**env, "CODEX_HOME": str(codex_home), "SCRIPTED_MODEL_KEY": "sk-fake-key-for-the-scripted-model"}
    return run_client(argv, env, project)


def final_message(stdout: str) -> str:
    """The last agent message in `codex exec --json`'s event lines."""
    text = ""
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        item = event.get("item") or {}
        if event.get("type") == "item.completed" and item.get("type") == "agent_message":
            text = item.get("text", "")
    return text


def check_run(run, model, task, project: Path, refusing_proxy) -> None:
    assert run.rc == 0, run.report()
    assert final_message(run.stdout) == FINAL_ANSWER, run.report()
    requests = [r for r in model.requests() if isinstance(r, dict) and "input" in r]
    namespaces = {t.get("name"): t for t in requests[0].get("tools", []) if t.get("type") == "namespace"}
    assert "mcp__hands" in namespaces, f"no namespace tool mcp__hands offered: {sorted(namespaces)}"
    offered = {t.get("name") for t in namespaces["mcp__hands"].get("tools", [])}
    assert {"write_file", "read_file", "bash", "edit_file"} <= offered, sorted(offered)
    failed = [line for line in run.stdout.splitlines() if '"mcp_tool_call"' in line and '"status":"failed"' in line]
    assert not failed, f"Codex reports failed hands calls:\n{failed}"
    check_task(task, requests, results_responses, project)
    assert "unknown format" not in run.stderr, run.report()
    assert not refusing_proxy.attempts, f"Codex tried to reach other hosts: {refusing_proxy.attempts}"


def new_task():
    return make_task(lambda t: f"mcp__hands__{t}", lambda n: f"call_hands_{n:02d}")


def test_stdio(hands, project, home, model_server, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("responses", task.steps)
    block = readme_block("codex-stdio").replace("/path/to/project", str(project))
    assert 'command = "hands"' in block
    block = block.replace('command = "hands"', f"command = {json.dumps(str(hands))}")
    run = run_codex(run_client, project, home, model, block, client_env)
    check_run(run, model, task, project, refusing_proxy)


def test_http(hands, project, home, model_server, hands_serve, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("responses", task.steps)
    serve = readme_serve(hands_serve, project)
    block = readme_block("codex-http")
    assert "http://127.0.0.1:7777/mcp" in block
    block = block.replace("http://127.0.0.1:7777/mcp", serve.url)
    run = run_codex(run_client, project, home, model, block, {**client_env, "HANDS_TOKEN": serve.token})
    check_run(run, model, task, project, refusing_proxy)


@pytest.fixture(autouse=True)
def _installed():
    client("codex")
