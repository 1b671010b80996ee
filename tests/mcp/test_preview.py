"""read_runtime_errors through the official Python SDK, which validates every structured result
against the tool's declared output schema (a result that fails it raises in the client): a static
page with a failed request (a fetch of a missing file: 404) and a `console.error`, neither of which
has stack frames of its own in every browser, must come back as valid structured content listing
both. Regression test for issue #12 ("'stack' is a required property")."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from mcp import types

from conftest import TRANSPORTS

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("transport", TRANSPORTS)]

CHROMIUM = "/usr/bin/chromium"

PAGE = """<!doctype html>
<html><head><title>errors</title></head>
<body>
<h1>errors</h1>
<script>
  fetch("/missing-data.json").then((r) => document.title = "fetched " + r.status);
  console.error("boom from the console");
</script>
</body></html>
"""


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_read_runtime_errors_with_a_failed_request_and_a_console_error(connect, transport, root: Path):
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip("chromium is not installed")
    (root / "index.html").write_text(PAGE)
    async with connect(transport) as conn:
        s = conn.session
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert "read_runtime_errors" in tools, sorted(tools)
        assert tools["read_runtime_errors"].output_schema is not None
        opened = await s.call_tool("preview_open", {})
        assert not opened.is_error, text_of(opened)
        kinds: set[str] = set()
        errors: list[dict] = []
        with anyio.fail_after(30):
            while not {"http_error", "console_error"} <= kinds:
                # The SDK validates structuredContent against the output schema here and raises
                # on a mismatch, so getting a result at all is half the test.
                r = await s.call_tool("read_runtime_errors", {"since": 0})
                assert not r.is_error, text_of(r)
                assert r.structured_content is not None, text_of(r)
                errors = r.structured_content["errors"]
                kinds = {e["kind"] for e in errors}
                if not {"http_error", "console_error"} <= kinds:
                    await anyio.sleep(0.3)
        http = [e for e in errors if e["kind"] == "http_error"]
        console = [e for e in errors if e["kind"] == "console_error"]
        assert any("missing-data.json" in e["message"] and "404" in e["message"] for e in http), http
        assert any("boom from the console" in e["message"] for e in console), console
        # The entry without frames omits `stack` (the case the schema once required).
        assert any("stack" not in e for e in http), http
        closed = await s.call_tool("preview_close", {})
        assert not closed.is_error, text_of(closed)
