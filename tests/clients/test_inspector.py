"""The MCP Inspector CLI (no model) calls hands' tools over stdio (`hands mcp`) and Streamable HTTP
(`hands serve`): write_file, read_file, bash and edit_file print their results as text, the file on
disk changes, and `tools/list` raises no schema warning.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gemini_support import HandsServe, client_bin, client_env, hands_bin, marker, run_client


class Inspector:
    """`mcp-inspector --cli` against one hands server."""

    def __init__(self, transport: str, work: Path, proj: Path, request: pytest.FixtureRequest) -> None:
        self.work = work
        self.env = client_env(work / "home", MCP_CATALOG_PATH=str(work / "inspector-catalog.json"))
        if transport == "stdio":
            self.target = [str(hands_bin()), "mcp", "--root", str(proj)]
        else:
            serve = HandsServe(root=proj, work=work).start()
            request.addfinalizer(serve.stop)
            self.target = [serve.url, "--transport", "http", "--header", f"Authorization: Bearer {serve.token}"]

    def run(self, *args: str):
        return run_client([str(client_bin("mcp-inspector")), "--cli", *self.target, *args], cwd=self.work, env=self.env, timeout=90)

    def call(self, tool: str, **arguments: str) -> str:
        """Call `tool`; its result's text content (what a client that reads `content` shows)."""
        pairs = [f"{key}={value}" for key, value in arguments.items()]
        run = self.run("--method", "tools/call", "--tool-name", tool, "--tool-arg", *pairs)
        assert run.returncode == 0, run.describe()
        result = json.loads(run.stdout)
        assert result.get("isError") is not True, f"{tool} failed: {run.stdout}"
        return "".join(block.get("text", "") for block in result["content"] if block.get("type") == "text")


@pytest.fixture(params=["stdio", "http"])
def inspector(request: pytest.FixtureRequest, tmp_path: Path) -> Inspector:
    (tmp_path / "proj").mkdir()
    (tmp_path / "home").mkdir()
    return Inspector(request.param, tmp_path, tmp_path / "proj", request)


def test_inspector_writes_reads_runs_and_edits(inspector: Inspector) -> None:
    notes = inspector.work / "proj" / "notes.txt"
    mark = marker()

    written = inspector.call("write_file", path="notes.txt", content="alpha line\nbeta line\n")
    assert "notes.txt" in written
    assert notes.read_text() == "alpha line\nbeta line\n"

    read = inspector.call("read_file", path="notes.txt")
    assert "alpha line" in read and "beta line" in read

    # `-42` is computed by the shell: the text can only come from bash's output.
    ran = inspector.call("bash", command=f"cat notes.txt && echo {mark}-$((6*7))")
    assert f"{mark}-42" in ran and "alpha line" in ran

    diff = inspector.call("edit_file", path="notes.txt", old_string="beta line", new_string="gamma line")
    assert "-beta line" in diff and "+gamma line" in diff
    assert notes.read_text() == "alpha line\ngamma line\n"


def test_inspector_lists_tools_without_schema_warnings(inspector: Inspector) -> None:
    """Inspector 2.12 checks every tool's schema for portability (`Schema portability: N errors,
    M warnings across K tools`) and ajv warns on non-standard formats (`unknown format "uint64"`):
    hands' schemas raise neither."""
    run = inspector.run("--method", "tools/list")
    assert run.returncode == 0, run.describe()
    names = {tool["name"] for tool in json.loads(run.stdout)["tools"]}
    assert {"write_file", "read_file", "bash", "edit_file"} <= names
    printed = run.stdout + run.stderr
    assert "unknown format" not in printed, run.describe()
    counts = re.search(r"Schema portability: (\d+) errors?, (\d+) warnings?", printed)
    assert counts is None or counts.groups() == ("0", "0"), counts.group(0)
