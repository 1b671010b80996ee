"""opencode (the real CLI, npm `opencode-ai` pinned in package-lock.json) uses hands over stdio and
Streamable HTTP, and a hands call that outlasts opencode's MCP request timeout gets through.

opencode talks to the scripted model in the OpenAI Chat Completions format (a custom provider on
`@ai-sdk/openai-compatible`, which opencode bundles) and runs the task of task.py headless with
`opencode run --format json`, its config in an isolated XDG config folder. It names hands' tools
`hands_<tool>`. The guide's snippets this covers, run as written: `opencode-stdio` and
`opencode-run` (test_stdio and the long calls), `hands-serve`, `opencode-http` and `opencode-run`
(test_http).

The long call: opencode gives every `tools/call` a progressToken and restarts the call's timer on
each `notifications/progress` (the MCP SDK's `resetTimeoutOnProgress`); the timer is the server
entry's `timeout` (ms), without it the SDK's 60 s. The long-call tests set it to 5 s and have the
model ask for a 12 s bash, through a tap (mcp_tap.py) that logs the stdio traffic: with hands'
progress passed on, the call completes and its output reaches the model; with the progress dropped
(the control), opencode cuts the call at 5 s — so it is the progress that keeps the call alive."""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from pathlib import Path

import pytest
from conftest import HERE, client
from task import FINAL_ANSWER, check_task, make_task, readme_block, readme_serve, results_chat

PROMPT = "Write notes/plan.txt, read it back, run it through bash, then edit its second line."
TAP = HERE / "mcp_tap.py"
MODEL_KEY = "sk-fake-key-for-the-scripted-model"
# The long calls: opencode's timeout for hands' requests, and a bash call well past it.
TIMEOUT_MS = 5000
SLEEP_S = 12
LONG_ANSWER = "The long command is done."
TITLE = "Plan file"
PLUGIN = "@opencode-ai/plugin"


def provider(base: str, title_base: str) -> dict:
    """The part of opencode.json that is the test's, not the user's: the scripted model as the
    provider (its key from the environment), a second one as the small model that opencode asks for
    the session's title (at a time of its own, so it must not take one of the task's steps), and
    no update checks or sharing."""
    return {
        "model": "scripted/scripted",
        "small_model": "title/title",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            name: {
                "npm": "@ai-sdk/openai-compatible",
                "name": f"Scripted model ({name})",
                "options": {"baseURL": f"{url}/v1", "apiKey": "{env:SCRIPTED_MODEL_KEY}"},
                "models": {name: {"name": f"Scripted model ({name})"}},
            }
            for name, url in (("scripted", base), ("title", title_base))
        },
    }


def opencode_env(base: dict[str, str], home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **base,
        # Every folder opencode keeps things in, under the isolated HOME.
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        # No models.dev catalogue, update check, share link, npm plugins or LSP downloads.
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "SCRIPTED_MODEL_KEY": MODEL_KEY,
        **(extra or {}),
    }


def run_opencode(run_client, project: Path, home: Path, model_server, model, mcp: dict, env: dict[str, str]):
    """The guide's `opencode-run` command with the task's prompt, the config in
    ~/.config/opencode/opencode.json: the guide's `mcp` entry beside the test's providers."""
    title = model_server("openai", [{"text": TITLE}] * 4, expect_key=MODEL_KEY)
    config_dir = home / ".config" / "opencode"
    config_dir.mkdir(parents=True)
    (config_dir / "opencode.json").write_text(json.dumps({**provider(model.base, title.base), **mcp}, indent=2))
    # opencode installs its plugin package into each config folder in the background unless the
    # folder's node_modules exists and its package.json and package-lock.json name the package:
    # named here, so that it asks no registry (the run needs no plugin).
    (config_dir / "node_modules").mkdir()
    (config_dir / "package.json").write_text(json.dumps({"dependencies": {PLUGIN: "*"}}))
    (config_dir / "package-lock.json").write_text(json.dumps({"packages": {"": {"dependencies": {PLUGIN: "*"}}}}))
    argv = shlex.split(readme_block("opencode-run").strip())
    assert argv[:2] == ["opencode", "run"], argv
    argv[0] = str(client("opencode"))
    argv[-1] = PROMPT
    return run_client(argv, opencode_env(env, home), project)


