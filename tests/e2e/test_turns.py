"""Whole turns through the real `hands serve` and its session API, with a scripted model: editing a
file and running its tests, parallel reads, ask_user answered over /vibe/answer, plan mode with
approvals, and a sub-agent."""

from __future__ import annotations

from pathlib import Path

from harness import (
    call_id,
    conversation,
    offered_tools,
    tool_calls_in,
    tool_results,
    tool_schema,
    transcript_is_valid,
    user_texts,
)

BUILD_ONLY = {"write_file", "edit_file", "bash"}


def test_edit_a_file_and_run_its_tests(setup, project: Path, fmt: str) -> None:
    """edit_file then bash: the file changes on disk, each call has started/finished events with a
    measured duration, the turn completes, and every result reaches the model in the provider's
    exact format."""
    steps = [
        {"text": "I will fix add.", "tool_calls": [
            {"name": "edit_file", "input": {"path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}}]},
        {"tool_calls": [{"name": "bash", "input": {"command": "sleep 0.3; sh test_calc.sh"}}]},
        {"text": "Fixed add: 1 passed."},
    ]
    model, hands = setup(fmt, steps)
    session = hands.create_session(project_id="calc")
    assert session["mode"] == "build" and session["project_id"] == "calc"
    events = hands.events(session["id"])
    turn = hands.post_message(session["id"], "add() subtracts: fix it and run the tests")

    end = events.turn_end(turn)
    assert end["reason"] == "completed", end
    assert end["text"] == "Fixed add: 1 passed."
    assert not events.errors, events.errors

    # On disk.
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"

    # The events, in order: turn_started, the text, each call's start then finish, the final text.
    data = events.data()
    assert data[0]["type"] == "turn_started" and data[0]["turn_id"] == turn
    assert data[0]["message"] == "add() subtracts: fix it and run the tests"
    assert [d["id"] for d in data] == list(range(1, len(data) + 1)), "event ids are 1, 2, 3, … without gaps"
    kinds = [d["type"] for d in data]
    assert kinds.count("turn_ended") == 1 and kinds[-1] == "turn_ended"
    assert "error" not in kinds
    text = "".join(d["text"] for d in data if d["type"] == "text_delta")
    assert text == "I will fix add.Fixed add: 1 passed."
    calls = [(d["type"], d["name"]) for d in data if d["type"].startswith("tool_call_")]
    assert calls == [("tool_call_started", "edit_file"), ("tool_call_finished", "edit_file"),
                     ("tool_call_started", "bash"), ("tool_call_finished", "bash")]
    started = {d["call_id"]: d for d in events.of_type("tool_call_started")}
    finished = {d["call_id"]: d for d in events.of_type("tool_call_finished")}
    edit_id, bash_id = call_id(fmt, 0, 0), call_id(fmt, 1, 0)
    assert set(started) == set(finished) == {edit_id, bash_id}
    assert started[edit_id]["args"] == steps[0]["tool_calls"][0]["input"]
    assert started[bash_id]["turn_id"] == finished[bash_id]["turn_id"] == turn
    for f in finished.values():
        assert f["is_error"] is False, f
        assert isinstance(f["duration_ms"], int) and f["duration_ms"] >= 0, f
    assert finished[bash_id]["duration_ms"] >= 300, "the bash call slept 0.3 s: its duration says so"
    assert "calc: 1 passed" in finished[bash_id]["summary"]
    assert "+    return a + b" in finished[edit_id]["summary"]

    # What the model was sent.
    requests = model.requests()
    assert len(requests) == 3 and model.answered() == 3, "one request per step, none refused (the key was sent)"
    assert all(r["stream"] is True for r in requests)
    assert "edit_file" in offered_tools(fmt, requests[0]) and "bash" in offered_tools(fmt, requests[0])
    [edit_result] = tool_results(fmt, requests[1])
    assert edit_result.call_id == edit_id
    assert "-    return a - b\n+    return a + b" in edit_result.text
    [bash_result] = tool_results(fmt, requests[2])
    assert bash_result.call_id == bash_id
    assert "calc: 1 passed" in bash_result.text and "exit code 0" in bash_result.text
    if fmt == "anthropic":
        assert edit_result.is_error is False and bash_result.is_error is False
        # The assistant turn is sent back with its text and tool_use blocks, and the results
        # follow as tool_result blocks in the next user message.
        msgs = conversation(fmt, requests[2])
        assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
        assert msgs[1]["content"] == [
            {"type": "text", "text": "I will fix add."},
            {"type": "tool_use", "id": edit_id, "name": "edit_file", "input": steps[0]["tool_calls"][0]["input"]},
        ]
        assert msgs[4]["content"][0]["type"] == "tool_result"
    else:
        msgs = conversation(fmt, requests[2])
        assert requests[2]["messages"][0]["role"] == "system"
        assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant", "tool"]
        assert msgs[1]["content"] == "I will fix add."
        assert tool_calls_in(fmt, msgs[1]) == [(edit_id, "edit_file", steps[0]["tool_calls"][0]["input"])]
        assert msgs[3]["content"] is None and tool_calls_in(fmt, msgs[3])[0][:2] == (bash_id, "bash")

    # The stored transcript has the whole turn.
    transcript = hands.transcript(session["id"])
    assert [m["role"] for m in transcript] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert transcript[-1]["content"] == [{"type": "text", "text": "Fixed add: 1 passed."}]
    assert transcript_is_valid(transcript) == []
    info = hands.get_session(session["id"])
    assert info["running_turn"] is None
    assert info["title"] == "add() subtracts: fix it and run the tests"


def test_parallel_reads_come_back_in_one_request_in_call_order(setup, project: Path, fmt: str) -> None:
    """Three read-only calls in one response run together, and their results go back in one
    follow-up request, in the order of the calls."""
    calls = [
        {"name": "grep", "input": {"pattern": "needle"}},
        {"name": "read_file", "input": {"path": "hello.txt"}},
        {"name": "read_file", "input": {"path": "notes.md"}},
    ]
    model, hands = setup(fmt, [{"tool_calls": calls}, {"text": "Read them."}])
    session = hands.create_session()
    events = hands.events(session["id"])
    turn = hands.post_message(session["id"], "read hello.txt and notes.md and find the needle")
    assert events.turn_end(turn)["reason"] == "completed"

    requests = model.requests()
    assert len(requests) == 2, "all three results went back in one request"
    results = tool_results(fmt, requests[1])
    assert [r.call_id for r in results] == [call_id(fmt, 0, i) for i in range(3)], "in call order"
    assert "notes.md:2:the needle is here" in results[0].text
    assert "src/main.rs:2:" in results[0].text
    assert "hello world" in results[1].text and "second line" in results[1].text
    assert "# Notes" in results[2].text and "hello world" not in results[2].text
    assert all(r.is_error in (False, None) for r in results)

    # They ran together: the two reads started before the grep (which searches on a worker
    # thread) finished. Run one after the other, the grep's finish would come first.
    ids = {(d["type"], d["call_id"]): d["id"] for d in events.data() if d["type"].startswith("tool_call_")}
    assert len(ids) == 6, ids
    grep_done = ids[("tool_call_finished", call_id(fmt, 0, 0))]
    assert ids[("tool_call_started", call_id(fmt, 0, 1))] < grep_done, ids
    assert ids[("tool_call_started", call_id(fmt, 0, 2))] < grep_done, ids


def test_ask_user_answered_over_vibe_answer(setup, project: Path) -> None:
    """ask_user's question comes out on the event stream first; the answer posted to /vibe/answer
    (by project) reaches the model in the tool's result."""
    model, hands = setup("anthropic", [
        {"tool_calls": [{"name": "ask_user", "input": {"question": "Which colour?", "options": ["red", "blue"]}}]},
        {"text": "Blue it is."},
    ])
    session = hands.create_session(project_id="paint")
    events = hands.events(session["id"])
    turn = hands.post_message(session["id"], "paint the shed")

    question = events.wait_type("question")
    assert question["question"] == "Which colour?" and question["options"] == ["red", "blue"]
    pending = hands.get_session(session["id"])["pending_questions"]
    assert pending == [{"question_id": question["question_id"], "question": "Which colour?", "options": ["red", "blue"]}]
    assert model.answered() == 1, "the turn waits for the answer"
    assert hands.get_session(session["id"])["running_turn"] == turn

    r = hands.request("POST", "/vibe/answer", json={"projectId": "paint", "answer": "blue, please"})
    assert r.status_code == 200, r.text
    assert r.json() == {"ok": True}

    assert events.turn_end(turn)["reason"] == "completed"
    answered = events.wait_type("question_answered", question_id=question["question_id"])
    finished = events.wait_type("tool_call_finished", name="ask_user")
    assert question["id"] < answered["id"] < finished["id"]
    assert finished["is_error"] is False
    requests = model.requests()
    assert len(requests) == 2
    [result] = tool_results("anthropic", requests[1])
    assert result.call_id == call_id("anthropic", 0, 0)
    assert "blue, please" in result.text and result.is_error is False
    assert hands.get_session(session["id"])["pending_questions"] == []

    # Nothing waits now: the same answer again is a conflict.
    r = hands.request("POST", "/vibe/answer", json={"projectId": "paint", "answer": "red"})
    assert r.status_code == 409, r.text


def test_plan_then_exit_plan_mode_approved_then_build(setup, project: Path) -> None:
    """A session created in plan mode is offered read-only tools; under approval = "ask",
    exit_plan_mode raises an approval that the user grants over the API; the mode changes to build
    and the next request offers the build tools, whose calls need approval too."""
    steps = [
        {"tool_calls": [{"name": "read_file", "input": {"path": "hello.txt"}}]},
        {"text": "Here is my plan.", "tool_calls": [{"name": "exit_plan_mode", "input": {"plan": "1. Write out.txt with 'built'."}}]},
        {"tool_calls": [{"name": "write_file", "input": {"path": "out.txt", "content": "built\n"}}]},
        {"text": "Done: out.txt written."},
    ]
    model, hands = setup("anthropic", steps, approval="ask")
    session = hands.create_session(mode="plan")
    assert session["mode"] == "plan"
    events = hands.events(session["id"])
    turn = hands.post_message(session["id"], "plan, then write out.txt")

    approval = events.wait_type("approval_requested")
    assert approval["tool"] == "exit_plan_mode"
    assert "Write out.txt" in approval["summary"]
    info = hands.get_session(session["id"])
    assert info["mode"] == "plan"
    assert [a["approval_id"] for a in info["pending_approvals"]] == [approval["approval_id"]]
    requests = model.requests()
    assert len(requests) == 2, "the turn waits for the approval"
    plan_tools = set(offered_tools("anthropic", requests[0]))
    assert "exit_plan_mode" in plan_tools and "read_file" in plan_tools
    assert not plan_tools & BUILD_ONLY, f"plan mode offers no build tools: {plan_tools}"
    assert "enter_plan_mode" not in plan_tools
    # read_file ran without an approval (it only reads).
    assert events.wait_type("tool_call_finished", name="read_file")["is_error"] is False

    r = hands.request("POST", f"/v1/sessions/{session['id']}/approvals/{approval['approval_id']}", json={"approve": True})
    assert r.status_code == 204, r.text
    decided = events.wait_type("approval_decided", approval_id=approval["approval_id"])
    assert decided["approved"] is True
    changed = events.wait_type("mode_changed")
    assert changed["mode"] == "build"
    exited = events.wait_type("tool_call_finished", name="exit_plan_mode")
    assert exited["is_error"] is False
    assert decided["id"] < changed["id"]

    # The build step: write_file is offered now, and asks for approval too.
    write = events.wait_for(lambda d: d["type"] == "approval_requested" and d["tool"] == "write_file",
                            what="write_file's approval")
    assert "out.txt" in write["summary"]
    requests = model.requests()
    assert len(requests) == 3
    build_tools = set(offered_tools("anthropic", requests[2]))
    assert BUILD_ONLY <= build_tools, build_tools
    assert "exit_plan_mode" not in build_tools and "enter_plan_mode" in build_tools
    [result] = tool_results("anthropic", requests[2])
    assert result.call_id == call_id("anthropic", 1, 0) and result.is_error is False
    assert not (project / "out.txt").exists(), "nothing is written before the approval"
    r = hands.request("POST", f"/v1/sessions/{session['id']}/approvals/{write['approval_id']}", json={"approve": True})
    assert r.status_code == 204, r.text

    assert events.turn_end(turn)["reason"] == "completed"
    assert (project / "out.txt").read_text() == "built\n"
    assert hands.get_session(session["id"])["mode"] == "build"
    # The approval is gone: deciding it again is a conflict.
    r = hands.request("POST", f"/v1/sessions/{session['id']}/approvals/{approval['approval_id']}", json={"approve": True})
    assert r.status_code == 409, r.text


def test_plan_rejected_stays_in_plan_with_the_users_words(setup, project: Path) -> None:
    """Denying exit_plan_mode keeps the session in plan mode, and the user's reason reaches the
    model in the tool result (OpenAI wire format: the error said in the text)."""
    model, hands = setup("openai", [
        {"tool_calls": [{"name": "exit_plan_mode", "input": {"plan": "1. Delete everything."}}]},
        {"text": "Understood, I will plan again."},
    ], approval="ask")
    session = hands.create_session(mode="plan")
    events = hands.events(session["id"])
    turn = hands.post_message(session["id"], "plan something")
    approval = events.wait_type("approval_requested", tool="exit_plan_mode")
    r = hands.request("POST", f"/v1/sessions/{session['id']}/approvals/{approval['approval_id']}",
                      json={"approve": False, "reason": "too risky, keep the files"})
    assert r.status_code == 204, r.text
    assert events.turn_end(turn)["reason"] == "completed"
    assert events.wait_type("approval_decided")["approved"] is False
    assert events.of_type("mode_changed") == []
    assert hands.get_session(session["id"])["mode"] == "plan"
    requests = model.requests()
    [result] = tool_results("openai", requests[1])
    assert result.call_id == call_id("openai", 0, 0)
    assert "too risky, keep the files" in result.text
    assert result.text.lower().startswith("error"), "a denial is an error result"
    assert not set(offered_tools("openai", requests[1])) & BUILD_ONLY


def test_a_subagent_runs_a_nested_loop_and_its_answer_is_the_result(setup, project: Path, fmt: str) -> None:
    """spawn_subagent runs a nested loop against the same model server, with read-only tools,
    and its final answer comes back as the tool's result."""
    task = "Find where the needle is mentioned."
    model, hands = setup(fmt, [
        {"text": "I will delegate.", "tool_calls": [{"name": "spawn_subagent", "input": {"prompt": task, "description": "find the needle"}}]},
        {"tool_calls": [{"name": "grep", "input": {"pattern": "needle"}}]},  # the sub-agent
        {"text": "The needle is in notes.md:2 and src/main.rs:2."},  # the sub-agent's answer
        {"text": "The sub-agent found it in two files."},
    ])
    session = hands.create_session()
    events = hands.events(session["id"])
    turn = hands.post_message(session["id"], "where is the needle?")
    end = events.turn_end(turn)
    requests = model.requests()
    parent_tools = offered_tools(fmt, requests[0])
    assert "spawn_subagent" in parent_tools, f"hands serve has a model, so spawn_subagent is offered; offered: {parent_tools}"
    assert end["reason"] == "completed", (end, events.data())
    assert end["text"] == "The sub-agent found it in two files."
    assert len(requests) == 4
    schema = tool_schema(fmt, requests[0], "spawn_subagent")
    assert schema["required"] == ["prompt"] and "description" in schema["properties"], schema
    # The sub-agent's requests: its own conversation that starts with the task, read-only tools.
    sub = requests[1]
    assert user_texts(fmt, sub) and task in user_texts(fmt, sub)[0]
    assert "where is the needle?" not in " ".join(user_texts(fmt, sub)), "the sub-agent does not see the parent's chat"
    sub_tools = set(offered_tools(fmt, sub))
    assert {"grep", "read_file"} <= sub_tools
    assert not sub_tools & (BUILD_ONLY | {"spawn_subagent", "ask_user", "exit_plan_mode", "enter_plan_mode"}), sub_tools
    [grep_result] = tool_results(fmt, requests[2])
    assert grep_result.call_id == call_id(fmt, 1, 0)
    assert "notes.md:2:the needle is here" in grep_result.text
    # The parent gets the sub-agent's final answer as spawn_subagent's result.
    [result] = tool_results(fmt, requests[3])
    assert result.call_id == call_id(fmt, 0, 0)
    assert "The needle is in notes.md:2 and src/main.rs:2." in result.text
    assert result.is_error in (False, None)
    assert len(conversation(fmt, requests[3])) == 3, "the parent's conversation: user, assistant, result"
    started = events.wait_type("tool_call_started", name="spawn_subagent")
    assert started["args"] == {"prompt": task, "description": "find the needle"}
    finished = events.wait_type("tool_call_finished", name="spawn_subagent")
    assert finished["is_error"] is False and "notes.md:2" in finished["summary"]
    assert transcript_is_valid(hands.transcript(session["id"])) == []
