"""Using the app in the preview over MCP (issue 32), through the real `hands` binary: a static page
with a field, a button that adds what was typed to a list and a button that logs a console error;
preview_snapshot gives refs, preview_act types, clicks and waits, and its answer is the delta (the
new item), the console error, and no whole page again; a stale ref is refused after a reload."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from mcp import types

from conftest import TRANSPORTS

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("transport", TRANSPORTS)]

CHROMIUM = "/usr/bin/chromium"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>todo</title></head>
<body>
<h1>Todo</h1>
<label>New todo <input id="t"></label>
<button id="add">Add</button>
<button id="bad">Complain</button>
<ul aria-label="Todos" id="list"></ul>
<script>
  document.getElementById("add").onclick = () => {
    const li = document.createElement("li");
    li.textContent = document.getElementById("t").value;
    document.getElementById("list").append(li);
  };
  document.getElementById("bad").onclick = () => console.error("complaint from the page");
</script>
</body></html>
"""


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def ref_of(text: str, needle: str) -> str:
    line = next(l for l in text.splitlines() if needle in l)
    # `textbox "New todo" e1 focused`: the ref follows the name, bare.
    found = re.search(r"(?<![\w\"])(e\d+)(?![\w\"])", line.split(needle, 1)[1])
    assert found, line
    return found.group(1)


async def test_snapshot_act_and_stale_refs_over_mcp(connect, transport, root: Path):
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip("chromium is not installed")
    (root / "index.html").write_text(PAGE)
    async with connect(transport) as conn:
        s = conn.session
        names = {t.name for t in (await s.list_tools()).tools}
        assert {"preview_snapshot", "preview_act", "preview_network", "preview_console"} <= names, sorted(names)
        opened = await s.call_tool("preview_open", {})
        assert not opened.is_error, text_of(opened)
        snap = await s.call_tool("preview_snapshot", {})
        assert not snap.is_error, text_of(snap)
        first = text_of(snap)
        field, add, bad = ref_of(first, 'textbox "New todo"'), ref_of(first, 'button "Add"'), ref_of(first, 'button "Complain"')
        acted = await s.call_tool("preview_act", {"actions": [
            {"action": "type", "ref": field, "text": "water the plants"},
            {"action": "click", "ref": add},
            {"action": "click", "ref": bad},
            {"action": "wait", "text": "water the plants"},
        ]})
        answer = text_of(acted)
        assert not acted.is_error, answer
        assert '"water the plants"' in answer and answer.count("\n+ ") >= 1, answer
        assert 'h1 "Todo"' not in answer, f"only the changes: {answer}"
        assert 'h1 "Todo"' in first, first
        assert "[error] complaint from the page" in answer, answer
        console = text_of(await s.call_tool("preview_console", {"since": 0}))
        assert "complaint from the page" in console, console
        reloaded = await s.call_tool("preview_act", {"actions": [{"action": "reload"}]})
        assert not reloaded.is_error, text_of(reloaded)
        stale = await s.call_tool("preview_act", {"actions": [{"action": "click", "ref": add}]})
        assert stale.is_error and "stale" in text_of(stale), text_of(stale)
        closed = await s.call_tool("preview_close", {})
        assert not closed.is_error, text_of(closed)
