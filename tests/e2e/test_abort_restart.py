"""Turns that do not go smoothly: an abort mid-bash over /vibe/abort/{projectId} and mid-stream over
the session API, a rate-limited model call retried after retry-after, and hands restarted between
turns and in the middle of one, then resumed from its store."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

from harness import (
    call_id,
    conversation,
    processes_with,
    tool_calls_in,
    tool_results,
    transcript_is_valid,
    user_texts,
    wait_until,
)

# A process tree: a foreground sleep, a background one in a subshell, a setsid'd one.
TREE = "(sleep 301 &); setsid sleep 302 & sleep 300; echo never"


def sleeps_of(session_id: str) -> list[tuple[int, str]]:
    """The `sleep 30x` processes that carry the session's marker (HANDS_SESSION) in their env."""
    return [(pid, cmd) for pid, cmd in processes_with(f"HANDS_SESSION={session_id}") if cmd.startswith("sleep 30")]


def test_abort_mid_bash_over_vibe_abort(setup, project: Path) -> None:
    """POST /vibe/abort/{projectId} while bash runs a process tree: every process of it is gone,
    the turn ends `aborted`, the bash call ends as an error, the transcript stays valid, and the
    next turn sends the model a conversation where every tool use has its result."""
    model, hands = setup("anthropic", [
        {"text": "Running it.", "tool_calls": [{"name": "bash", "input": {"command": TREE}}]},
        {"text": "Ok, I stopped."},
    ])
    session = hands.create_session(project_id="tree")
    sid = session["id"]
    events = hands.events(sid)
    turn = hands.post_message(sid, "run the long job")
    events.wait_type("tool_call_started", name="bash")
    tree = wait_until(lambda: len(sleeps_of(sid)) == 3 and sleeps_of(sid), 20, "the three sleeps to run")
    assert {pid for pid, _ in tree} <= {pid for pid, _ in processes_with(hands.marker)}, "hands' children inherit its env"
    assert hands.get_session(sid)["running_turn"] == turn

    started = time.monotonic()
    r = hands.request("POST", "/vibe/abort/tree")
    assert r.status_code == 200, r.text
    assert r.json() == {"aborted_sessions": 1}

    end = events.turn_end(turn, timeout=30)
    assert end["reason"] == "aborted", end
    finished = events.wait_type("tool_call_finished", name="bash")
    assert finished["is_error"] is True, finished
    wait_until(lambda: not sleeps_of(sid), 15, f"the bash tree to be gone (left: {sleeps_of(sid)})")
    assert time.monotonic() - started < 15
    # Not only the session's marker: no process of this command line survives at all.
    assert not [p for p in processes_with(hands.marker) if "sleep 30" in p[1]]
    assert hands.get_session(sid)["running_turn"] is None
    assert model.answered() == 1, "no model call after the abort"

    transcript = hands.transcript(sid)
    assert transcript_is_valid(transcript) == [], transcript
    assert [m["role"] for m in transcript] == ["user", "assistant", "user"]
    [result] = [b for b in transcript[2]["content"] if b["type"] == "tool_result"]
    assert result["tool_use_id"] == call_id("anthropic", 0, 0) and result["is_error"] is True

    # The session goes on: the aborted call's result goes to the model with the next message.
    turn2 = hands.post_message(sid, "never mind")
    assert events.turn_end(turn2)["reason"] == "completed"
    request = model.requests()[1]
    [wire] = tool_results("anthropic", request)
    assert wire.call_id == call_id("anthropic", 0, 0) and wire.is_error is True
    assert user_texts("anthropic", request) == ["run the long job", "never mind"]
    assert transcript_is_valid(hands.transcript(sid)) == []


