"""The event stream of a session: a client that drops the connection mid-turn and reconnects with
Last-Event-ID gets exactly the events it missed, none twice."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from harness import EventStream, wait_until

WORDS = " ".join(f"word{i}" for i in range(30))


def turn_script() -> list[dict]:
    """A turn of about three seconds with many events: slow text, a bash call, slow text."""
    return [
        {"text": WORDS, "chunk_delay_ms": 40, "tool_calls": [{"name": "bash", "input": {"command": "sleep 0.5; echo slept"}}]},
        {"text": WORDS, "chunk_delay_ms": 40},
    ]


def test_reconnect_with_last_event_id_gets_exactly_the_missed_events(setup, project: Path) -> None:
    model, hands = setup("anthropic", turn_script())
    sid = hands.create_session()["id"]
    turn = hands.post_message(sid, "talk slowly")

    # Connect, read a little, drop the connection, wait, reconnect with Last-Event-ID — over and
    # over until the turn ends.
    received: list[dict] = []
    connections = 0
    ended = False
    last: int | None = None
    deadline = time.monotonic() + 60
    while not ended:
        assert time.monotonic() < deadline, "the turn did not end"
        stream = EventStream(hands.base_url, hands.token, sid, last_event_id=last)
        assert stream.status == 200
        connections += 1
        try:
            stream.wait_for(lambda d: True, 20, "an event after reconnecting")
            time.sleep(0.15)
        finally:
            stream.close()
        got = stream.data()
        assert not stream.errors, stream.errors
        assert got, "every connection got events"
        if last is not None:
            assert got[0]["id"] == last + 1, f"resumed right after {last}, got {got[0]['id']}"
        received += got
        last = got[-1]["id"]
        ended = any(d["type"] == "turn_ended" and d["turn_id"] == turn for d in got)
        time.sleep(0.2)  # events go on while no one listens
    assert connections >= 3, f"the turn should span several reconnections, it spanned {connections}"

    full = hands.events(sid)
    full.turn_end(turn)
    wait_until(lambda: len(full.data()) >= len(received), 10, "the full replay")
    time.sleep(0.3)
    everything = full.data()
    ids = [d["id"] for d in received]
    assert len(ids) == len(set(ids)), "no event twice"
    assert ids == list(range(1, len(ids) + 1)), "no event missed"
    assert received == everything, "the pieces are exactly the whole stream"
    assert everything[-1]["type"] == "turn_ended"
    text = "".join(d["text"] for d in everything if d["type"] == "text_delta")
    assert text == WORDS + WORDS


def test_after_query_last_event_id_header_and_a_bad_id(setup, project: Path) -> None:
    model, hands = setup("openai", [{"text": "one two three four five"}])
    sid = hands.create_session()["id"]
    full = hands.events(sid)
    turn = hands.post_message(sid, "count")
    full.turn_end(turn)
    everything = full.data()
    assert len(everything) >= 3
    k = everything[1]["id"]

    by_query = hands.events(sid, after=k)
    by_query.turn_end(turn, timeout=10)
    # The header is the newer position: it wins over ?after= (a reconnecting EventSource keeps the
    # URL of its first connection).
    both = hands.events(sid, last_event_id=k, after=0)
    both.turn_end(turn, timeout=10)
    at_end = hands.events(sid, last_event_id=everything[-1]["id"])
    time.sleep(1.0)
    assert by_query.data() == everything[2:]
    assert both.data() == everything[2:]
    assert at_end.data() == [], "nothing after the last event (yet)"

    # A live event (a direct tool call's) reaches a stream that is up to date.
    r = hands.request("POST", f"/v1/sessions/{sid}/tools/read_file", json={"args": {"path": "hello.txt"}})
    assert r.status_code == 200, r.text
    assert "hello world" in r.json()["content"][0]["text"]
    started = at_end.wait_type("tool_call_started", timeout=10, name="read_file")
    assert started["id"] == everything[-1]["id"] + 1 and started["turn_id"] is None

    r = httpx.get(f"{hands.base_url}/v1/sessions/{sid}/events",
                  headers={"Authorization": f"Bearer {hands.token}", "Last-Event-ID": "seven"}, timeout=10)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == "bad_request" and "Last-Event-ID" in r.json()["error"]["message"]
