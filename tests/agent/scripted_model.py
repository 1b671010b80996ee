#!/usr/bin/env python3
"""A scripted model server for end-to-end tests of hands' agent loop.

It speaks the streaming wire format of Anthropic's Messages API (`POST /v1/messages`) or of
OpenAI's Chat Completions (`POST /chat/completions`, also under `/v1/`), and answers the Nth
request with the Nth step of a JSON script. Every request body is appended to a JSON-lines log so
that a test can check what hands sent. Python 3.11 standard library only.

    python3 tests/agent/scripted_model.py --format anthropic --script script.json \
        --port 0 --port-file port.txt --log requests.jsonl [--expect-key KEY]

The script format is documented in README.md beside this file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
PING_INTERVAL_S = 0.2

# Error types each provider uses for a status, for `status` steps without a `body`.
ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
OPENAI_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def pieces(text: str) -> list[str]:
    """Split text into deltas the way models stream it: a word and the space after it."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def json_pieces(value: Any) -> list[str]:
    """A tool's input as JSON cut into three parts, so that clients must accumulate it."""
    text = json.dumps(value)
    third = max(1, len(text) // 3)
    return [text[:third], text[third : 2 * third], text[2 * third :]]


def sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    body = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"{head}data: {body}\n\n".encode()


class Anthropic:
    """Anthropic Messages streaming events."""

    paths = ("/v1/messages",)

    @staticmethod
    def key_ok(handler: BaseHTTPRequestHandler, key: str) -> bool:
        return handler.headers.get("x-api-key") == key

    @staticmethod
    def error_body(status: int, message: str) -> dict:
        kind = ANTHROPIC_ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    @staticmethod
    def start(n: int, model: str, usage: dict) -> list[bytes]:
        message = {
            "id": f"msg_scripted_{n:04d}",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": usage.get("input_tokens", 10), "output_tokens": 1},
        }
        return [sse("message_start", {"type": "message_start", "message": message}), Anthropic.ping()]

    @staticmethod
    def ping() -> bytes:
        return sse("ping", {"type": "ping"})

    @staticmethod
    def render(n: int, step: dict, model: str) -> list[bytes]:
        usage = step.get("usage", {})
        events = Anthropic.start(n, model, usage)
        index = 0
        if step.get("text"):
            events.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            for piece in pieces(step["text"]):
                events.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}}))
            events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        calls = step.get("tool_calls", [])
        for i, call in enumerate(calls):
            block = {"type": "tool_use", "id": call.get("id", f"toolu_scripted_{n:04d}_{i}"), "name": call["name"], "input": {}}
            events.append(sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
            for piece in [""] + json_pieces(call.get("input", {})):
                events.append(sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}))
            events.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        stop = step.get("stop_reason", "tool_use" if calls else "end_turn")
        delta = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": usage.get("output_tokens", 5)}}
        events.append(sse("message_delta", delta))
        events.append(sse("message_stop", {"type": "message_stop"}))
        return events


