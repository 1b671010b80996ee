"""What the page tells the user while things happen (issue 34, items 2, 3, 9 and 10), in a real
browser against the real `hands serve` and the scripted model: a "thinking" row with its seconds
until the model's text or call shows; red cards with the exit code for failed commands; an error
banner that goes once a later request succeeds and "reconnecting…" (never `Failed to fetch`)
while the server is gone; cards that summarise their calls, process rows that say their state
once, answered questions with their answers, and a side panel the user can widen."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import shoot

TIMEOUT = 20_000  # ms


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


def test_a_thinking_row_counts_seconds_until_text_or_a_call_shows(setup, project: Path, open_page) -> None:
    steps = [
        {"delay_ms": 2500, "tool_calls": [{"name": "read_file", "input": {"path": "hello.txt"}}]},
        {"delay_ms": 1500, "text": "Read it, after some thought."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    page = pg.page
    send(pg, "think first")
    thinking = page.locator(".log .thinking[role=status]")
    thinking.wait_for(timeout=TIMEOUT)
    assert thinking.inner_text().startswith("Thinking…"), thinking.inner_text()
    assert page.locator(".tool").count() == 0
    # Its seconds move while the model works.
    page.wait_for_function("() => Number(document.querySelector('.log .thinking[role=status]')?.dataset.seconds) >= 1", timeout=TIMEOUT)
    assert re.fullmatch(r"Thinking… [1-9]\d* s", thinking.inner_text().strip()), thinking.inner_text()
    # The call's card replaces it; once the call is done, the model thinks again until its text.
    page.locator(".tool .name", has_text="read_file").wait_for(timeout=TIMEOUT)
    page.locator(".log .thinking[role=status]").wait_for(timeout=TIMEOUT)
    order = page.evaluate("() => [...document.querySelectorAll('.log .item')].map(e => e.className.split(' ')[1])")
    assert order[-2:] == ["tool", "thinking"], order
    page.locator(".log .item.text", has_text="after some thought").wait_for(timeout=TIMEOUT)
    assert page.locator(".log .thinking[role=status]").count() == 0, "streamed text replaces the thinking row"
    page.get_by_role("button", name="Send").wait_for(timeout=TIMEOUT)
    assert page.locator(".log .thinking[role=status]").count() == 0


def test_failed_commands_are_red_with_their_exit_code(setup, project: Path, open_page) -> None:
    steps = [
        {"tool_calls": [{"name": "bash", "input": {"command": "echo fine"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "echo oops; exit 3"}}]},
        # More output than the event's 300-character summary holds: the result tells the code.
        {"tool_calls": [{"name": "bash", "input": {"command": "seq 1 400; exit 2"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "kill -9 $$"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "sleep 20", "timeout": 1000}}]},
        {"text": "Four of five failed."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    page = pg.page
    send(pg, "run the commands")
    page.locator(".log", has_text="Four of five failed.").wait_for(timeout=30_000)
    cards = page.locator("details.tool")
    assert cards.count() == 5
    page.locator("details.tool.error").nth(3).wait_for(timeout=TIMEOUT)  # the third reads its result
    classes = [c.split()[1] for c in cards.evaluate_all("cs => cs.map(c => c.className)")]
    assert classes == ["ok", "error", "error", "error", "error"], classes
    status = page.locator(".tool .status").all_inner_texts()
    assert status[0].startswith("exit 0 · ") and status[0].endswith(" ms"), status
    assert status[1].startswith("exit 3 · "), status
    assert status[2].startswith("exit 2 · "), status
    assert status[3].startswith("SIGKILL · "), status
    assert status[4].startswith("timed out · "), status
    # Red is red: the failed card's border is the error colour, the good one's is not.
    border = cards.evaluate_all("cs => cs.map(c => getComputedStyle(c).borderTopColor)")
    assert border[1] == border[2] == border[3] == border[4] != border[0], border
    shoot(page, "ui-failure.png")


def test_an_error_banner_goes_when_the_next_request_succeeds_and_a_lost_server_reads_reconnecting(setup, project: Path, open_page) -> None:
    steps = [{"text": "Back again."}]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session(title="before")["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    page = pg.page
    # A refused rename (a blank title) shows the server's words in the banner ...
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Session title").fill("   ")
    page.get_by_label("Session title").press("Enter")
    banner = page.locator(".banner.error")
    banner.wait_for(timeout=TIMEOUT)
    assert banner.get_attribute("role") == "alert" and banner.inner_text().strip(), banner.inner_text()
    # ... until a later change succeeds.
    page.get_by_label("Session title").fill("after")
    page.get_by_label("Session title").press("Enter")
    page.locator(".session h1", has_text="after").wait_for(timeout=TIMEOUT)
    banner.wait_for(state="detached", timeout=TIMEOUT)

    # The server goes away: the page says it reconnects, whatever the user does meanwhile.
    hands.listen = f"127.0.0.1:{hands.port}"
    assert hands.stop() == 0
    offline = page.locator(".banner.offline")
    offline.wait_for(timeout=TIMEOUT)
    assert "reconnecting…" in offline.inner_text()
    send(pg, "are you there?")
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Session title").fill("while it is down")
    page.get_by_label("Session title").press("Enter")
    text = page.locator("body").inner_text()
    assert "Failed to fetch" not in text and "NetworkError" not in text, text
    assert page.locator(".banner.error").count() == 0
    assert page.locator('.stream[data-state="reconnecting"]').count() == 1
    shoot(page, "ui-reconnecting.png")
    # Back on the same port with the same state: the banner goes and the session goes on.
    hands.start()
    page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)
    offline.wait_for(state="detached", timeout=TIMEOUT)
    page.get_by_label("Session title").press("Escape")
    send(pg, "and now?")
    page.locator(".log", has_text="Back again.").wait_for(timeout=TIMEOUT)
    assert page.locator(".banner").count() == 0
    assert "Failed to fetch" not in page.locator("body").inner_text()


def test_cards_summarise_processes_say_their_state_once_and_answers_show(setup, project: Path, open_page) -> None:
    todos = [{"id": "1", "content": "Serve the files", "status": "in_progress"},
             {"id": "2", "content": "Ask the colour", "status": "pending"},
             {"id": "3", "content": "Stop the server", "status": "pending"}]
    server = "exec python3 -u -m http.server 0 --bind 127.0.0.1"
    steps = [
        {"tool_calls": [{"name": "todo_write", "input": {"todos": todos}}]},
        {"tool_calls": [{"name": "spawn_process", "input": {"command": server, "name": "files", "type": "daemon"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "page.html", "content": "<p>one</p>\n<p>two</p>\n"}}]},
        {"tool_calls": [{"name": "spawn_process", "input": {"command": "echo started; sleep 1; echo built-it", "name": "build", "type": "long-run"}}]},
        # The build ends while this runs: its notice rides on this result.
        {"tool_calls": [{"name": "bash", "input": {"command": "sleep 3"}}]},
        {"tool_calls": [{"name": "ask_user", "input": {"question": "Which colour?", "options": ["red", "blue"]}}]},
        {"text": "Blue, then."},
    ]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    page = pg.page
    send(pg, "serve and ask")
    question = page.get_by_role("group", name="Question")
    question.wait_for(timeout=TIMEOUT)
    question.get_by_role("button", name="blue").click()
    page.locator(".log", has_text="Blue, then.").wait_for(timeout=TIMEOUT)
    # The answer stays on the question.
    question.locator(".answer", has_text="blue").wait_for(timeout=TIMEOUT)
    assert question.locator(".answer").inner_text() == "Answered: blue"
    # The cards' headers say what each call does.
    lines = list(zip(page.locator(".tool .name").all_inner_texts(), page.locator(".tool .args").all_inner_texts()))
    assert lines == [
        ("todo_write", "3 tasks, 1 in progress"),
        ("spawn_process", server),
        ("write_file", "page.html (2 lines)"),
        ("spawn_process", "echo started; sleep 1; echo built-it"),
        ("bash", "sleep 3"),
        ("ask_user", "Which colour?"),
    ], lines
    # The process row: its URL on its own, apart from the port; stopped, said once.
    procs = page.get_by_role("region", name="Processes")
    row = procs.locator("li", has_text="files")
    row.locator(".status", has_text="running").wait_for(timeout=TIMEOUT)
    url = row.locator("a.url")
    url.wait_for(timeout=TIMEOUT)
    assert url.inner_text().startswith("http://127.0.0.1:"), url.inner_text()
    meta = row.locator(".meta").inner_text()
    assert "port" not in meta and ":" not in meta, meta
    row.get_by_role("button", name="Stop").click()
    row.locator(".status").filter(has_not_text="running").wait_for(timeout=TIMEOUT)
    line = row.locator(".proc-line").inner_text()
    assert line.count("stopped") == 1, line
    # The build's end reached the model as a notice; the user reads its first line, and its last
    # lines of output on demand, without the words for the model.
    notice = page.locator(".log .item .notice", has_text="exited with code 0")
    assert notice.count() == 1, page.locator(".log .item .notice").all_inner_texts()
    assert notice.inner_text().startswith("Background process build exited with code 0 after "), notice.inner_text()
    assert "[notice]" not in notice.inner_text() and "`" not in notice.inner_text()
    assert "Last lines:" not in notice.inner_text()
    notice.locator("summary", has_text="Last lines").click()
    assert "built-it" in notice.locator("pre").inner_text()


def test_the_side_panel_widens_with_its_handle_and_keeps_its_width(setup, project: Path, open_page) -> None:
    _, hands = setup("anthropic", [{"text": "ok"}])
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    page = pg.page
    aside = page.locator(".session aside")
    before = aside.bounding_box()["width"]
    handle = page.get_by_role("separator", name="Resize the side panel")
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(x - 25 * step, y)
    page.mouse.up()
    after = aside.bounding_box()["width"]
    assert abs(after - (before + 250)) <= 8, (before, after)
    kept = page.evaluate("() => localStorage.getItem('hands.sideWidth')")
    assert kept is not None and abs(int(kept) - after) <= 8, kept
    # With the keyboard too: the left arrow widens it.
    handle.focus()
    page.keyboard.press("ArrowLeft")
    wider = aside.bounding_box()["width"]
    assert wider > after, (after, wider)
    # A reload keeps it.
    page.reload()
    page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)
    assert abs(page.locator(".session aside").bounding_box()["width"] - wider) <= 2
    # Never wider than the window leaves the conversation room for.
    handle = page.get_by_role("separator", name="Resize the side panel")
    handle.focus()
    for _ in range(60):
        page.keyboard.press("ArrowLeft")
    log = page.locator(".log").bounding_box()["width"]
    assert log >= 300, log