def events(stdout: str) -> list[dict]:
    """`opencode run --format json`'s event lines."""
    out = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def final_text(stdout: str) -> str:
    texts = [e["part"].get("text", "") for e in events(stdout) if e.get("type") == "text" and isinstance(e.get("part"), dict)]
    return texts[-1] if texts else ""


def tool_states(stdout: str) -> dict[str, dict]:
    """callID -> the final state of each tool call opencode reports."""
    out = {}
    for e in events(stdout):
        part = e.get("part") if isinstance(e.get("part"), dict) else {}
        if e.get("type") == "tool_use" and "callID" in part:
            out[part["callID"]] = {"tool": part.get("tool"), **part.get("state", {})}
    return out


def chat_requests(model) -> list[dict]:
    return [r for r in model.requests() if isinstance(r, dict) and "messages" in r]


def check_run(run, model, refusing_proxy, answer: str = FINAL_ANSWER) -> list[dict]:
    assert run.rc == 0, run.report()
    assert final_text(run.stdout) == answer, run.report()
    requests = chat_requests(model)
    offered = {t.get("function", {}).get("name") for t in requests[0].get("tools", [])}
    wanted = {f"hands_{t}" for t in ("write_file", "read_file", "bash", "edit_file")}
    assert wanted <= offered, f"hands' tools were not offered to the model: {sorted(offered)}"
    assert not refusing_proxy.attempts, f"opencode tried to reach other hosts: {refusing_proxy.attempts}"
    return requests


def check_task_run(run, model, task, project: Path, refusing_proxy) -> None:
    requests = check_run(run, model, refusing_proxy)
    states = tool_states(run.stdout)
    failed = {cid: s for cid, s in states.items() if s.get("status") != "completed"}
    assert not failed, f"opencode reports hands calls that did not complete: {failed}"
    assert set(task.expect) <= set(states), f"opencode ran {sorted(states)}; the script asked for {sorted(task.expect)}"
    check_task(task, requests, results_chat, project)


def new_task():
    return make_task(lambda t: f"hands_{t}", lambda n: f"call_hands_{n:02d}")


def stdio_entry(hands: Path, project: Path) -> dict:
    """The guide's `opencode-stdio` block with this test's binary and project."""
    config = json.loads(readme_block("opencode-stdio").replace("/path/to/project", str(project)))
    entry = config["mcp"]["hands"]
    assert entry["command"][0] == "hands", entry
    entry["command"][0] = str(hands)
    return config


