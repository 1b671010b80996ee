"""The scripted model's Gemini API format (`--format gemini`) on its own: the key check, the streamed
and the whole answer of a step, Google's error shape — what Gemini CLI does not exercise in
test_gemini.py."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

MODEL = "gemini-2.5-flash"


def post(url: str, body: dict, key: str | None) -> tuple[int, str, bytes]:
    headers = {"content-type": "application/json", **({"x-goog-api-key": key} if key else {})}
    req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.headers.get("content-type", ""), response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("content-type", ""), err.read()


def test_both_generate_routes(model_server) -> None:
    """The scripted model's Gemini format on its own: the key check, the streamed and the whole
    answer of a step, Google's error shape."""
    steps = [
        {"text": "Reading it.", "tool_calls": [{"name": "mcp_hands_read_file", "input": {"path": "a.txt"}}]},
        {"text": "It says hello.", "usage": {"input_tokens": 7, "output_tokens": 3}},
        {"status": 429, "message": "slow down"},
    ]
    model = model_server("gemini", steps, expect_key="k1")
    base = f"{model.base}/v1beta/models/{MODEL}"
    ask = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}

    status, _, body = post(f"{base}:streamGenerateContent?alt=sse", ask, None)
    assert status == 401 and json.loads(body)["error"]["status"] == "UNAUTHENTICATED"

    status, kind, body = post(f"{base}:streamGenerateContent?alt=sse", ask, "k1")
    assert status == 200 and kind.startswith("text/event-stream")
    chunks = [json.loads(line[len("data: "):]) for line in body.decode().splitlines() if line.startswith("data: ")]
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    assert "".join(p.get("text", "") for p in parts) == "Reading it."
    assert {"functionCall": {"name": "mcp_hands_read_file", "args": {"path": "a.txt"}}} in parts
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])

    status, kind, body = post(f"{base}:generateContent", ask, "k1")
    assert status == 200 and kind.startswith("application/json")
    whole = json.loads(body)
    assert whole["candidates"][0]["content"] == {"parts": [{"text": "It says hello."}], "role": "model"}
    assert whole["usageMetadata"] == {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}

    status, _, body = post(f"{base}:generateContent", ask, "k1")
    assert status == 429 and json.loads(body)["error"] == {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}
    assert len(model.requests()) == 4  # every request logged, the refused one too
