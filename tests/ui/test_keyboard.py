"""The main flows with the keyboard alone, in a real browser: send, allow an approval, deny one
with a reason, answer ask_user with an option, and stop a running turn with the Stop button and
with Esc. No mouse event is sent: focus moves with Tab and Shift+Tab, buttons are pressed with
Enter or Space."""

from __future__ import annotations

import time
from pathlib import Path

TIMEOUT = 30_000  # ms


def login_keyboard(pg, hands, sid: str) -> None:
    page = pg.page
    page.goto(f"{pg.base}/#/s/{sid}")
    page.get_by_label("Token").wait_for()
    assert page.evaluate("document.activeElement.id") == "token"
    page.keyboard.type(hands.token)
    page.keyboard.press("Enter")
    page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)


def focused(page) -> dict:
    return page.evaluate(
        "() => { const e = document.activeElement; return {tag: e.tagName, id: e.id, text: e.innerText || '',"
        " label: e.getAttribute('aria-label') || '', inCard: !!e.closest('.card')}; }")


def tab_to(page, want, backwards: bool = False, limit: int = 60) -> dict:
    """Press Tab (or Shift+Tab) until `want(focused)` holds."""
    for _ in range(limit):
        now = focused(page)
        if want(now):
            return now
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
    raise AssertionError(f"focus never reached the element; last: {focused(page)}")


def to_composer(page) -> None:
    tab_to(page, lambda f: f["id"] == "composer")


def type_and_send(page, text: str) -> None:
    to_composer(page)
    page.keyboard.type(text)
    page.keyboard.press("Enter")


def test_approvals_allowed_and_denied_with_the_keyboard(setup, project: Path, open_page) -> None:
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {"path": "kept.txt", "content": "yes\n"}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "refused.txt", "content": "no\n"}}]},
        {"text": "One written, one refused."},
    ]
    model, hands = setup("anthropic", steps, approval="ask")
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    login_keyboard(pg, hands, sid)
    page = pg.page
    type_and_send(page, "write two files")
    card = page.get_by_role("group", name="Approval request")
    card.filter(has_text="kept.txt").wait_for(timeout=TIMEOUT)
    # Back from the composer into the card: Allow once, with Enter.
    tab_to(page, lambda f: f["tag"] == "BUTTON" and f["text"] == "Allow once" and f["inCard"], backwards=True)
    page.keyboard.press("Enter")
    page.locator(".card.approval", has_text="write_file: allowed").wait_for(timeout=TIMEOUT)
    assert (project / "kept.txt").read_text() == "yes\n"
    # The second: a reason typed in its field, then Deny with Space.
    card.filter(has_text="refused.txt").wait_for(timeout=TIMEOUT)
    to_composer(page)
    tab_to(page, lambda f: f["label"] == "Reason (optional)", backwards=True)
    page.keyboard.type("not that one")
    tab_to(page, lambda f: f["tag"] == "BUTTON" and f["text"] == "Deny")
    page.keyboard.press("Space")
    page.locator(".log", has_text="One written, one refused.").wait_for(timeout=TIMEOUT)
    assert page.locator(".card.approval", has_text="write_file: denied").count() == 1
    assert not (project / "refused.txt").exists()
    assert "not that one" in str(model.requests()[-1])


def test_a_question_answered_and_turns_stopped_with_the_keyboard(setup, project: Path, open_page) -> None:
    steps = [
        {"tool_calls": [{"name": "ask_user", "input": {"question": "Which one?", "options": ["left", "right"]}}]},
        {"text": "Right it is."},
        # An aborted turn asks the model nothing more: the next turn takes the next step.
        {"text": "Starting.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 41"}}]},
        {"text": "Starting again.", "tool_calls": [{"name": "bash", "input": {"command": "sleep 42"}}]},
    ]
    model, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    login_keyboard(pg, hands, sid)
    page = pg.page
    type_and_send(page, "ask me")
    page.get_by_role("group", name="Question").wait_for(timeout=TIMEOUT)
    tab_to(page, lambda f: f["tag"] == "BUTTON" and f["text"] == "right", backwards=True)
    page.keyboard.press("Enter")
    page.locator(".log", has_text="Right it is.").wait_for(timeout=TIMEOUT)
    assert "right" in str(model.requests()[1])

    # Stop with the Stop button, reached with Tab from the composer.
    page.get_by_role("button", name="Send").wait_for(timeout=TIMEOUT)
    type_and_send(page, "run the first job")
    page.locator(".tool .name", has_text="bash").wait_for(timeout=TIMEOUT)
    to_composer(page)
    tab_to(page, lambda f: f["tag"] == "BUTTON" and f["text"] == "Stop")
    page.keyboard.press("Enter")
    page.locator(".notice", has_text="turn ended: aborted").wait_for(timeout=TIMEOUT)
    page.get_by_role("button", name="Send").wait_for(timeout=TIMEOUT)

    # Stop with Esc from the composer.
    type_and_send(page, "run the second job")
    page.locator(".tool .name", has_text="bash").nth(1).wait_for(timeout=TIMEOUT)
    to_composer(page)
    page.keyboard.press("Escape")
    page.locator(".notice", has_text="turn ended: aborted").nth(1).wait_for(timeout=TIMEOUT)
    deadline = time.monotonic() + 10
    while hands.get_session(sid)["running_turn"] is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert hands.get_session(sid)["running_turn"] is None
