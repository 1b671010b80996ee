"""The hands MCP server through the official Python SDK client, over stdio (`hands mcp`) and
Streamable HTTP (`hands serve`): every test runs on both transports."""

from __future__ import annotations

import base64
import os
import struct
import zlib
from pathlib import Path

import anyio
import pytest
from mcp import MCPError, types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from conftest import TRANSPORTS, children_of_marker

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("transport", TRANSPORTS)]

BUILD_TOOLS = {
    "read_file", "write_file", "edit_file", "list_files", "glob", "grep", "bash",
    "spawn_process", "list_processes", "process_output", "stop_process", "enter_plan_mode",
}
# docs/tools.md: plan mode offers only these (the conditional ones only when configured).
PLAN_ALLOWED = {
    "read_file", "list_files", "glob", "grep", "web_search", "web_scrape", "db_schema",
    "read_runtime_errors", "mcp_list", "mcp_call", "spawn_subagent", "use_skill", "ask_user",
    "exit_plan_mode", "parse_document", "run_security_scan", "reference_project", "repo_map",
}
NEVER_IN_PLAN = {"bash", "write_file", "edit_file", "spawn_process", "stop_process", "enter_plan_mode"}


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call_ok(session, name: str, args: dict, **kw) -> types.CallToolResult:
    result = await session.call_tool(name, args, **kw)
    assert not result.is_error, f"{name} {args} failed: {text_of(result)}"
    return result


