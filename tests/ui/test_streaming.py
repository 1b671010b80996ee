"""Streaming in a real browser: the model's text shows while it streams (before turn_ended), a
server restart in the middle of a streaming turn leaves the page with exactly the stored events
(no duplicate, no gap), and a long session is virtualised (only the items in view are in the DOM)
yet every card can be reached and opened."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

TIMEOUT = 30_000  # ms


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


def stored(hands, sid: str) -> list[dict]:
    """Every stored event of the session, read over SSE from the start until idle."""
    events: list[dict] = []
    import json

    with httpx.stream("GET", f"{hands.base_url}/v1/sessions/{sid}/events",
                      headers={"Authorization": f"Bearer {hands.token}"}, timeout=httpx.Timeout(5.0, read=1.5)) as r:
        try:
            for line in r.iter_lines():
                if line.startswith("data:"):
                    events.append(json.loads(line[5:]))
        except httpx.ReadTimeout:
            pass
    return events


def log_counts(pg) -> tuple[int, int, int]:
    """The events the page folded, the last id and the gaps, read in one go (one render)."""
    d = pg.page.evaluate("() => { const l = document.querySelector('.log').dataset;"
                         " return [l.events, l.lastEvent, l.gaps].map(Number); }")
    return (d[0], d[1], d[2])


def wait_last(pg, last: int, timeout: float = 20.0) -> tuple[int, int, int]:
    deadline = time.monotonic() + timeout
    while True:
        counts = log_counts(pg)
        if counts[1] >= last or time.monotonic() > deadline:
            return counts
        time.sleep(0.1)


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


def test_text_is_shown_while_it_streams(setup, project: Path, open_page) -> None:
    text = words(150)
    _, hands = setup("anthropic", [{"text": text, "chunk_delay_ms": 40}])
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    send(pg, "stream something")
    # Part of the text is on the page while the turn still runs: no turn_ended is stored yet.
    pg.page.locator(".log .item.text", has_text="w10 ").wait_for(timeout=TIMEOUT)
    shown = pg.page.locator(".log .item.text").inner_text()
    assert pg.page.locator(".log").get_attribute("data-running") == "yes"
    assert hands.get_session(sid)["running_turn"] is not None, "the turn is still running"
    assert 0 < len(shown) < len(text) and text.startswith(shown.strip()), shown
    assert pg.page.get_by_role("button", name="Stop").is_visible()
    # Then all of it, once.
    pg.page.locator(".log", has_text="w149").wait_for(timeout=TIMEOUT)
    pg.page.get_by_role("button", name="Send").wait_for(timeout=TIMEOUT)
    assert pg.page.locator(".log .item.text").inner_text().strip() == text


def test_a_server_restart_in_the_middle_of_a_streaming_turn(setup, project: Path, open_page) -> None:
    text = words(300)
    steps = [{"text": text, "chunk_delay_ms": 40}, {"text": "After the restart."}]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    send(pg, "stream a long answer")
    pg.page.locator(".log .item.text", has_text="w20 ").wait_for(timeout=TIMEOUT)
    assert pg.page.locator(".log").get_attribute("data-running") == "yes"
    # Stop the server mid-stream and start it again on the same port.
    hands.listen = f"127.0.0.1:{hands.port}"
    assert hands.stop() == 0
    pg.page.locator('.stream[data-state="reconnecting"]').wait_for(timeout=TIMEOUT)
    partial = pg.page.locator(".log .item.text").inner_text()
    assert "w299" not in partial, "the turn was cut before its end"
    hands.start()
    pg.page.locator('.stream[data-state="live"]').wait_for(timeout=TIMEOUT)
    events = stored(hands, sid)
    ids = [e["id"] for e in events]
    assert ids == list(range(1, len(ids) + 1)), ids
    assert [e["type"] for e in events if e["type"] == "turn_ended"] == ["turn_ended"], "the cut turn is ended"
    assert pg.page.locator(".notice", has_text="turn ended:").count() == 1
    assert wait_last(pg, ids[-1]) == (len(ids), ids[-1], 0), "the page holds exactly the stored events"
    # The text on the page is the stored deltas, each once.
    streamed = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert pg.page.locator(".log .item.text").first.inner_text().strip() == streamed.strip()
    # And the session goes on.
    send(pg, "again")
    pg.page.locator(".log", has_text="After the restart.").wait_for(timeout=TIMEOUT)
    events = stored(hands, sid)
    assert wait_last(pg, events[-1]["id"]) == (len(events), events[-1]["id"], 0)


def test_a_long_session_is_virtualised_and_every_card_can_be_opened(setup, project: Path, open_page) -> None:
    # A turn whose call's result is in the transcript, then many direct calls (fast to make).
    steps = [{"tool_calls": [{"name": "read_file", "input": {"path": "notes.md"}}]}, {"text": "Read it."}]
    _, hands = setup("anthropic", steps)
    sid = hands.create_session()["id"]
    hands.post_message(sid, "read the notes")
    deadline = time.monotonic() + 30
    while hands.get_session(sid)["running_turn"] is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    calls = 250
    with httpx.Client(base_url=hands.base_url, headers={"Authorization": f"Bearer {hands.token}"}, timeout=30) as c:
        for i in range(calls):
            r = c.post(f"/v1/sessions/{sid}/tools/read_file", json={"args": {"path": "hello.txt"}})
            assert r.status_code == 200, r.text
    events = stored(hands, sid)
    first_call = next(e["id"] for e in events if e["type"] == "tool_call_started")
    cards = sum(1 for e in events if e["type"] == "tool_call_started")
    assert cards == calls + 1
    pg = open_page(hands.base_url)
    open_session(pg, hands, sid)
    assert wait_last(pg, events[-1]["id"]) == (len(events), events[-1]["id"], 0)
    log = pg.page.locator(".log")
    items = int(log.get_attribute("data-items"))
    assert items == cards + 2, items  # with the user's message and the model's text
    rendered = pg.page.locator(".log .item").count()
    assert 0 < rendered < 60, f"{rendered} of {items} items are in the DOM"
    assert int(log.get_attribute("data-rendered")) == rendered
    # The newest card is in view (the list follows the end); the first is not in the DOM.
    assert pg.page.locator(f'.log [data-key="{events[-2]["id"]}"]').count() == 1
    assert pg.page.locator(f'.log [data-key="{first_call}"]').count() == 0
    # Scrolled to the top, the first card is there and opens to its result.
    pg.page.evaluate("() => { document.querySelector('.log').scrollTop = 0; }")
    first = pg.page.locator(f'.log [data-key="{first_call}"]')
    first.wait_for(timeout=TIMEOUT)
    assert pg.page.locator(f'.log [data-key="{events[-2]["id"]}"]').count() == 0
    first.locator("summary").click()
    first.locator(".result pre", has_text="the needle is here").wait_for(timeout=TIMEOUT)
    # The list does not jump back to the end while the user reads the top.
    pg.page.wait_for_timeout(300)
    assert pg.page.evaluate("() => document.querySelector('.log').scrollTop") < 200
    # A direct call's card (no turn, so no transcript) shows its summary.
    pg.page.evaluate("() => { const l = document.querySelector('.log'); l.scrollTop = l.scrollHeight; }")
    last = pg.page.locator(f'.log [data-key="{events[-2]["id"]}"]')
    last.wait_for(timeout=TIMEOUT)
    last.locator("summary").click()
    last.locator("pre.summary", has_text="hello world").wait_for(timeout=TIMEOUT)