def test_stdio(hands, project, home, model_server, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("openai", task.steps, expect_key=MODEL_KEY)
    run = run_opencode(run_client, project, home, model_server, model, stdio_entry(hands, project), client_env)
    check_task_run(run, model, task, project, refusing_proxy)


def test_http(hands, project, home, model_server, hands_serve, client_env, run_client, refusing_proxy):
    task = new_task()
    model = model_server("openai", task.steps, expect_key=MODEL_KEY)
    serve = readme_serve(hands_serve, project)
    block = readme_block("opencode-http")
    assert "http://127.0.0.1:7777/mcp" in block
    config = json.loads(block.replace("http://127.0.0.1:7777/mcp", serve.url))
    run = run_opencode(run_client, project, home, model_server, model, config, {**client_env, "HANDS_TOKEN": serve.token})
    check_task_run(run, model, task, project, refusing_proxy)
    serve.assert_quiet()


# --- a call longer than opencode's request timeout ------------------------------------------------------


def long_call(hands, project, home, model_server, client_env, run_client, drop_progress: bool):
    """opencode with hands behind the tap and a `timeout` of TIMEOUT_MS; the model asks for a bash
    call of SLEEP_S seconds. Returns the run, the model, the marker, the call id and the tap log."""
    marker = f"done-$((6*7))-{uuid.uuid4().hex[:12]}"
    call_id = "call_hands_long"
    steps = [
        {"text": "Running the long command.", "tool_calls": [{"id": call_id, "name": "hands_bash", "input": {
            "command": f"sleep {SLEEP_S}; echo {marker}", "timeout": 60_000}}]},
        {"text": LONG_ANSWER},
    ]
    model = model_server("openai", steps, expect_key=MODEL_KEY)
    config = stdio_entry(hands, project)
    entry = config["mcp"]["hands"]
    tap_log = project.parent / "tap.jsonl"
    tap = [sys.executable, str(TAP), "--log", str(tap_log), *(["--drop-progress"] if drop_progress else []), "--"]
    entry["command"] = [*tap, *entry["command"]]
    entry["timeout"] = TIMEOUT_MS
    run = run_opencode(run_client, project, home, model_server, model, config, client_env)
    return run, model, marker.replace("$((6*7))", "42"), call_id, tap_log


def tap_messages(tap_log: Path) -> list[dict]:
    return [json.loads(line) for line in tap_log.read_text(encoding="utf-8").splitlines() if line.strip()]


def bash_call(messages: list[dict]) -> dict:
    """The client's tools/call of bash, as the tap saw it."""
    calls = [m for m in messages if m["dir"] == "client" and m["msg"].get("method") == "tools/call"
             and m["msg"].get("params", {}).get("name") == "bash"]
    assert len(calls) == 1, f"opencode sent {len(calls)} bash calls: {calls}"
    return calls[0]


def progress_for(messages: list[dict], token) -> list[dict]:
    return [m for m in messages if m["dir"] == "server" and m["msg"].get("method") == "notifications/progress"
            and m["msg"].get("params", {}).get("progressToken") == token]


def test_long_call_kept_alive_by_progress(hands, project, home, model_server, client_env, run_client, refusing_proxy):
    run, model, marker, call_id, tap_log = long_call(hands, project, home, model_server, client_env, run_client, False)
    requests = check_run(run, model, refusing_proxy, LONG_ANSWER)
    state = tool_states(run.stdout).get(call_id, {})
    assert state.get("status") == "completed", f"opencode reports the long call as {state}:\n{run.report()}"
    seen = {}
    for body in requests:
        seen.update(results_chat(body))
    assert marker in seen.get(call_id, ""), f"the long call's output never reached the model: {seen.get(call_id)!r}"

    messages = tap_messages(tap_log)
    call = bash_call(messages)
    token = call["msg"]["params"].get("_meta", {}).get("progressToken")
    assert token is not None, f"opencode's tools/call carries no progressToken: {call['msg']}"
    progress = progress_for(messages, token)
    assert progress and all(m["passed"] for m in progress), "hands sent no progress for the long call"
    answers = [m for m in messages if m["dir"] == "server" and m["msg"].get("id") == call["msg"]["id"]]
    assert len(answers) == 1 and "result" in answers[0]["msg"], f"hands' answer to the call: {answers}"
    took = answers[0]["t"] - call["t"]
    # The call outlasted opencode's timeout, which progress kept restarting.
    assert took * 1000 > TIMEOUT_MS and took >= SLEEP_S, f"the call took {took:.1f} s"
    assert len(progress) >= took * 1000 / TIMEOUT_MS, f"{len(progress)} progress notifications in {took:.1f} s"
    # (opencode sends notifications/cancelled for the call once it has the answer, too: too late to matter.)
    cancelled = [m for m in messages if m["dir"] == "client" and m["msg"].get("method") == "notifications/cancelled"
                 and m["t"] < answers[0]["t"]]
    assert not cancelled, f"opencode cancelled the call: {cancelled}"


def test_long_call_cut_without_progress(hands, project, home, model_server, client_env, run_client, refusing_proxy):
    """The control: the same call with hands' progress dropped by the tap is cut at TIMEOUT_MS, so
    opencode's timer is real and the test above passes because of the progress."""
    run, model, marker, call_id, tap_log = long_call(hands, project, home, model_server, client_env, run_client, True)
    requests = check_run(run, model, refusing_proxy, LONG_ANSWER)
    state = tool_states(run.stdout).get(call_id, {})
    assert state.get("status") == "error", f"opencode reports the long call as {state}:\n{run.report()}"
    seen = {}
    for body in requests:
        seen.update(results_chat(body))
    told = seen.get(call_id, "")
    assert marker not in told and "timed out" in told.lower(), f"the model was told: {told!r}"

    messages = tap_messages(tap_log)
    call = bash_call(messages)
    token = call["msg"]["params"].get("_meta", {}).get("progressToken")
    assert progress_for(messages, token), "hands sent no progress, so dropping it showed nothing"
    cancelled = [m for m in messages if m["dir"] == "client" and m["msg"].get("method") == "notifications/cancelled"
                 and m["msg"].get("params", {}).get("requestId") == call["msg"]["id"]]
    assert cancelled, "opencode did not cancel the call it cut"
    assert (cancelled[0]["t"] - call["t"]) * 1000 >= TIMEOUT_MS * 0.9, "opencode cut the call before its timeout"


@pytest.fixture(autouse=True)
def _installed():
    client("opencode")
