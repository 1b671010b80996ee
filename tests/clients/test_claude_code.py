"""Claude Code (the real CLI, pinned in package-lock.json) uses hands over stdio and Streamable HTTP.

Claude Code talks to the scripted model in the Anthropic Messages format (ANTHROPIC_BASE_URL) and
runs the task of task.py headless (`claude -p`). The guide's snippets this covers, run as written:
`claude-stdio` and `claude-run` (test_stdio), `hands-serve`, `claude-http` and `claude-run`
(test_http)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from conftest import client
from task import FINAL_ANSWER, check_task, make_task, readme_block, readme_serve, results_anthropic

PROMPT = "Write notes/plan.txt, read it back, run it through bash, then edit its second line."


def claude_env(base: dict[str, str], model_base: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **base,
        "ANTHROPIC_BASE_URL": model_base,
        "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-the-scripted-model",
        # No telemetry, error reports, update checks or other calls besides the model's.
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        **(extra or {}),
    }


def run_claude(run_client, project: Path, config: dict, env: dict[str, str]):
    """The guide's `claude-run` command with the task's prompt and this test's config file."""
    config_path = project.parent / "hands.mcp.json"
    config_path.write_text(json.dumps(config, indent=2))
    argv = shlex.split(readme_block("claude-run").strip())
    assert argv[0] == "claude", argv
    argv[0] = str(client("claude"))
    argv[argv.index("-p") + 1] = PROMPT
    argv[argv.index("--mcp-config") + 1] = str(config_path)
    return run_client(argv, env, project)


def check_run(run, model, task, project: Path, refusing_proxy) -> None:
    assert run.rc == 0, run.report()
    assert FINAL_ANSWER in run.stdout, run.report()
    requests = [r for r in model.requests() if isinstance(r, dict) and "messages" in r]
    offered = {t.get("name") for t in requests[0].get("tools", [])}
    wanted = {f"mcp__hands__{t}" for t in ("write_file", "read_file", "bash", "edit_file")}
    assert wanted <= offered, f"hands' tools were not offered to the model: {sorted(offered)}"
    check_task(task, requests, results_anthropic, project)
    assert "unknown format" not in run.stderr, run.report()
    assert not refusing_proxy.attempts, f"Claude Code tried to reach other hosts: {refusing_proxy.attempts}"


def new_task():
    return make_task(lambda t: f"mcp__hands__{t}", lambda n: f"toolu_hands_{n:02d}")


def test_stdio(hands, project, model_server, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("anthropic", task.steps)
    config = json.loads(readme_block("claude-stdio").replace("/path/to/project", str(project)))
    server = config["mcpServers"]["hands"]
    assert server["command"] == "hands"
    server["command"] = str(hands)
    run = run_claude(run_client, project, config, claude_env(client_env, model.base))
    check_run(run, model, task, project, refusing_proxy)


def test_http(hands, project, model_server, hands_serve, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("anthropic", task.steps)
    serve = readme_serve(hands_serve, project)
    text = readme_block("claude-http").replace("http://127.0.0.1:7777/mcp", serve.url)
    config = json.loads(text)
    run = run_claude(run_client, project, config, claude_env(client_env, model.base, {"HANDS_TOKEN": serve.token}))
    check_run(run, model, task, project, refusing_proxy)


@pytest.fixture(autouse=True)
def _installed():
    client("claude")
