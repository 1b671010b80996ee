"""The Gemini API wire format for the scripted model (`--format gemini`).

Serves `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (a stream of
`GenerateContentResponse` chunks as `data:` events, what Gemini CLI uses for its turns) and
`POST /v1beta/models/{model}:generateContent` (one `GenerateContentResponse` as JSON), also under
`/v1/` and `/v1alpha/`. A step's `text` is streamed as one chunk per word; its `tool_calls` become
`functionCall` parts (`{"name", "args"}`, plus `id` only when the step gives one: Gemini 2.5 sends
none, and the client makes its own), all in the last chunk, which also carries
`finishReason` (`STOP` unless the step's `stop_reason` says otherwise) and `usageMetadata`.
Tool results come back in the next request as `functionResponse` parts of a `user` turn; Gemini
CLI 0.61 sends `{"id", "name", "response": {"output": <the tool's text>}}` (`{"error": ...}` for a
failed call), names MCP tools `mcp_<server>_<tool>` (`mcp_hands_bash`), gives each call an `id`
and echoes the model's calls with a `thoughtSignature`.

The API key is checked (with `--expect-key`) in the `x-goog-api-key` header or the `key` query
parameter; errors use Google's shape `{"error": {"code", "message", "status"}}`.
Python 3.11 standard library only; `scripted_model.py` loads this module for `--format gemini`.
"""

from __future__ import annotations

import re
import time
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scripted_model import pieces, sse

ROUTE = re.compile(r"^/v1(?:beta|alpha)?/models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|generateContent)$")

# Google's canonical status names, for `status` steps without a `body`.
GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class Routes:
    """`path in Gemini.paths` for every model name (the model is part of the path)."""

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and ROUTE.match(path) is not None


class Gemini:
    """Gemini `GenerateContentResponse` chunks."""

    paths = Routes()

    @staticmethod
    def key_ok(handler: BaseHTTPRequestHandler, key: str) -> bool:
        query = parse_qs(urlsplit(handler.path).query)
        return handler.headers.get("x-goog-api-key") == key or query.get("key") == [key]

    @staticmethod
    def error_body(status: int, message: str) -> dict:
        name = GOOGLE_STATUS.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")
        return {"error": {"code": status, "message": message, "status": name}}

    @staticmethod
    def chunk(n: int, model: str, parts: list[dict], finish: str | None = None, usage: dict | None = None) -> dict:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        body: dict[str, Any] = {"candidates": [candidate], "modelVersion": model, "responseId": f"scripted{n:04d}"}
        if usage is not None:
            prompt, output = usage.get("input_tokens", 10), usage.get("output_tokens", 5)
            body["usageMetadata"] = {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output}
        return body

    @staticmethod
    def chunks(n: int, step: dict, model: str) -> list[dict]:
        """The step as response chunks: one per word of text, the calls and the finish last."""
        texts = [{"text": piece} for piece in pieces(step["text"])] if step.get("text") else []
        calls = []
        for call in step.get("tool_calls", []):
            function_call: dict[str, Any] = {"name": call["name"], "args": call.get("input", {})}
            if "id" in call:
                function_call["id"] = call["id"]
            calls.append({"functionCall": function_call})
        finish = step.get("stop_reason", "STOP")
        usage = step.get("usage", {})
        if calls:
            last = calls
            leading = texts
        elif texts:
            last, leading = texts[-1:], texts[:-1]
        else:
            last, leading = [{"text": ""}], []
        out = [Gemini.chunk(n, model, [part]) for part in leading]
        out.append(Gemini.chunk(n, model, last, finish=finish, usage=usage))
        return out

    @staticmethod
    def start(n: int, model: str, usage: dict) -> list[bytes]:
        return []  # Gemini streams have no opening event

    @staticmethod
    def ping() -> bytes:
        return b": ping\n\n"

    @staticmethod
    def render(n: int, step: dict, model: str, request: Any = None) -> list[bytes]:
        return [sse(None, chunk) for chunk in Gemini.chunks(n, step, model)]

    @staticmethod
    def whole(n: int, step: dict, model: str) -> dict:
        """The step as one `generateContent` answer: every part in one candidate."""
        chunks = Gemini.chunks(n, step, model)
        last = chunks[-1]
        parts = [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]
        text = "".join(p.get("text", "") for p in parts if "text" in p)
        merged = ([{"text": text}] if text else []) + [p for p in parts if "text" not in p]
        last["candidates"][0]["content"]["parts"] = merged or [{"text": ""}]
        return last


def handler(base: type) -> type:
    """`scripted_model`'s request handler, taught the model-in-the-path routes and the
    non-streaming `generateContent`."""

    class GeminiHandler(base):  # type: ignore[misc, valid-type]
        def answer(self, n: int, step: dict, model: str, request: Any = None) -> None:
            route = ROUTE.match(urlsplit(self.path).path.rstrip("/"))
            model = route.group("model") if route else model
            if route and route.group("method") == "generateContent" and "status" not in step and not step.get("hang") and "fixture" not in step:
                if step.get("delay_ms"):
                    time.sleep(step["delay_ms"] / 1000)
                self.send_json(200, Gemini.whole(n, step, model))
                return
            super().answer(n, step, model, request)

    return GeminiHandler



Gemini.wrap_handler = staticmethod(handler)  # type: ignore[attr-defined]

# `--format gemini`, found by scripted_model's `load_extra_formats`.
FORMATS = {"gemini": Gemini}
