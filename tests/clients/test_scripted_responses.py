"""The scripted model's OpenAI Responses format (`--format responses`) on its own: what Codex does
not exercise in test_codex.py — the event sequence and its numbering, a text-only answer, an
explicit namespace, a whole name when no namespace tool was offered, an incomplete answer, the model
list that uses up no step, and a request past the script's end."""

from __future__ import annotations

import http.client
import json

MODEL_LIST = "/v1/models"


def post(port: int, path: str, body: dict) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def get(port: int, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def events(stream: str) -> list[tuple[str, dict]]:
    out = []
    for block in stream.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_responses_stream_shapes(model_server):
    namespace_tool = {"type": "namespace", "name": "mcp__hands", "tools": [{"type": "function", "name": "bash"}]}
    model = model_server("responses", [
        {"text": "Hello there.", "tool_calls": [{"id": "c1", "name": "mcp__hands__bash", "input": {"command": "ls"}}]},
        {"tool_calls": [{"id": "c2", "name": "mcp__hands__bash", "input": {}}]},
        {"tool_calls": [{"id": "c3", "namespace": "other", "name": "run", "input": {}}]},
        {"text": "cut short", "stop_reason": "max_output_tokens"},
    ])
    assert get(model.port, MODEL_LIST)[1]["data"][0]["id"] == "scripted"

    status, body = post(model.port, "/v1/responses", {"model": "m", "stream": True, "tools": [namespace_tool]})
    assert status == 200
    evs = events(body)
    assert [e["sequence_number"] for _, e in evs] == list(range(len(evs)))
    assert all(kind == e["type"] for kind, e in evs)
    kinds = [kind for kind, _ in evs]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    text = "".join(e["delta"] for kind, e in evs if kind == "response.output_text.delta")
    assert text == "Hello there."
    args = "".join(e["delta"] for kind, e in evs if kind == "response.function_call_arguments.delta")
    assert json.loads(args) == {"command": "ls"}
    done = evs[-1][1]["response"]
    assert done["status"] == "completed" and done["usage"]["total_tokens"] == 15
    message, call = done["output"]
    assert message["content"][0]["text"] == "Hello there."
    assert (call["type"], call["namespace"], call["name"], call["call_id"]) == ("function_call", "mcp__hands", "bash", "c1")

    # No namespace tool offered: the name goes whole.
    call = events(post(model.port, "/v1/responses", {"model": "m", "tools": []})[1])[-1][1]["response"]["output"][0]
    assert call["name"] == "mcp__hands__bash" and "namespace" not in call
    # An explicit namespace wins.
    call = events(post(model.port, "/responses", {"model": "m"})[1])[-1][1]["response"]["output"][0]
    assert (call["namespace"], call["name"]) == ("other", "run")
    kind, last = events(post(model.port, "/v1/responses", {"model": "m"})[1])[-1]
    assert kind == "response.incomplete"
    assert last["response"]["incomplete_details"] == {"reason": "max_output_tokens"}

    status, body = post(model.port, "/v1/responses", {"model": "m"})
    assert status == 500 and "no step 5" in json.loads(body)["error"]["message"]
    assert model.access().count("GET /v1/models 200") == 1
    assert len(model.requests()) == 5