def test_abort_while_the_model_streams(setup, project: Path) -> None:
    """POST /v1/sessions/{id}/abort while the model's answer hangs mid-stream: the turn ends
    `aborted` at once and the next turn works (OpenAI wire format)."""
    model, hands = setup("openai", [{"hang": True}, {"text": "Back again."}])
    session = hands.create_session()
    sid = session["id"]
    events = hands.events(sid)
    turn = hands.post_message(sid, "think hard")
    wait_until(lambda: model.answered() == 1, 20, "the model call to start")
    time.sleep(0.3)
    r = hands.request("POST", f"/v1/sessions/{sid}/abort")
    assert r.status_code == 204, r.text
    end = events.turn_end(turn, timeout=20)
    assert end["reason"] == "aborted"
    assert events.of_type("error") == [], "an abort is not an error"

    turn2 = hands.post_message(sid, "try again")
    end2 = events.turn_end(turn2)
    assert end2["reason"] == "completed" and end2["text"] == "Back again."
    # The aborted turn left a user message without an answer: the two go as one user message.
    request = model.requests()[1]
    assert conversation("openai", request) == [{"role": "user", "content": [
        {"type": "text", "text": "think hard"}, {"type": "text", "text": "try again"}]}]
    assert transcript_is_valid(hands.transcript(sid)) == []


def test_rate_limited_then_success(setup, project: Path, fmt: str) -> None:
    """A 429 with retry-after: 1, then a good answer: the turn completes after waiting about a
    second, with no error, and the model server saw the same request twice."""
    model, hands = setup(fmt, [{"status": 429, "retry_after": 1}, {"text": "Hello after the wait."}])
    session = hands.create_session()
    events = hands.events(session["id"])
    turn = hands.post_message(session["id"], "say hello")
    end = events.turn_end(turn)
    assert end["reason"] == "completed" and end["text"] == "Hello after the wait."
    assert events.of_type("error") == []
    started = events.wait_type("turn_started", turn_id=turn)
    assert end["at_ms"] - started["at_ms"] >= 900, "retry-after: 1 was honoured"
    requests = model.requests()
    assert len(requests) == 2 and model.answered() == 2
    assert requests[0] == requests[1], "the retry sends the same request"
    assert user_texts(fmt, requests[1]) == ["say hello"]


def test_restart_between_turns_then_resume(setup, project: Path, fmt: str) -> None:
    """Run a turn, stop hands serve with SIGTERM, start it again on the same store: the session,
    its transcript and its events are intact, and the next message sends the model the first
    turn's messages."""
    model, hands = setup(fmt, [
        {"tool_calls": [{"name": "read_file", "input": {"path": "hello.txt"}}]},
        {"text": "It says hello world."},
        {"text": "You asked what hello.txt says."},
    ])
    session = hands.create_session(project_id="resume", title="resume me")
    sid = session["id"]
    events = hands.events(sid)
    turn = hands.post_message(sid, "what does hello.txt say?")
    assert events.turn_end(turn)["reason"] == "completed"
    before = hands.transcript(sid)
    assert [m["role"] for m in before] == ["user", "assistant", "user", "assistant"]
    events_before = events.data()

    assert hands.stop(signal.SIGTERM) == 0, "SIGTERM is a clean exit"
    assert hands.store_path.is_file(), "the store is the file [store] path names"
    hands.start()

    listed = hands.request("GET", "/v1/sessions").json()["sessions"]
    assert [s["id"] for s in listed] == [sid]
    info = hands.get_session(sid)
    assert (info["project_id"], info["title"], info["mode"], info["running_turn"]) == ("resume", "resume me", "build", None)
    assert hands.transcript(sid) == before
    replay = hands.events(sid)
    wait_until(lambda: len(replay.data()) >= len(events_before), 20, "the stored events")
    assert replay.data()[: len(events_before)] == events_before, "the events survive the restart as they were"

    turn2 = hands.post_message(sid, "and what did I ask?")
    end = replay.turn_end(turn2)
    assert end["reason"] == "completed" and end["text"] == "You asked what hello.txt says."
    new = [d for d in replay.data() if d["id"] > events_before[-1]["id"]]
    assert new[0]["id"] == events_before[-1]["id"] + 1 and new[0]["type"] == "turn_started", "ids go on from the last"

    request = model.requests()[2]
    msgs = conversation(fmt, request)
    assert user_texts(fmt, request) == ["what does hello.txt say?", "and what did I ask?"]
    first_call = call_id(fmt, 0, 0)
    assistant = [m for m in msgs if m["role"] == "assistant"]
    assert tool_calls_in(fmt, assistant[0]) == [(first_call, "read_file", {"path": "hello.txt"})]
    if fmt == "anthropic":
        assert assistant[1]["content"] == [{"type": "text", "text": "It says hello world."}]
        results = [b for m in msgs for b in m["content"] if b["type"] == "tool_result"]
        assert [b["tool_use_id"] for b in results] == [first_call]
        assert "hello world" in results[0]["content"][0]["text"]
    else:
        assert assistant[1]["content"] == "It says hello world."
        tools = [m for m in msgs if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tools] == [first_call] and "hello world" in tools[0]["content"]
    assert len(hands.transcript(sid)) == 6


