"""The UI's interactive flows in a real browser against the real `hands serve` and the scripted
model: approvals, questions, plan → build, todos, background processes, abort, rename and mode,
a server restart mid-session, a second tab, keyboard use and accessibility (axe-core)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from playwright.sync_api import expect

from conftest import axe_violations, shoot

TIMEOUT = 20_000  # ms, for waits on the page


def login(pg, hands) -> None:
    pg.page.goto(f"{pg.base}/")
    pg.page.get_by_label("Token").fill(hands.token)
    pg.page.get_by_role("button", name="Sign in").click()
    pg.page.get_by_role("button", name="New session").wait_for()


def open_session(pg, hands, sid: str) -> None:
    login(pg, hands)
    pg.page.goto(f"{pg.base}/#/s/{sid}")
    pg.page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)


def send(pg, text: str) -> None:
    box = pg.page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")


def stored_events(hands, sid: str) -> list[int]:
    """Every stored event id of the session (read over SSE from the start until idle)."""
    ids: list[int] = []
    with httpx.stream("GET", f"{hands.base_url}/v1/sessions/{sid}/events", headers={"Authorization": f"Bearer {hands.token}"},
                      timeout=httpx.Timeout(5.0, read=1.5)) as r:
        try:
            for line in r.iter_lines():
                if line.startswith("id:"):
                    ids.append(int(line[3:].strip()))
        except httpx.ReadTimeout:
            pass  # idle: everything stored was sent
    return ids


def log_counts(pg) -> tuple[int, int, int]:
    """The events the page folded, the last id and the gaps, read in one go (one render)."""
    d = pg.page.evaluate("() => { const l = document.querySelector('.log').dataset;"
                         " return [l.events, l.lastEvent, l.gaps].map(Number); }")
    return (d[0], d[1], d[2])


def wait_counts(pg, last: int, timeout: float = 20.0) -> tuple[int, int, int]:
    deadline = time.monotonic() + timeout
    while True:
        counts = log_counts(pg)
        if counts[1] >= last or time.monotonic() > deadline:
            return counts
        time.sleep(0.1)


def test_plan_approved_then_a_write_denied_with_a_reason(setup, project: Path, open_page) -> None:
    steps = [
        {"text": "Here is my plan.", "tool_calls": [{"name": "exit_plan_mode", "input": {"plan": "1. Write out.txt with 'built'."}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "out.txt", "content": "built\n"}}]},
        {"text": "Understood, not writing it."},
    ]
    model, hands = setup("anthropic", steps, approval="ask")
    sid = hands.create_session(mode="plan")["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    expect(pg.page.get_by_label("Mode")).to_have_value("plan", timeout=TIMEOUT)
    send(pg, "plan it")
    card = pg.page.get_by_role("group", name="Approval request")
    card.wait_for(timeout=TIMEOUT)
    # The plan is rendered Markdown (a list), and a plan is never allowed for the session.
    assert "Write out.txt" in card.get_by_label("The plan").locator("li").inner_text()
    assert card.get_by_role("button", name="for this session").count() == 0
    card.get_by_role("button", name="Approve the plan").click()
    pg.page.locator(".card.approval", has_text="exit_plan_mode: allowed").wait_for(timeout=TIMEOUT)
    # The mode switch is shown; then write_file asks, and is denied with the user's reason.
    write = pg.page.get_by_role("group", name="Approval request").filter(has_text="write_file")
    write.wait_for(timeout=TIMEOUT)
    # What the write will do, before the user decides: the new file's content.
    details = write.get_by_label("What it will do").inner_text()
    assert details.startswith("new file, 1 line:") and "built" in details, details
    assert pg.page.get_by_label("Mode").input_value() == "build"
    # A plan is the user's each time; a write may be allowed for the rest of the session.
    assert write.get_by_role("button", name="Allow write_file for this session").is_visible()
    write.get_by_label("Reason (optional)").fill("not now, thanks")
    write.get_by_role("button", name="Deny").click()
    pg.page.locator(".log", has_text="Understood, not writing it.").wait_for(timeout=TIMEOUT)
    assert pg.page.locator(".card.approval", has_text="write_file: denied").count() == 1
    assert not (project / "out.txt").exists(), "a denied write writes nothing"
    assert "not now, thanks" in str(model.requests()[-1]), "the reason reaches the model"
    assert hands.get_session(sid)["mode"] == "build"
    assert not pg.foreign(), pg.foreign()


def test_ask_user_answered_with_an_option_and_todos_live(setup, project: Path, open_page) -> None:
    todos = [{"id": "1", "content": "Pick a colour", "status": "in_progress"},
             {"id": "2", "content": "Paint the shed", "status": "pending"}]
    done = [dict(todos[0], status="completed"), dict(todos[1], status="in_progress")]
    steps = [
        {"tool_calls": [{"name": "todo_write", "input": {"todos": todos}}]},
        {"tool_calls": [{"name": "ask_user", "input": {"question": "Which **colour**?", "options": ["red", "blue"]}}]},
        {"tool_calls": [{"name": "todo_write", "input": {"todos": done}}]},
        {"text": "Painting it blue."},
    ]
    model, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    send(pg, "paint the shed")
    question = pg.page.get_by_role("group", name="Question")
    question.wait_for(timeout=TIMEOUT)
    # The todo list is live while the turn waits on the question.
    todo_list = pg.page.get_by_role("region", name="Todos")
    assert todo_list.locator("li").all_inner_texts() == ["▶ Pick a colour", "☐ Paint the shed"]
    assert question.locator("strong", has_text="colour").count() == 1, "the question is Markdown"
    question.get_by_role("button", name="blue").click()
    pg.page.locator(".log", has_text="Painting it blue.").wait_for(timeout=TIMEOUT)
    assert question.locator("em", has_text="answered").count() == 1
    assert todo_list.locator("li").all_inner_texts() == ["☑ Pick a colour", "▶ Paint the shed"]
    assert "blue" in str(model.requests()[2])


def test_a_background_process_tails_and_stops(setup, project: Path, open_page) -> None:
    command = "i=0; while [ $i -lt 600 ]; do echo tick-$i; i=$((i+1)); sleep 0.2; done"
    steps = [
        {"tool_calls": [{"name": "spawn_process", "input": {"command": command, "name": "ticker", "type": "daemon"}}]},
        {"text": "It runs."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    send(pg, "start the ticker")
    procs = pg.page.get_by_role("region", name="Processes")
    procs.locator("li", has_text="ticker").locator(".status", has_text="running").wait_for(timeout=TIMEOUT)
    procs.get_by_text("Output of ticker").click()
    tail = procs.get_by_label("Output of ticker")
    tail.filter(has_text="tick-3").wait_for(timeout=TIMEOUT)
    first = tail.inner_text()
    # It keeps tailing while the process prints.
    pg.page.wait_for_function(
        "([sel, n]) => document.querySelector(sel).innerText.length > n",
        arg=[".tail pre", len(first)], timeout=TIMEOUT)
    shoot(pg.page, "ui-processes.png")
    procs.get_by_role("button", name="Stop").click()
    procs.locator("li", has_text="ticker").locator(".status").filter(has_not_text="running").wait_for(timeout=TIMEOUT)
    rows = hands.request("GET", f"/v1/sessions/{sid}/processes").json()["processes"]
    assert [r["status"] for r in rows] != ["running"], rows
    assert not [p for p in _processes_with(hands.marker) if "tick-" in p]


def _processes_with(marker: str) -> list[str]:
    out = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if marker.encode() in env.read_bytes():
                out.append((env.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError:
            continue
    return out


def test_escape_aborts_a_running_bash_and_its_tree(setup, project: Path, open_page) -> None:
    steps = [
        {"text": "Running it.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 31 & sleep 32; wait"}}]},
        {"text": "Stopped."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    send(pg, "run the long job")
    pg.page.locator(".tool .name", has_text="bash").wait_for(timeout=TIMEOUT)
    deadline = time.monotonic() + 20
    while not [p for p in _processes_with(hands.marker) if "sleep 3" in p] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in _processes_with(hands.marker) if "sleep 3" in p], "the bash tree runs"
    assert pg.page.get_by_role("button", name="Stop").is_visible()
    pg.page.get_by_label("Message").press("Escape")
    pg.page.locator(".notice", has_text="turn ended: aborted").wait_for(timeout=TIMEOUT)
    deadline = time.monotonic() + 15
    while [p for p in _processes_with(hands.marker) if "sleep 3" in p] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in _processes_with(hands.marker) if "sleep 3" in p], "the tree is gone"
    assert pg.page.get_by_role("button", name="Send").is_visible()
    assert hands.get_session(sid)["running_turn"] is None


def test_rename_and_mode_switch(setup, project: Path, open_page) -> None:
    _, hands = setup("anthropic", [{"text": "ok"}])
    sid = hands.create_session(title="first title")["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    pg.page.get_by_role("button", name="Rename").click()
    pg.page.get_by_label("Session title").fill("The shed <b>project</b>")
    pg.page.get_by_label("Session title").press("Enter")
    pg.page.locator(".session h1", has_text="The shed <b>project</b>").wait_for(timeout=TIMEOUT)
    assert hands.get_session(sid)["title"] == "The shed <b>project</b>"
    pg.page.locator(".sessions .title", has_text="The shed").wait_for(timeout=TIMEOUT)
    pg.page.get_by_label("Mode").select_option("plan")
    pg.page.locator(".item > .notice", has_text="mode: plan").wait_for(timeout=TIMEOUT)
    assert hands.get_session(sid)["mode"] == "plan"
    # The API refuses what the form would not send.
    r = hands.request("PATCH", f"/v1/sessions/{sid}", json={"title": "   "})
    assert r.status_code == 400, r.text
    r = hands.request("PATCH", f"/v1/sessions/{sid}", json={})
    assert r.status_code == 400, r.text
    r = hands.request("PATCH", "/v1/sessions/nope", json={"mode": "plan"})
    assert r.status_code == 404, r.text


def test_a_server_restart_mid_session_reconnects_without_loss_or_duplicate(setup, project: Path, open_page) -> None:
    steps = [
        {"text": "First answer.", "tool_calls": [{"name": "read_file", "input": {"path": "hello.txt"}}]},
        {"text": "First done."},
        {"text": "Second answer after the restart."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    send(pg, "one")
    pg.page.locator(".log", has_text="First done.").wait_for(timeout=TIMEOUT)
    # Restart on the same port: the page shows it lost the stream, then resumes.
    hands.listen = f"127.0.0.1:{hands.port}"
    assert hands.stop() == 0
    pg.page.locator('.stream[data-state="reconnecting"]').wait_for(timeout=TIMEOUT)
    hands.start()
    pg.page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)
    send(pg, "two")
    pg.page.locator(".log", has_text="Second answer after the restart.").wait_for(timeout=TIMEOUT)
    ids = stored_events(hands, sid)
    assert ids == list(range(1, len(ids) + 1)), ids
    events, last, gaps = wait_counts(pg, ids[-1])
    assert (events, last, gaps) == (len(ids), ids[-1], 0), "the page folded exactly the stored events"
    assert pg.page.locator(".tool .name").all_inner_texts() == ["read_file"]


def test_a_second_tab_sees_the_session_live(setup, project: Path, open_page) -> None:
    _, hands = setup("anthropic", [{"text": "Seen by both tabs."}])
    sid = hands.create_session()["id"]
    first, second = open_page(hands.base_url), open_page(hands.base_url)
    open_session(first, hands, sid)
    open_session(second, hands, sid)
    send(first, "hello from tab one")
    second.page.locator(".user-msg", has_text="hello from tab one").wait_for(timeout=TIMEOUT)
    second.page.locator(".log", has_text="Seen by both tabs.").wait_for(timeout=TIMEOUT)
    assert log_counts(second)[2] == 0


def test_keyboard_alone_creates_a_session_and_sends(setup, project: Path, open_page) -> None:
    _, hands = setup("anthropic", [{"text": "Typed without a mouse."}])
    pg = open_page(hands.base_url)
    pg.page.goto(f"{pg.base}/")
    pg.page.get_by_label("Token").wait_for()
    assert pg.page.evaluate("document.activeElement.id") == "token", "the token field has focus"
    pg.page.keyboard.type(hands.token)
    pg.page.keyboard.press("Enter")
    pg.page.get_by_role("button", name="New session").wait_for()
    pg.page.keyboard.press("Tab")  # the project root field
    assert pg.page.evaluate("document.activeElement.id") == "root"
    pg.page.keyboard.type(str(project))
    pg.page.keyboard.press("Enter")
    pg.page.wait_for_url("**/#/s/*")
    pg.page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)
    for _ in range(40):  # Tab to the composer
        if pg.page.evaluate("document.activeElement.id") == "composer":
            break
        pg.page.keyboard.press("Tab")
    assert pg.page.evaluate("document.activeElement.id") == "composer"
    pg.page.keyboard.type("hi")
    pg.page.keyboard.press("Shift+Enter")
    pg.page.keyboard.type("there")
    pg.page.keyboard.press("Enter")
    pg.page.locator(".user-msg", has_text="hi\nthere").wait_for(timeout=TIMEOUT)
    pg.page.locator(".log", has_text="Typed without a mouse.").wait_for(timeout=TIMEOUT)


def test_axe_finds_no_serious_violation_and_screenshots(setup, project: Path, browser) -> None:
    (project / "notes.md").write_text("# Notes\n<script>alert(1)</script>\n")
    steps = [
        {"text": "Let me read the **notes**.", "tool_calls": [{"name": "read_file", "input": {"path": "notes.md"}}]},
        {"tool_calls": [{"name": "edit_file", "input": {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
        {"tool_calls": [{"name": "todo_write", "input": {"todos": [{"id": "1", "content": "Fix add", "status": "completed"}, {"id": "2", "content": "Run the tests", "status": "in_progress"}]}}]},
        {"tool_calls": [{"name": "ask_user", "input": {"question": "Run the tests now?", "options": ["yes", "later"]}}]},
        {"text": "Done."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session(title="Fix add in calc.py")["id"]
    # axe is injected as a script, which the page's CSP forbids: this context alone bypasses it.
    ctx = browser.new_context(bypass_csp=True, viewport={"width": 1280, "height": 800})
    try:
        page = ctx.new_page()

        class Pg:
            base = hands.base_url

        pg = Pg()
        pg.page = page
        violations = {}
        page.goto(f"{hands.base_url}/")
        violations["login"] = axe_violations(page)
        open_session(pg, hands, sid)
        send(pg, "fix add")
        page.get_by_role("group", name="Question").wait_for(timeout=TIMEOUT)
        page.locator(".tool summary").nth(1).click()  # the edit's diff
        page.locator(".tool .diff").wait_for(timeout=TIMEOUT)
        violations["session"] = axe_violations(page)
        shoot(page, "ui-session.png")
        page.get_by_role("button", name="yes").click()
        page.locator(".log", has_text="Done.").wait_for(timeout=TIMEOUT)
        page.get_by_role("tab", name="Changes").click()
        page.get_by_role("tabpanel").wait_for(timeout=TIMEOUT)
        violations["changes"] = axe_violations(page)
        bad = {view: v for view, v in violations.items() if v}
        assert not bad, bad
    finally:
        ctx.close()