def tiny_png() -> bytes:
    """A valid 2x1 RGB PNG built by hand (signature, IHDR, IDAT, IEND with CRCs)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 2, 1, 8, 2, 0, 0, 0)
    raw = b"\x00" + b"\xff\x00\x00" + b"\x00\x00\xff"
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


async def wait_until(predicate, timeout: float, step: float = 0.05):
    with anyio.fail_after(timeout):
        while True:
            value = predicate()
            if value:
                return value
            await anyio.sleep(step)


async def test_initialize(connect, transport):
    async with connect(transport) as conn:
        init = conn.init
        assert init.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
        assert init.server_info.name, "serverInfo.name is empty"
        assert init.server_info.version
        assert init.capabilities.tools is not None, "the server does not advertise tools"
        assert init.capabilities.tools.list_changed, "tools.listChanged not advertised (plan mode changes the list)"
        await conn.session.send_ping()


async def test_list_tools_names_and_annotations(connect, transport):
    async with connect(transport) as conn:
        listed = await conn.session.list_tools()
        names = [t.name for t in listed.tools]
        assert len(names) == len(set(names)), f"a tool is listed twice: {names}"
        assert BUILD_TOOLS <= set(names), f"missing: {BUILD_TOOLS - set(names)}"
        assert "exit_plan_mode" not in names, "exit_plan_mode is never offered in build mode"
        for alias in ("read", "write", "edit"):
            assert alias not in names, f"alias {alias} must not be listed"
        tools = {t.name: t for t in listed.tools}
        for t in listed.tools:
            assert t.description, f"{t.name} has no description"
            assert t.input_schema.get("type") == "object", f"{t.name}: inputSchema is not an object schema"
        assert tools["read_file"].annotations is not None
        assert tools["read_file"].annotations.read_only_hint is True
        assert "path" in tools["read_file"].input_schema.get("properties", {})
        assert "path" in tools["read_file"].input_schema.get("required", [])
        assert tools["write_file"].annotations.read_only_hint is False
        assert tools["write_file"].annotations.destructive_hint is True
        assert tools["bash"].annotations.read_only_hint is False
        for ro in ("glob", "grep", "list_files", "list_processes"):
            assert tools[ro].annotations.read_only_hint is True, ro


async def test_read_write_edit(connect, transport, root: Path):
    async with connect(transport) as conn:
        s = conn.session
        r = await call_ok(s, "read_file", {"path": "hello.txt"})
        body = text_of(r)
        assert "hello world" in body and "second line" in body
        assert "1" in body.split("hello world")[0], f"no line number before the first line: {body!r}"

        r = await call_ok(s, "write_file", {"path": "sub/dir/new.txt", "content": "alpha\nbeta\n"})
        assert (root / "sub/dir/new.txt").read_text() == "alpha\nbeta\n"

        r = await call_ok(s, "edit_file", {"path": "sub/dir/new.txt", "old_string": "beta", "new_string": "gamma"})
        assert (root / "sub/dir/new.txt").read_text() == "alpha\ngamma\n"
        assert "gamma" in text_of(r), f"edit_file should show the change: {text_of(r)!r}"

        # zero matches: an error the model can fix, file untouched
        r = await s.call_tool("edit_file", {"path": "sub/dir/new.txt", "old_string": "nope-xyz", "new_string": "z"})
        assert r.is_error
        assert (root / "sub/dir/new.txt").read_text() == "alpha\ngamma\n"

        # confinement: outside the root is refused
        r = await s.call_tool("write_file", {"path": "../escape.txt", "content": "x"})
        assert r.is_error
        assert not (root.parent / "escape.txt").exists()

        # read after write sees the new content (no stale dedup cache across a mutation)
        r = await call_ok(s, "read_file", {"path": "sub/dir/new.txt"})
        assert "gamma" in text_of(r) and "beta" not in text_of(r)


async def test_glob_grep_list_files(connect, transport):
    async with connect(transport) as conn:
        s = conn.session
        r = await call_ok(s, "glob", {"pattern": "**/*.rs"})
        assert r.structured_content is not None, "glob returns structured content"
        assert r.structured_content["paths"] == ["src/main.rs"]
        assert "src/main.rs" in text_of(r)

        r = await call_ok(s, "grep", {"pattern": "needle"})
        body = text_of(r)
        assert "src/main.rs:2:" in body and "notes.md:2:" in body, body
        assert r.structured_content["total_matches"] == 2
        assert r.structured_content["total_files"] == 2

        r = await call_ok(s, "grep", {"pattern": "needle", "output_mode": "files"})
        assert "hello.txt" not in text_of(r)

        r = await s.call_tool("grep", {"pattern": "([unclosed"})
        assert r.is_error, "an invalid regex is an error result"

        r = await call_ok(s, "list_files", {})
        body = text_of(r)
        for name in ("hello.txt", "src", "main.rs", "notes.md"):
            assert name in body, f"{name} missing from list_files: {body!r}"


async def test_bash(connect, transport, root: Path):
    async with connect(transport) as conn:
        r = await conn.session.call_tool("bash", {"command": "echo to-out; echo to-err >&2; pwd; exit 3"})
        body = text_of(r)
        assert not r.is_error, "a non-zero exit is a normal result"
        assert "to-out" in body and "to-err" in body
        assert str(root.resolve()) in body, "bash runs in the project root"
        assert "3" in body.rsplit("to-err", 1)[1], f"exit code not reported: {body!r}"
        if r.structured_content is not None:
            assert r.structured_content.get("exit_code") == 3

        r = await conn.session.call_tool("bash", {"command": "sleep 5", "timeout": 300})
        assert r.is_error, "a timeout is an error result"


async def test_background_processes(connect, transport, hands):
    async with connect(transport) as conn:
        s = conn.session
        r = await call_ok(
            s, "spawn_process",
            {"command": "echo READY-now; exec sleep 1000", "type": "daemon", "ready_pattern": "READY", "name": "sleeper"},
        )
        sc = r.structured_content or {}
        proc_id = sc.get("id")
        assert proc_id, f"spawn_process returns the process id: {text_of(r)!r}"
        assert sc.get("status") == "running"

        kids = await wait_until(lambda: children_of_marker(conn.token_env, hands), 5)
        assert any("sleep 1000" in cmd for _, cmd in kids), kids

        def entry(result) -> dict:
            procs = (result.structured_content or {}).get("processes", [])
            found = [p for p in procs if p.get("id") == proc_id]
            assert len(found) == 1, f"list_processes does not show {proc_id}: {text_of(result)!r}"
            return found[0]

        r = await call_ok(s, "list_processes", {})
        assert entry(r)["status"] == "running", entry(r)

        r = await call_ok(s, "process_output", {"id": proc_id})
        assert "READY-now" in text_of(r)

        await call_ok(s, "stop_process", {"id": proc_id})
        await wait_until(lambda: not children_of_marker(conn.token_env, hands), 10)

        r = await call_ok(s, "list_processes", {})
        assert entry(r)["status"] != "running", entry(r)


async def test_image_content(connect, transport, root: Path):
    png = tiny_png()
    (root / "pixel.png").write_bytes(png)
    async with connect(transport) as conn:
        r = await call_ok(conn.session, "read_file", {"path": "pixel.png"})
        images = [c for c in r.content if isinstance(c, types.ImageContent)]
        assert len(images) == 1, f"expected one image block, got {r.content!r}"
        assert images[0].mime_type == "image/png"
        assert base64.b64decode(images[0].data) == png


async def test_progress_notifications(connect, transport):
    async with connect(transport) as conn:
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            seen.append((progress, total, message))

        r = await call_ok(
            conn.session, "bash",
            {"command": "for i in 1 2 3 4 5 6 7; do echo tick-$i; sleep 0.25; done"},
            progress_callback=on_progress,
        )
        assert "tick-7" in text_of(r)
        assert len(seen) >= 2, f"expected progress notifications during a 1.75 s bash call, got {seen}"
        values = [p for p, _, _ in seen]
        assert values == sorted(values) and len(set(values)) == len(values), f"progress must increase: {values}"


async def test_cancel_kills_the_call_processes(connect, transport, hands):
    async with connect(transport) as conn:
        s = conn.session
        scope_box: list[anyio.CancelScope] = []
        outcome: list = []

        async def long_call() -> None:
            with anyio.CancelScope() as scope:
                scope_box.append(scope)
                outcome.append(await s.call_tool("bash", {"command": "sleep 1000; echo never"}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_call)
            kids = await wait_until(lambda: children_of_marker(conn.token_env, hands), 10)
            assert any("sleep 1000" in cmd for _, cmd in kids), kids
            scope_box[0].cancel()  # the SDK sends notifications/cancelled for the abandoned request
        assert not outcome, "the call was cancelled, not answered"

        try:
            await wait_until(lambda: not children_of_marker(conn.token_env, hands), 10)
        except TimeoutError:
            pytest.fail(f"processes survive the cancelled call: {children_of_marker(conn.token_env, hands)}")

        # the session still works
        r = await call_ok(s, "bash", {"command": "echo after-cancel"})
        assert "after-cancel" in text_of(r)


async def test_plan_mode_list_changed(connect, transport):
    async with connect(transport) as conn:
        s = conn.session
        await call_ok(s, "enter_plan_mode", {})

        def changed() -> int:
            return sum(1 for m, _ in conn.notifications if m == "notifications/tools/list_changed")

        try:
            await wait_until(lambda: changed() >= 1, 5)
        except TimeoutError:
            pytest.fail(f"no notifications/tools/list_changed after enter_plan_mode; got {conn.notifications}")

        names = {t.name for t in (await s.list_tools()).tools}
        assert {"read_file", "list_files", "glob", "grep", "exit_plan_mode"} <= names, names
        assert not names & NEVER_IN_PLAN, f"plan mode lists {names & NEVER_IN_PLAN}"
        assert names <= PLAN_ALLOWED, f"not allowed in plan mode: {names - PLAN_ALLOWED}"

        # a build-only tool cannot be called in plan mode
        try:
            r = await s.call_tool("bash", {"command": "echo should-not-run"})
            assert r.is_error and "should-not-run" not in text_of(r).replace("echo should-not-run", "")
        except MCPError:
            pass

        r = await call_ok(s, "read_file", {"path": "hello.txt"})
        assert "hello world" in text_of(r)

        await call_ok(s, "exit_plan_mode", {"plan": "1. nothing to do"})
        await wait_until(lambda: changed() >= 2, 5)
        names = {t.name for t in (await s.list_tools()).tools}
        assert BUILD_TOOLS <= names and "exit_plan_mode" not in names


async def test_errors(connect, transport):
    async with connect(transport) as conn:
        s = conn.session
        r = await s.call_tool("read_file", {"path": "does/not/exist.txt"})
        assert r.is_error, "a missing file is an isError result, not a protocol error"
        assert "exist" in text_of(r)

        r = await s.call_tool("read_file", {})
        assert r.is_error and "path" in text_of(r), "a missing argument names the field"

        try:
            r = await s.call_tool("no_such_tool_xyz", {})
        except MCPError as e:
            assert "no_such_tool_xyz" in e.error.message or e.error.code in (-32602, -32601)
        else:
            assert r.is_error, "an unknown tool must give an error"
            assert "no_such_tool_xyz" in text_of(r)

        # the session is still usable after errors
        await call_ok(s, "read_file", {"path": "hello.txt"})


def cli_tool_names(hands: Path, mode: str, root: Path) -> set[str]:
    """`hands tools --mode MODE --json --root ROOT`: the CLI's view of the same registry (the same
    root: which tools a project is offered depends on what it holds)."""
    import json
    import subprocess

    out = subprocess.run(
        [str(hands), "tools", "--mode", mode, "--json", "--root", str(root)],
        capture_output=True, check=True, text=True, cwd=str(root),
    )
    data = json.loads(out.stdout)
    return {t["name"] for t in (data["tools"] if isinstance(data, dict) else data)}


async def test_start_in_plan_mode_matches_cli(connect, transport, hands, root):
    async with connect(transport, mode="plan") as conn:
        names = {t.name for t in (await conn.session.list_tools()).tools}
        assert names == cli_tool_names(hands, "plan", root)
        assert "exit_plan_mode" in names and not names & NEVER_IN_PLAN, names
    async with connect(transport) as conn:
        names = {t.name for t in (await conn.session.list_tools()).tools}
        assert names == cli_tool_names(hands, "build", root)


async def test_spawn_subagent_uses_the_clients_sampling(connect, transport):
    """No model is configured: spawn_subagent is offered only to a client that offers sampling,
    and the sub-agent's model is that client (its answer comes back as the tool result)."""
    asked: list[types.CreateMessageRequestParams] = []

    async def sample(context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="The answer is 42."),
            model="test-sampler",
            stop_reason="endTurn",
        )

    async with connect(transport) as conn:
        names = {t.name for t in (await conn.session.list_tools()).tools}
        assert "spawn_subagent" not in names, "offered with no model and no sampling"
    async with connect(transport, sampling_callback=sample) as conn:
        names = {t.name for t in (await conn.session.list_tools()).tools}
        assert "spawn_subagent" in names, names
        result = await call_ok(conn.session, "spawn_subagent", {"prompt": "What is the answer?"})
        assert "42" in text_of(result), text_of(result)
        assert "[sub-agent model: the MCP client's, through sampling]" in text_of(result), text_of(result)
        assert asked, "the client was never asked to sample"
        first = asked[0]
        assert "What is the answer?" in str(first.messages), first.messages
