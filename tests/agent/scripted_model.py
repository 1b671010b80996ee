#!/usr/bin/env python3
"""A scripted model server for end-to-end tests of hands' agent loop.

It speaks the streaming wire format of Anthropic's Messages API (`POST /v1/messages`, what hands'
agent and Claude Code use), of OpenAI's Chat Completions (`POST /chat/completions`, also under
`/v1/`) or of OpenAI's Responses API (`POST /v1/responses`, what Codex uses), and answers the Nth
request with the Nth step of a JSON script. Every request body is appended to a JSON-lines log so
that a test can check what the client sent. Python 3.11 standard library only.

    python3 tests/agent/scripted_model.py --format anthropic --script script.json \
        --port 0 --port-file port.txt --log requests.jsonl [--expect-key KEY]

A wire format is a class with `paths` (the routes that take a step; or a `handles(path)` method
for routes with parameters), `key_ok`, `error_body`, `start`, `ping` and `render`, and optionally
`side` (answers to a client's start-up calls that must not use up a step). `FORMATS` maps `--format` names to them; a format in a module of its own
registers itself there (see `load_extra_formats`).

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
    def side(method: str, path: str, body: Any) -> tuple[int, Any] | None:
        """Claude Code's calls besides a turn: token counting and the model list."""
        if method == "POST" and path == "/v1/messages/count_tokens":
            return 200, {"input_tokens": max(1, len(json.dumps(body)) // 4)}
        if method == "GET" and path == "/v1/models":
            model = {"type": "model", "id": "claude-scripted", "display_name": "Scripted", "created_at": "2025-01-01T00:00:00Z"}
            return 200, {"data": [model], "has_more": False, "first_id": model["id"], "last_id": model["id"]}
        return None

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
    def render(n: int, step: dict, model: str, request: Any = None) -> list[bytes]:
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
    def render(n: int, step: dict, model: str, request: Any = None) -> list[bytes]:
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


class Responses:
    """OpenAI Responses API streaming events (`POST /v1/responses` with `stream: true`), as Codex
    reads them. A tool call's `name` may carry a namespace: `mcp__hands__write_file` (or
    `{"namespace": "mcp__hands", "name": "write_file"}`) is sent as a `function_call` item with
    `namespace: "mcp__hands"` and `name: "write_file"` when the request offered a `namespace`
    tool of that name, and whole otherwise."""

    paths = ("/responses", "/v1/responses")

    @staticmethod
    def key_ok(handler: BaseHTTPRequestHandler, key: str) -> bool:
        return OpenAI.key_ok(handler, key)

    @staticmethod
    def error_body(status: int, message: str) -> dict:
        return OpenAI.error_body(status, message)

    @staticmethod
    def side(method: str, path: str, body: Any) -> tuple[int, Any] | None:
        """The model list (`GET /v1/models`), which clients may ask for before a turn."""
        if method == "GET" and path in ("/models", "/v1/models"):
            return 200, {"object": "list", "data": [{"id": "scripted", "object": "model", "created": 1741570283, "owned_by": "scripted"}]}
        return None

    @staticmethod
    def response(n: int, model: str, status: str, output: list, usage: dict | None) -> dict:
        return {
            "id": f"resp_scripted_{n:04d}",
            "object": "response",
            "created_at": 1741570283,
            "status": status,
            "model": model,
            "output": output,
            "usage": usage,
        }

    @staticmethod
    def event(kind: str, seq: list[int], **fields: Any) -> bytes:
        seq[0] += 1
        return sse(kind, {"type": kind, "sequence_number": seq[0], **fields})

    @staticmethod
    def start(n: int, model: str, usage: dict) -> list[bytes]:
        seq = [-1]
        created = Responses.response(n, model, "in_progress", [], None)
        return [Responses.event("response.created", seq, response=created), Responses.event("response.in_progress", seq, response=created)]

    @staticmethod
    def ping() -> bytes:
        return b": ping\n\n"

    @staticmethod
    def namespaces(request: Any) -> set[str]:
        tools = request.get("tools") if isinstance(request, dict) else None
        return {t.get("name") for t in tools or [] if isinstance(t, dict) and t.get("type") == "namespace"}

    @staticmethod
    def split_name(call: dict, namespaces: set[str]) -> tuple[str | None, str]:
        if call.get("namespace"):
            return call["namespace"], call["name"]
        for ns in sorted(namespaces, key=len, reverse=True):
            if call["name"].startswith(ns + "__"):
                return ns, call["name"][len(ns) + 2 :]
        return None, call["name"]

    @staticmethod
    def render(n: int, step: dict, model: str, request: Any = None) -> list[bytes]:
        usage = step.get("usage", {})
        events = Responses.start(n, model, usage)
        seq = [len(events) - 1]
        output: list[dict] = []
        if step.get("text"):
            item_id, index = f"msg_scripted_{n:04d}", len(output)
            part = {"type": "output_text", "text": "", "annotations": []}
            item = {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}
            events.append(Responses.event("response.output_item.added", seq, output_index=index, item=item))
            events.append(Responses.event("response.content_part.added", seq, item_id=item_id, output_index=index, content_index=0, part=part))
            for piece in pieces(step["text"]):
                events.append(Responses.event("response.output_text.delta", seq, item_id=item_id, output_index=index, content_index=0, delta=piece))
            done_part = dict(part, text=step["text"])
            events.append(Responses.event("response.output_text.done", seq, item_id=item_id, output_index=index, content_index=0, text=step["text"]))
            events.append(Responses.event("response.content_part.done", seq, item_id=item_id, output_index=index, content_index=0, part=done_part))
            item = dict(item, status="completed", content=[done_part])
            events.append(Responses.event("response.output_item.done", seq, output_index=index, item=item))
            output.append(item)
        namespaces = Responses.namespaces(request)
        for i, call in enumerate(step.get("tool_calls", [])):
            item_id, index = f"fc_scripted_{n:04d}_{i}", len(output)
            namespace, name = Responses.split_name(call, namespaces)
            item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call.get("id", f"call_scripted_{n:04d}_{i}"), "name": name}
            if namespace:
                item["namespace"] = namespace
            events.append(Responses.event("response.output_item.added", seq, output_index=index, item=item))
            for piece in json_pieces(call.get("input", {})):
                events.append(Responses.event("response.function_call_arguments.delta", seq, item_id=item_id, output_index=index, delta=piece))
            arguments = json.dumps(call.get("input", {}))
            events.append(Responses.event("response.function_call_arguments.done", seq, item_id=item_id, output_index=index, arguments=arguments))
            item = dict(item, status="completed", arguments=arguments)
            events.append(Responses.event("response.output_item.done", seq, output_index=index, item=item))
            output.append(item)
        prompt, completion = usage.get("input_tokens", 10), usage.get("output_tokens", 5)
        totals = {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + completion,
        }
        status = "incomplete" if step.get("stop_reason") in ("max_output_tokens", "length") else "completed"
        final = Responses.response(n, model, status, output, totals)
        if status == "incomplete":
            final["incomplete_details"] = {"reason": "max_output_tokens"}
        events.append(Responses.event(f"response.{status}", seq, response=final))
        return events


class Script:
    """The steps, the count of answered requests and the log, shared by the handler threads."""

    def __init__(self, steps: list[dict], script_dir: Path, log: Path | None, fmt: str, access_log: Path | None = None) -> None:
        self.steps = steps
        self.script_dir = script_dir
        self.log = log
        self.access_log = access_log
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

    def access(self, method: str, path: str, status: int) -> None:
        if self.access_log is None:
            return
        with self.lock, self.access_log.open("a", encoding="utf-8") as f:
            f.write(f"{method} {path} {status}\n")

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

        def send_response(self, code: int, message: str | None = None) -> None:
            script.access(self.command, self.path, code)
            super().send_response(code, message)

        def side(self, method: str, body: Any) -> bool:
            """Answer a start-up call of the format's clients (no step is used up)."""
            answer = getattr(wire, "side", lambda *_: None)(method, self.path.split("?", 1)[0].rstrip("/"), body)
            if answer is None:
                return False
            self.send_json(*answer)
            return True

        def do_GET(self) -> None:  # noqa: N802
            if not self.side("GET", None):
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
            if self.side("POST", body):
                return
            handles = getattr(wire, "handles", None)
            if not (handles(path) if handles else path in wire.paths):
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
                self.answer(n, step, model, body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client went away (an abort): nothing to answer

        def answer(self, n: int, step: dict, model: str, request: Any) -> None:
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
                events = wire.render(n, step, model, request)
            self.start_stream()
            pause = step.get("chunk_delay_ms", 0) / 1000
            rate = float(step.get("events_per_second", 0))
            started = time.monotonic()
            for i, event in enumerate(events):
                if rate > 0:
                    # On a schedule rather than a sleep per event: event i leaves at i / rate, so
                    # the rate holds however long each write takes.
                    wait = started + i / rate - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
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


# `--format` name -> wire format. Formats kept in modules of their own add themselves here.
FORMATS: dict[str, type] = {"anthropic": Anthropic, "openai": OpenAI, "responses": Responses}


def load_extra_formats() -> None:
    """Formats in modules beside this file (`scripted_<name>.py` exposing `FORMATS`, e.g. Gemini's),
    imported when present so that adding a format needs no change here."""
    sys.modules.setdefault("scripted_model", sys.modules[__name__])  # one copy of the helpers
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    for module in sorted(HERE.glob("scripted_*.py")):
        if module.stem == "scripted_model":
            continue
        extra = __import__(module.stem)
        FORMATS.update(getattr(extra, "FORMATS", {}))


def main(argv: list[str] | None = None) -> int:
    load_extra_formats()
    parser = argparse.ArgumentParser(description="Serve scripted streaming model answers.")
    parser.add_argument("--format", choices=sorted(FORMATS), required=True)
    parser.add_argument("--script", type=Path, required=True, help="JSON list of steps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--port-file", type=Path, help="write the port here once listening")
    parser.add_argument("--log", type=Path, help="append each request body here, one JSON per line")
    parser.add_argument("--expect-key", help="answer 401 unless the request carries this API key")
    parser.add_argument("--access-log", type=Path, help="append `METHOD path status` here for every request")
    args = parser.parse_args(argv)

    script = Script(load_steps(args.script), args.script.resolve().parent, args.log, args.format, args.access_log)
    wire = FORMATS[args.format]
    handler = make_handler(script, wire, args.expect_key)
    wrap = getattr(wire, "wrap_handler", None)  # a format whose routes need more than `answer`
    if wrap is not None:
        handler = wrap(handler)
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
