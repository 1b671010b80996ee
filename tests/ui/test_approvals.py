"""Approvals in a real browser (issue 34, item 1): the card shows what the call will do, whole —
an existing file's diff coloured by sign, a long command to its last character — and offers Allow
once, Allow <tool> for this session and Deny; after "for this session" the tool's next call runs
without a card, while another tool still asks."""

from __future__ import annotations

from pathlib import Path

from conftest import shoot

TIMEOUT = 20_000  # ms


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


def test_a_diff_shown_whole_then_allowed_for_the_session_so_the_next_write_asks_nothing(setup, project: Path, open_page) -> None:
    # Longer than the 300 characters an approval's summary keeps: the card shows all of it.
    command = "echo start; " + " ".join(f"echo step-{i};" for i in range(40)) + " echo the-end-of-the-command"
    assert len(command) > 400
    steps = [
        {"tool_calls": [{"name": "read_file", "input": {"path": "hello.txt"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "hello.txt", "content": "hello there\nsecond line\n"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "new.txt", "content": "one\ntwo\nthree\n"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": command}}]},
        {"text": "All written."},
    ]
    _, hands = setup("anthropic", steps, approval="ask")
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    page = pg.page
    send(pg, "change hello.txt and add new.txt")
    card = page.get_by_role("group", name="Approval request")
    card.wait_for(timeout=TIMEOUT)
    assert "write_file asks for approval" in card.inner_text()
    # The existing file's diff, each line coloured by its sign, in a monospace scrollable block.
    diff = card.get_by_label("What it will do")
    assert diff.evaluate("e => e.tagName") == "PRE"
    assert diff.locator(".del").all_inner_texts() == ["-hello world\n"]
    assert diff.locator(".add").all_inner_texts() == ["+hello there\n"]
    colours = diff.evaluate("e => ['.add', '.del', '.file'].map(s => getComputedStyle(e.querySelector(s)).color)")
    assert len(set(colours)) == 3, colours
    style = diff.evaluate("e => { const s = getComputedStyle(e); return [s.fontFamily, s.overflowY]; }")
    assert "monospace" in style[0] and style[1] == "auto", style
    buttons = card.get_by_role("button").all_inner_texts()
    assert buttons == ["Allow once", "Allow write_file for this session", "Deny"], buttons
    shoot(page, "ui-approval.png")
    card.get_by_role("button", name="Allow write_file for this session").click()
    page.locator(".card.approval", has_text="write_file: allowed for the rest of this session").wait_for(timeout=TIMEOUT)

    # The second write asks nothing; bash, another tool, still asks, and shows its whole command.
    bash = page.get_by_role("group", name="Approval request")
    bash.wait_for(timeout=TIMEOUT)
    assert "bash asks for approval" in bash.inner_text()
    assert bash.get_by_label("The call").inner_text() == command
    assert (project / "new.txt").read_text() == "one\ntwo\nthree\n", "the second write ran without asking"
    assert page.locator(".card.approval").count() == 2
    bash.get_by_role("button", name="Allow once").click()
    page.locator(".log", has_text="All written.").wait_for(timeout=TIMEOUT)
    assert page.locator(".card.approval", has_text="bash: allowed").count() == 1
    assert (project / "hello.txt").read_text() == "hello there\nsecond line\n"
    assert page.locator(".tool .name").all_inner_texts() == ["read_file", "write_file", "write_file", "bash"]
    # What each card says in its header: words, not the arguments' JSON.
    args = page.locator(".tool .args").all_inner_texts()
    assert args[:3] == ["hello.txt", "hello.txt (2 lines)", "new.txt (3 lines)"], args
    assert args[3] == "echo start; echo step-0;" + command[len("echo start; echo step-0;"):], args
    assert "{" not in "".join(args)
    # The session's record says the same: one approval for the session, one once.
    stream = hands.events(sid)
    stream.wait_type("turn_ended")
    decided = stream.of_type("approval_decided")
    assert [(e["approved"], e.get("for_session", False)) for e in decided] == [(True, True), (True, False)], decided
    assert not pg.foreign(), pg.foreign()