class OpenAI:
    """OpenAI Chat Completions streaming chunks."""

    paths = ("/chat/completions", "/v1/chat/completions")

    @staticmethod
    def key_ok(handler: BaseHTTPRequestHandler, key: str) -> bool:
        return handler.headers.get("authorization") == f"Bearer {key}"

    @staticmethod
    def error_body(status: int, message: str) -> dict:
        kind, code = OPENAI_ERROR_TYPES.get(status, ("server_error" if status >= 500 else "invalid_request_error", None))
        return {"error": {"message": message, "type": kind, "param": None, "code": code}}

    @staticmethod
    def chunk(n: int, model: str, delta: dict | None, finish: str | None = None, usage: dict | None = None) -> bytes:
        body = {
            "id": f"chatcmpl-scripted{n:04d}",
            "object": "chat.completion.chunk",
            "created": 1741570283,
            "model": model,
            "system_fingerprint": "fp_scripted",
            "choices": [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": usage,
        }
        return sse(None, body)

    @staticmethod
    def start(n: int, model: str, usage: dict) -> list[bytes]:
        return [OpenAI.chunk(n, model, {"role": "assistant", "content": ""})]

    @staticmethod
    def ping() -> bytes:
        return b": ping\n\n"

    @staticmethod
    def render(n: int, step: dict, model: str) -> list[bytes]:
        usage = step.get("usage", {})
        events = OpenAI.start(n, model, usage)
        for piece in pieces(step["text"]) if step.get("text") else []:
            events.append(OpenAI.chunk(n, model, {"content": piece}))
        calls = step.get("tool_calls", [])
        for i, call in enumerate(calls):
            first = {"index": i, "id": call.get("id", f"call_scripted_{n:04d}_{i}"), "type": "function", "function": {"name": call["name"], "arguments": ""}}
            events.append(OpenAI.chunk(n, model, {"tool_calls": [first]}))
            for piece in json_pieces(call.get("input", {})):
                events.append(OpenAI.chunk(n, model, {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
        stop = step.get("stop_reason", "tool_calls" if calls else "stop")
        events.append(OpenAI.chunk(n, model, {}, finish=stop))
        prompt, completion = usage.get("input_tokens", 10), usage.get("output_tokens", 5)
        events.append(OpenAI.chunk(n, model, None, usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}))
        events.append(b"data: [DONE]\n\n")
        return events


class Script:
    """The steps, the count of answered requests and the log, shared by the handler threads."""

    def __init__(self, steps: list[dict], script_dir: Path, log: Path | None, fmt: str) -> None:
        self.steps = steps
        self.script_dir = script_dir
        self.log = log
        self.fmt = fmt
        self.next = 0
        self.lock = threading.Lock()

    def take(self) -> tuple[int, dict | None]:
        with self.lock:
            n = self.next
            self.next += 1
        return n, self.steps[n] if n < len(self.steps) else None

    def record(self, body: Any) -> None:
        if self.log is None:
            return
        with self.lock, self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(body, separators=(",", ":")) + "\n")
            f.flush()

    def fixture(self, name: str) -> Path:
        path = Path(name)
        for candidate in (self.script_dir / path, Path.cwd() / path, FIXTURES / self.fmt / path, FIXTURES / path):
            if candidate.is_file():
                return candidate
        raise FileNotFoundError(f"fixture {name} not found beside the script, in the working folder or in {FIXTURES}")


def make_handler(script: Script, wire: type, expect_key: str | None) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "scripted-model/1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
            if os.environ.get("SCRIPTED_MODEL_VERBOSE"):
                super().log_message(format, *args)

        def do_GET(self) -> None:  # noqa: N802
            self.send_json(200, {"ok": True, "format": script.fmt, "answered": script.next})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"null")
            except json.JSONDecodeError:
                body = {"unparsable_body": raw.decode("utf-8", "replace")}
            script.record(body)
            path = self.path.split("?", 1)[0].rstrip("/")
            if path not in wire.paths:
                self.send_json(404, wire.error_body(404, f"scripted_model: no route {self.path} (serving {script.fmt})"))
                return
            if expect_key is not None and not wire.key_ok(self, expect_key):
                self.send_json(401, wire.error_body(401, "scripted_model: invalid API key"))
                return
            n, step = script.take()
            if step is None:
                self.send_json(500, wire.error_body(500, f"scripted_model: no step {n + 1}, the script has {len(script.steps)}"))
                return
            model = body.get("model", "scripted") if isinstance(body, dict) else "scripted"
            try:
                self.answer(n, step, model)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (an abort): nothing to answer

        def answer(self, n: int, step: dict, model: str) -> None:
            if step.get("delay_ms"):
                time.sleep(step["delay_ms"] / 1000)
            if "status" in step:
                status = int(step["status"])
                headers = dict(step.get("headers", {}))
                if "retry_after" in step:
                    headers["retry-after"] = str(step["retry_after"])
                if "retry_after_ms" in step:
                    headers["retry-after-ms"] = str(step["retry_after_ms"])
                body = step.get("body", wire.error_body(status, step.get("message", f"scripted error {status}")))
                self.send_json(status, body, headers)
                return
            if step.get("hang"):
                self.start_stream()
                for event in wire.start(n, model, step.get("usage", {})):
                    self.send_chunk(event)
                while True:
                    time.sleep(PING_INTERVAL_S)
                    self.send_chunk(wire.ping())
            if "fixture" in step:
                text = script.fixture(step["fixture"]).read_bytes()
                events = [e + b"\n\n" for e in text.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
            else:
                events = wire.render(n, step, model)
            self.start_stream()
            pause = step.get("chunk_delay_ms", 0) / 1000
            for event in events:
                self.send_chunk(event)
                if pause:
                    time.sleep(pause)
            self.end_stream()

        def send_json(self, status: int, body: Any, headers: dict | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.send_header("connection", "close")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True

        def start_stream(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream; charset=utf-8")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.send_header("connection", "close")
            self.end_headers()
            self.close_connection = True

        def send_chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def end_stream(self) -> None:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def load_steps(path: Path) -> list[dict]:
    data = json.loads(path.read_text(encoding="utf-8"))
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise SystemExit(f"{path}: a script is a JSON list of step objects (or {{\"steps\": [...]}})")
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve scripted streaming model answers.")
    parser.add_argument("--format", choices=("anthropic", "openai", "gemini"), required=True)
    parser.add_argument("--script", type=Path, required=True, help="JSON list of steps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, help="write the port here once listening")
    parser.add_argument("--log", type=Path, help="append each request body here, one JSON per line")
    parser.add_argument("--expect-key", help="answer 401 unless the request carries this API key")
    args = parser.parse_args(argv)

    script = Script(load_steps(args.script), args.script.resolve().parent, args.log, args.format)
    wire = Anthropic if args.format == "anthropic" else OpenAI
    handler = make_handler(script, wire, args.expect_key)
    if args.format == "gemini":
        import scripted_gemini  # the Gemini API's wire format, in its own module

        handler = scripted_gemini.handler(make_handler(script, scripted_gemini.Gemini, args.expect_key))
    server = ThreadingHTTPServer((args.host, args.port), handler)
    server.daemon_threads = True  # a hanging stream must not keep the process alive
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file.with_name(args.port_file.name + ".tmp")
        tmp.write_text(f"{port}\n")
        tmp.replace(args.port_file)  # readers never see a half-written file
    print(f"scripted_model: {args.format} on http://{args.host}:{port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
