"""Bad and heavy input to the session API: unknown sessions, answers and approvals nothing waits for,
aborting an idle project, malformed bodies, a 10 MB message, and 100 sessions running a turn at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import httpx

from harness import conversation, text_of, user_texts, wait_until

MB = 1024 * 1024


def error_of(r: httpx.Response) -> tuple[int, str, str]:
    """(status, code, message) of an error response; every one is `{"error": {code, message}}`."""
    assert r.headers.get("content-type", "").startswith("application/json"), (r.status_code, r.headers, r.text[:300])
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"].strip(), body
    return r.status_code, body["error"]["code"], body["error"]["message"]


def test_unknown_sessions_are_404(setup, project: Path) -> None:
    _, hands = setup("anthropic", [])
    for method, path, body in [
        ("GET", "/v1/sessions/nope", None),
        ("DELETE", "/v1/sessions/nope", None),
        ("GET", "/v1/sessions/nope/messages", None),
        ("POST", "/v1/sessions/nope/messages", {"text": "hi"}),
        ("GET", "/v1/sessions/nope/events", None),
        ("POST", "/v1/sessions/nope/abort", None),
        ("POST", "/v1/sessions/nope/tools/read_file", {"args": {"path": "hello.txt"}}),
        ("GET", "/v1/sessions/nope/processes", None),
    ]:
        r = hands.request(method, path, json=body)
        status, code, message = error_of(r)
        assert (status, code) == (404, "not_found"), (method, path, r.text)
        assert "nope" in message, (method, path, message)


def test_answers_and_approvals_that_nothing_waits_for_are_409(setup, project: Path) -> None:
    _, hands = setup("anthropic", [])
    sid = hands.create_session(project_id="quiet")["id"]
    for path, body in [
        ("/vibe/answer", {"answer": "yes"}),
        ("/vibe/answer", {"answer": "yes", "sessionId": sid}),
        ("/vibe/answer", {"answer": "yes", "projectId": "quiet"}),
        ("/vibe/answer", {"answer": "yes", "sessionId": sid, "questionId": "q-1"}),
        (f"/v1/sessions/{sid}/answer", {"answer": "yes"}),
        (f"/v1/sessions/{sid}/approvals/approval-1", {"approve": True}),
    ]:
        status, code, _ = error_of(hands.request("POST", path, json=body))
        assert (status, code) == (409, "conflict"), (path, body, status)


def test_abort_of_an_idle_or_unknown_project_is_200_with_0(setup, project: Path) -> None:
    model, hands = setup("anthropic", [{"text": "done"}])
    r = hands.request("POST", "/vibe/abort/no-such-project")
    assert r.status_code == 200 and r.json() == {"aborted_sessions": 0}, r.text
    # A project whose session exists but runs nothing is idle too.
    sid = hands.create_session(project_id="idle")["id"]
    r = hands.request("POST", "/vibe/abort/idle")
    assert r.status_code == 200, r.text
    assert r.json() == {"aborted_sessions": 0}, "the project is idle: nothing was aborted"
    # ... also after a turn has come and gone; and the session still works afterwards.
    events = hands.events(sid)
    turn = hands.post_message(sid, "hello")
    assert events.turn_end(turn)["reason"] == "completed"
    r = hands.request("POST", "/vibe/abort/idle")
    assert r.status_code == 200 and r.json() == {"aborted_sessions": 0}, r.text
    assert hands.request("POST", f"/v1/sessions/{sid}/abort").status_code == 204, "aborting an idle session is fine"
    assert events.of_type("turn_ended") == [events.turn_end(turn)]


def test_malformed_bodies_are_400(setup, project: Path) -> None:
    _, hands = setup("anthropic", [])
    sid = hands.create_session()["id"]
    json_headers = {"content-type": "application/json"}
    cases = [
        ("/v1/sessions", b"{not json", 400),
        ("/v1/sessions", b"[]", 400),
        ("/v1/sessions", b"{}", 400),  # no root
        ("/v1/sessions", b'{"root": 7}', 400),
        ("/v1/sessions", b'{"root": "relative/path"}', 400),
        ("/v1/sessions", f'{{"root": "{project}/no-such-dir"}}'.encode(), 400),
        ("/v1/sessions", f'{{"root": "{project}", "rooot": 1}}'.encode(), 400),
        ("/v1/sessions", f'{{"root": "{project}", "mode": "yolo"}}'.encode(), 400),
        ("/v1/sessions", f'{{"root": "{project}", "id": "a/b"}}'.encode(), 400),
        (f"/v1/sessions/{sid}/messages", b"", 400),
        (f"/v1/sessions/{sid}/messages", b'{"txt": "hi"}', 400),
        (f"/v1/sessions/{sid}/messages", b'{"text": ""}', 400),
        (f"/v1/sessions/{sid}/messages", b'{"text": "   "}', 400),
        (f"/v1/sessions/{sid}/messages", b'{"text": ["hi"]}', 400),
        (f"/v1/sessions/{sid}/messages", b'{"text": "hi"', 400),
        (f"/v1/sessions/{sid}/messages", b'\xff\xfe', 400),
        (f"/v1/sessions/{sid}/answer", b'{"answer": 1}', 400),
        (f"/v1/sessions/{sid}/approvals/x", b'{"approve": "yes"}', 400),
        (f"/v1/sessions/{sid}/tools/read_file", b'{"args": "hello.txt"}', 400),
        ("/vibe/answer", b'{"sessionId": "x"}', 400),  # no answer
    ]
    for path, body, want in cases:
        r = hands.request("POST", path, content=body, headers=json_headers)
        status, code, message = error_of(r)
        assert status == want, (path, body, status, message)
    # Not JSON at all.
    r = hands.request("POST", f"/v1/sessions/{sid}/messages", content=b"text=hi", headers={"content-type": "text/plain"})
    assert error_of(r)[0] == 415
    # Without the token.
    r = httpx.get(f"{hands.base_url}/v1/sessions", timeout=10)
    assert error_of(r)[:2] == (401, "unauthorized")
    r = httpx.get(f"{hands.base_url}/v1/sessions", headers={"Authorization": "Bearer wrong"}, timeout=10)
    assert error_of(r)[0] == 401
    # None of it created anything, started a turn, or hurt the server.
    assert [s["id"] for s in hands.request("GET", "/v1/sessions").json()["sessions"]] == [sid]
    assert hands.get_session(sid)["running_turn"] is None
    assert hands.transcript(sid) == []


def test_a_message_while_a_turn_runs_is_409(setup, project: Path) -> None:
    model, hands = setup("anthropic", [{"hang": True}])
    sid = hands.create_session()["id"]
    events = hands.events(sid)
    turn = hands.post_message(sid, "first")
    wait_until(lambda: model.answered() == 1, 20, "the model call")
    status, code, message = error_of(hands.request("POST", f"/v1/sessions/{sid}/messages", json={"text": "second"}))
    assert (status, code) == (409, "conflict") and turn in message
    assert hands.request("POST", f"/v1/sessions/{sid}/abort").status_code == 204
    assert events.turn_end(turn)["reason"] == "aborted"


def test_a_10_mb_message_is_accepted_stored_and_sent(setup, project: Path) -> None:
    """The documented cap is `[server] max_body_bytes`, 16 MiB by default: a 10 MB message is
    taken, stored and sent to the model whole; a body over the cap is 413."""
    model, hands = setup("anthropic", [{"text": "That was long."}])
    sid = hands.create_session()["id"]
    events = hands.events(sid)
    big = "a big message\n" + ("0123456789abcdef" * (10 * MB // 16))
    assert len(big.encode()) > 10 * MB
    turn = hands.post_message(sid, big)
    assert events.turn_end(turn)["reason"] == "completed"
    transcript = hands.transcript(sid)
    assert transcript[0]["content"] == [{"type": "text", "text": big}]
    assert user_texts("anthropic", model.requests()[0]) == [big]
    assert hands.get_session(sid)["title"] == "a big message"

    over = "x" * (16 * MB + 1)
    status, code, message = error_of(hands.request("POST", f"/v1/sessions/{sid}/messages", json={"text": over}))
    assert (status, code) == (413, "payload_too_large"), message
    assert "max_body_bytes" in message
    assert len(hands.transcript(sid)) == 2, "the refused message was not stored"


def test_a_configured_body_cap_refuses_a_10_mb_message_with_413(setup, project: Path) -> None:
    model, hands = setup("openai", [{"text": "short one"}], extra_config="[server]\nmax_body_bytes = 1048576\n")
    sid = hands.create_session()["id"]
    status, code, message = error_of(hands.request("POST", f"/v1/sessions/{sid}/messages", json={"text": "y" * (10 * MB)}))
    assert (status, code) == (413, "payload_too_large")
    assert "1048576" in message
    assert model.answered() == 0 and hands.transcript(sid) == []
    # Under the cap still works.
    events = hands.events(sid)
    turn = hands.post_message(sid, "y" * (MB // 2))
    assert events.turn_end(turn)["reason"] == "completed"
    assert text_of(conversation("openai", model.requests()[0])[0]["content"]) == "y" * (MB // 2)


def test_100_concurrent_sessions_each_running_a_turn(setup, project: Path) -> None:
    """100 sessions created and sent a message at once: every turn completes, no request gets a
    5xx, and the model answered exactly 100 requests; bounded in time."""
    n = 100
    model, hands = setup("openai", [{"text": f"done {i}"} for i in range(n)])
    started = time.monotonic()

    async def run() -> list[httpx.Response]:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(base_url=hands.base_url, headers={"Authorization": f"Bearer {hands.token}"},
                                     timeout=httpx.Timeout(60.0), limits=limits) as client:
            responses: list[httpx.Response] = []

            async def one(i: int) -> None:
                r = await client.post("/v1/sessions", json={"root": str(project), "id": f"load-{i}", "project_id": f"load-{i % 7}"})
                responses.append(r)
                assert r.status_code == 201, r.text
                r = await client.post(f"/v1/sessions/load-{i}/messages", json={"text": f"task {i}"})
                responses.append(r)
                assert r.status_code == 202, r.text

            await asyncio.gather(*(one(i) for i in range(n)))

            async def all_done() -> bool:
                r = await client.get("/v1/sessions")
                responses.append(r)
                sessions = r.json()["sessions"]
                return len(sessions) == n and all(s["running_turn"] is None for s in sessions)

            deadline = time.monotonic() + 120
            while not await all_done():
                assert time.monotonic() < deadline, "100 one-step turns did not finish within 120 s"
                await asyncio.sleep(0.2)

            async def check(i: int) -> None:
                r = await client.get(f"/v1/sessions/load-{i}/messages")
                responses.append(r)
                messages = r.json()["messages"]
                assert [m["role"] for m in messages] == ["user", "assistant"], (i, messages)
                assert messages[0]["content"][0]["text"] == f"task {i}"
                assert messages[1]["content"][0]["text"].startswith("done ")

            await asyncio.gather(*(check(i) for i in range(n)))
            return responses

    responses = asyncio.run(run())
    elapsed = time.monotonic() - started
    assert not [r for r in responses if r.status_code >= 500], "no 5xx"
    assert model.answered() == n
    assert sorted(text_of(conversation("openai", r)[0]["content"]) for r in model.requests()) == sorted(f"task {i}" for i in range(n))
    answers = sorted(hands.transcript(f"load-{i}")[1]["content"][0]["text"] for i in range(n))
    assert answers == sorted(f"done {i}" for i in range(n)), "each step of the script answered one session"
    assert elapsed < 120, f"took {elapsed:.0f} s"
