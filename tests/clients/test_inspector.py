"""The MCP Inspector CLI (the real CLI, pinned in package-lock.json; no model) uses hands over stdio
and Streamable HTTP.

The guide's `inspector-stdio` and `inspector-http` blocks are run as written — the installed CLI in
place of `npx @modelcontextprotocol/inspector@<version>`, and the binary's path, the project's path,
the port and the token swapped in: their `tools/list` line as it is, their `tools/call` line once for
each call of task.py's task (tool name and arguments swapped in). The results the Inspector prints
must carry what the model would need (task.py's check) and the file on disk must be the task's
(test_stdio, test_http); `tools/list` must raise no schema warning (`unknown format`, Inspector
2.12's `Schema portability`; test_schemas_raise_no_warning)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from conftest import NODE_MODULES, client
from task import check_task, make_task, readme_block, readme_serve

PACKAGE = "@modelcontextprotocol/inspector"


def commands(block: str) -> list[list[str]]:
    """The block's commands (continuation lines joined), each as its words."""
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def installed_version() -> str:
    return json.loads((NODE_MODULES / PACKAGE / "package.json").read_text())["version"]


def localise(argv: list[str], swaps: dict[str, str]) -> list[str]:
    """`npx PACKAGE@VERSION` -> the installed CLI (the guide's version must be the pinned one), then
    every word in `swaps` replaced and `$HANDS_TOKEN` filled in from `swaps` as the shell would."""
    assert argv[0] == "npx" and argv[1] == f"{PACKAGE}@{installed_version()}", argv[:2]
    out = [str(client("inspector"))]
    for word in argv[2:]:
        word = swaps.get(word, word)
        out.append(word.replace("$HANDS_TOKEN", swaps.get("$HANDS_TOKEN", "$HANDS_TOKEN")))
    return out


def with_call(argv: list[str], tool: str, arguments: dict[str, str]) -> list[str]:
    """The `tools/call` command with `tool` and its `key=value` arguments in place of the guide's."""
    at = argv.index("--tool-name")
    argv = [*argv[:at + 1], tool, *argv[at + 2:]]
    start = argv.index("--tool-arg") + 1
    end = next((i for i in range(start, len(argv)) if argv[i].startswith("--")), len(argv))
    return [*argv[:start], *(f"{k}={v}" for k, v in arguments.items()), *argv[end:]]


def inspector_env(env: dict[str, str], project: Path) -> dict[str, str]:
    return {**env, "MCP_CATALOG_PATH": str(project.parent / "inspector-catalog.json")}


def list_tools(block: str, swaps: dict[str, str], run_client, env: dict[str, str], project: Path):
    """The block's `tools/list` line, run as written: hands' tools are listed."""
    listed = commands(block)[0]
    assert listed[-2:] == ["--method", "tools/list"], listed
    run = run_client(localise(listed, swaps), inspector_env(env, project), project)
    assert run.rc == 0, run.report()
    names = {tool["name"] for tool in json.loads(run.stdout)["tools"]}
    assert {"write_file", "read_file", "bash", "edit_file"} <= names, sorted(names)
    return run


def run_task(block: str, swaps: dict[str, str], run_client, env: dict[str, str], project: Path, refusing_proxy) -> None:
    list_tools(block, swaps, run_client, env, project)
    template = commands(block)[1]
    assert "tools/call" in template, template
    env = inspector_env(env, project)
    task = make_task(lambda t: t, lambda n: f"call-{n}")
    seen = {}
    for step in task.steps:
        for call in step.get("tool_calls", []):
            run = run_client(with_call(localise(template, swaps), call["name"], call["input"]), env, project)
            assert run.rc == 0, run.report()
            result = json.loads(run.stdout)
            assert result.get("isError") is not True, f"{call['name']} failed: {run.stdout}"
            # What a client that reads `content` shows the model.
            seen[call["id"]] = "".join(b.get("text", "") for b in result["content"] if b.get("type") == "text")
    check_task(task, [seen], lambda body: body, project)
    assert not refusing_proxy.attempts, f"the Inspector tried to reach other hosts: {refusing_proxy.attempts}"


def test_stdio(hands, project, client_env, run_client, refusing_proxy):
    swaps = {"hands": str(hands), "/path/to/project": str(project)}
    run_task(readme_block("inspector-stdio"), swaps, run_client, client_env, project, refusing_proxy)


def test_http(hands, project, hands_serve, client_env, run_client, refusing_proxy):
    serve = readme_serve(hands_serve, project)
    swaps = {"http://127.0.0.1:7777/mcp": serve.url, "$HANDS_TOKEN": serve.token}
    run_task(readme_block("inspector-http"), swaps, run_client, client_env, project, refusing_proxy)
    serve.assert_quiet()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_schemas_raise_no_warning(transport, hands, project, hands_serve, client_env, run_client, refusing_proxy):
    """Inspector 2.12 checks every tool's schema for portability (`Schema portability: N errors,
    M warnings across K tools`) and ajv warns on non-standard formats (`unknown format "uint64"`):
    hands' schemas raise neither, whichever transport lists them."""
    if transport == "stdio":
        swaps = {"hands": str(hands), "/path/to/project": str(project)}
    else:
        serve = hands_serve(project)
        swaps = {"http://127.0.0.1:7777/mcp": serve.url, "$HANDS_TOKEN": serve.token}
    run = list_tools(readme_block(f"inspector-{transport}"), swaps, run_client, client_env, project)
    printed = run.stdout + run.stderr
    assert "unknown format" not in printed, run.report()
    counts = re.search(r"Schema portability: (\d+) errors?, (\d+) warnings?", printed)
    assert counts is None or counts.groups() == ("0", "0"), counts.group(0)
    assert not refusing_proxy.attempts, f"the Inspector tried to reach other hosts: {refusing_proxy.attempts}"


@pytest.fixture(autouse=True)
def _installed():
    client("inspector")
