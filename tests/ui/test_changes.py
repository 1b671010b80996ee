"""The per-turn changes view in a real browser, over the checkpoints API of the real `hands serve`:
a turn that edits and creates files shows what it changed (files, line counts, a coloured diff)
in the conversation and in the Changes panel; Revert restores the project to before the turn
(the files on disk change back), offers Undo (which brings the turn's changes back), and is
refused with a clear message while a turn runs."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

TIMEOUT = 30_000  # ms


def open_session(pg, hands, sid: str) -> None:
    pg.page.goto(f"{pg.base}/")
    pg.page.get_by_label("Token").fill(hands.token)
    pg.page.get_by_role("button", name="Sign in").click()
    pg.page.get_by_role("button", name="New session").wait_for()
    pg.page.goto(f"{pg.base}/#/s/{sid}")
    pg.page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)


def send(pg, text: str) -> None:
    box = pg.page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def wait_file(path: Path, content: str | None, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = path.read_text() if path.exists() else None
        if now == content:
            return
        time.sleep(0.1)
    raise AssertionError(f"{path} is {path.read_text() if path.exists() else None!r}, not {content!r}")


def test_a_turns_changes_are_shown_reverted_and_undone(setup, project: Path, open_page) -> None:
    before = (project / "calc.py").read_text()
    after = before.replace("return a - b", "return a + b")
    steps = [
        {"tool_calls": [{"name": "edit_file", "input": {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "mkdir -p docs && printf 'one\\ntwo\\n' > docs/new.txt"}}]},
        {"text": "Fixed add and wrote docs/new.txt."},
        {"text": "Second turn.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 20"}}]},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    r = hands.request("GET", f"/v1/sessions/{sid}/checkpoints")
    if r.status_code == 404 and "no route" in r.text:
        pytest.fail("this hands has no checkpoints API (GET /v1/sessions/{id}/checkpoints)")
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    page = pg.page
    send(pg, "fix add and write the docs")
    page.locator(".log", has_text="Fixed add and wrote docs/new.txt.").wait_for(timeout=TIMEOUT)
    assert (project / "calc.py").read_text() == after and (project / "docs" / "new.txt").exists()

    # The conversation says what the turn changed; its button opens the Changes panel at it.
    line = page.locator(".changes-line")
    line.wait_for(timeout=TIMEOUT)
    assert "2 files" in line.inner_text(), line.inner_text()
    line.get_by_role("button", name="Review changes").click()
    panel = page.get_by_role("region", name="Changes")
    turn = panel.locator(".turn").first
    turn.locator(".what", has_text="fix add and write the docs").wait_for(timeout=TIMEOUT)
    files = turn.locator(".files > li")
    files.first.wait_for(timeout=TIMEOUT)
    paths = sorted(files.locator("code").all_inner_texts())
    assert paths == ["calc.py", "docs/new.txt"], paths
    calc = files.filter(has_text="calc.py")
    assert calc.locator(".change").inner_text() == "modified"
    assert calc.locator(".diff .del", has_text="return a - b").count() == 1
    assert calc.locator(".diff .add", has_text="return a + b").count() == 1
    assert files.filter(has_text="docs/new.txt").locator(".change").inner_text() == "added"
    checkpoints = hands.request("GET", f"/v1/sessions/{sid}/checkpoints").json()["checkpoints"]
    end = next(c for c in checkpoints if c["kind"] == "turn_end")
    assert f"+{end['additions']}" in turn.inner_text() and f"−{end['deletions']}" in turn.inner_text()

    # Revert (code): the files are as before the turn.
    turn.get_by_role("button", name="Revert to before this turn").click()
    done = panel.get_by_role("status")
    done.wait_for(timeout=TIMEOUT)
    assert "Reverted" in done.inner_text(), done.inner_text()
    wait_file(project / "calc.py", before)
    wait_file(project / "docs" / "new.txt", None)
    # Undo: the turn's changes are back.
    done.get_by_role("button", name="Undo").click()
    panel.get_by_role("status").filter(has_text="Undone").wait_for(timeout=TIMEOUT)
    wait_file(project / "calc.py", after)
    wait_file(project / "docs" / "new.txt", "one\ntwo\n")

    # While a turn runs, a revert is refused and says why; nothing changes.
    send(pg, "second turn")
    page.locator(".tool .name", has_text="bash").nth(1).wait_for(timeout=TIMEOUT)
    panel.locator(".turn").filter(has_text="fix add and write the docs").get_by_role(
        "button", name="Revert to before this turn").click()
    alert = panel.get_by_role("alert")
    alert.wait_for(timeout=TIMEOUT)
    assert alert.inner_text().startswith("Not now:"), alert.inner_text()
    assert (project / "calc.py").read_text() == after
    page.get_by_role("button", name="Stop").click()
    page.locator(".notice", has_text="turn ended: aborted").wait_for(timeout=TIMEOUT)
    assert not pg.foreign(), pg.foreign()


def test_reverting_the_conversation_is_announced(setup, project: Path, open_page) -> None:
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "made.txt", "content": "made\n"}}]},
        {"text": "Made it."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    send(pg, "make a file")
    pg.page.locator(".log", has_text="Made it.").wait_for(timeout=TIMEOUT)
    messages = len(hands.transcript(sid))
    pg.page.get_by_role("tab", name="Changes").click()
    panel = pg.page.get_by_role("region", name="Changes")
    turn = panel.locator(".turn").first
    turn.wait_for(timeout=TIMEOUT)
    turn.get_by_label("Revert").select_option("both")
    turn.get_by_role("button", name="Revert to before this turn").click()
    panel.get_by_role("status").wait_for(timeout=TIMEOUT)
    pg.page.locator(".log .notice", has_text="conversation restored").last.wait_for(timeout=TIMEOUT)
    wait_file(project / "made.txt", None)
    assert len(hands.transcript(sid)) < messages