def test_restart_in_the_middle_of_a_turn(setup, project: Path) -> None:
    """SIGTERM while a turn's bash call runs: hands exits, the command's processes are gone; after
    the restart the turn is recorded as aborted (one turn_ended), the transcript is valid, and the
    session goes on."""
    model, hands = setup("anthropic", [
        {"tool_calls": [{"name": "bash", "input": {"command": "sleep 300"}}]},
        {"text": "Resumed."},
    ])
    sid = hands.create_session()["id"]
    events = hands.events(sid)
    turn = hands.post_message(sid, "run the long job")
    wait_until(lambda: sleeps_of(sid), 20, "the sleep to run")

    assert hands.stop(signal.SIGTERM) == 0
    wait_until(lambda: not sleeps_of(sid), 10, "the sleep to be gone after hands exited")
    hands.start()

    assert hands.get_session(sid)["running_turn"] is None
    replay = hands.events(sid)
    end = replay.turn_end(turn)
    assert end["reason"] == "aborted", end
    time.sleep(0.5)
    assert len([d for d in replay.data() if d["type"] == "turn_ended"]) == 1
    transcript = hands.transcript(sid)
    assert transcript_is_valid(transcript) == [], transcript

    turn2 = hands.post_message(sid, "go on")
    assert replay.turn_end(turn2)["reason"] == "completed"
    [wire] = tool_results("anthropic", model.requests()[1])
    assert wire.call_id == call_id("anthropic", 0, 0) and wire.is_error is True


def test_vibe_abort_stops_a_direct_bash_call(setup, project: Path) -> None:
    """A client that runs its own loop calls bash directly (POST /v1/sessions/{id}/tools/bash);
    /vibe/abort/{projectId} counts that session, the call answers with an aborted error result,
    and its process is gone."""
    _, hands = setup("openai", [])
    sid = hands.create_session(project_id="direct")["id"]
    events = hands.events(sid)
    box: dict = {}

    def call() -> None:
        box["r"] = hands.request("POST", f"/v1/sessions/{sid}/tools/bash", json={"args": {"command": "sleep 303"}, "turn_id": "my-turn"})

    caller = threading.Thread(target=call)
    caller.start()
    wait_until(lambda: sleeps_of(sid), 20, "the direct call's sleep")
    r = hands.request("POST", "/vibe/abort/direct")
    assert r.status_code == 200 and r.json() == {"aborted_sessions": 1}, r.text
    caller.join(30)
    assert not caller.is_alive(), "the direct call did not return after the abort"
    result = box["r"]
    assert result.status_code == 200, result.text
    assert result.json()["isError"] is True and "abort" in result.json()["content"][0]["text"].lower(), result.json()
    wait_until(lambda: not sleeps_of(sid), 15, "the sleep to be gone")
    finished = events.wait_type("tool_call_finished", name="bash")
    assert finished["is_error"] is True and finished["turn_id"] == "my-turn"
