"""The pieces every end-to-end scenario uses: the scripted model server (tests/agent/scripted_model.py)
as a child process, the real `hands serve` binary with an isolated HOME and config, an HTTP client for
its session API, an SSE reader for a session's event stream, and readers of each provider's wire
format for the requests hands sent to the model.

Nothing here fakes hands: the only stand-in is the model."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import httpx

REPO = Path(__file__).resolve().parents[2]
SCRIPTED_MODEL = REPO / "tests" / "agent" / "scripted_model.py"

# The variable hands reads the model's key from ([model] api_key_env), and the key the scripted
# server insists on (--expect-key): a request without it gets 401, so a passing test proves that
# hands sent the configured key in the provider's header.
KEY_ENV = "HANDS_E2E_MODEL_KEY"

# Loose limits: the machine has 2 cores and is shared with other builds and test suites.
START_TIMEOUT = 30.0
TURN_TIMEOUT = 60.0


def hands_binary() -> Path:
    """HANDS_BIN, else $CARGO_TARGET_DIR/debug/hands, else <repo>/target/debug/hands."""
    env = os.environ.get("HANDS_BIN")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    if not target.is_absolute():
        target = REPO / target
    return target / "debug" / "hands"


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy; fail with `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


# --- the scripted model ---------------------------------------------------------------------------


class ScriptedModel:
    """`scripted_model.py` serving `steps` in the `fmt` wire format, with a request log."""

    def __init__(self, fmt: str, steps: list[dict], workdir: Path, key: str | None = None) -> None:
        assert fmt in ("anthropic", "openai"), fmt
        self.fmt = fmt
        self.key = key or f"sk-e2e-{uuid.uuid4().hex[:16]}"
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.script = self.dir / "script.json"
        self.script.write_text(json.dumps({"steps": steps}, indent=1))
        self.log = self.dir / "requests.jsonl"
        self.port_file = self.dir / "port.txt"
        self.stderr_path = self.dir / "stderr.log"
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(SCRIPTED_MODEL), "--format", fmt, "--script", str(self.script),
                 "--port", "0", "--port-file", str(self.port_file), "--log", str(self.log),
                 "--expect-key", self.key],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err,
            )
        port_text = wait_until(
            lambda: (self.proc.poll() is None or self._died()) and self._port_text(),
            START_TIMEOUT, "the scripted model's port file",
        )
        self.port = int(port_text)

    def _died(self) -> bool:
        raise AssertionError(f"scripted model exited (rc={self.proc.returncode}):\n{self.stderr()}")

    def _port_text(self) -> str | None:
        try:
            text = self.port_file.read_text().strip()
        except OSError:
            return None
        return text or None

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    @property
    def base_url(self) -> str:
        """What `[model] base_url` says (the README of tests/agent gives both forms)."""
        root = f"http://127.0.0.1:{self.port}"
        return root if self.fmt == "anthropic" else root + "/v1"

    def requests(self) -> list[dict]:
        """Every request body received so far, in order (including any refused with 401)."""
        try:
            lines = self.log.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def answered(self) -> int:
        """How many requests took a step of the script (GET / says)."""
        return httpx.get(f"http://127.0.0.1:{self.port}/", timeout=10).json()["answered"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


# --- the wire formats ---------------------------------------------------------------------------


@dataclass
class WireResult:
    """One tool result as a model request carries it."""

    call_id: str
    text: str
    is_error: bool | None  # None: the format has no such field (OpenAI)


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list, joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")


def tool_results(fmt: str, request: dict) -> list[WireResult]:
    """The tool results that a request sends after the last assistant message, in the order sent,
    checked against the provider's exact shape as they are read."""
    messages = request["messages"]
    last_assistant = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    out: list[WireResult] = []
    if fmt == "anthropic":
        for message in messages[last_assistant + 1 :]:
            assert message["role"] == "user", message
            assert isinstance(message["content"], list), message
            for block in message["content"]:
                if block["type"] != "tool_result":
                    continue
                assert set(block) <= {"type", "tool_use_id", "content", "is_error"}, block
                assert isinstance(block["is_error"], bool), block
                for part in block.get("content", []):
                    assert part["type"] in ("text", "image"), part
                out.append(WireResult(block["tool_use_id"], text_of(block.get("content")), block["is_error"]))
        return out
    for message in messages[last_assistant + 1 :]:
        if message["role"] != "tool":
            continue
        assert set(message) == {"role", "tool_call_id", "content"}, message
        assert isinstance(message["content"], str), message
        out.append(WireResult(message["tool_call_id"], message["content"], None))
    return out


def tool_calls_in(fmt: str, message: dict) -> list[tuple[str, str, dict]]:
    """(id, name, input) of an assistant message's tool calls in the provider's shape."""
    if fmt == "anthropic":
        return [(b["id"], b["name"], b["input"]) for b in message["content"] if b["type"] == "tool_use"]
    calls = []
    for call in message.get("tool_calls") or []:
        assert call["type"] == "function", call
        assert isinstance(call["function"]["arguments"], str), call  # JSON as a string on this wire
        calls.append((call["id"], call["function"]["name"], json.loads(call["function"]["arguments"])))
    return calls


def offered_tools(fmt: str, request: dict) -> list[str]:
    """The names of the tools a request offers the model."""
    if fmt == "anthropic":
        return [t["name"] for t in request.get("tools", [])]
    return [t["function"]["name"] for t in request.get("tools", [])]


def tool_schema(fmt: str, request: dict, name: str) -> dict:
    for tool in request.get("tools", []):
        if fmt == "anthropic" and tool["name"] == name:
            return tool["input_schema"]
        if fmt == "openai" and tool["function"]["name"] == name:
            return tool["function"]["parameters"]
    raise AssertionError(f"{name} is not offered; offered: {offered_tools(fmt, request)}")


def conversation(fmt: str, request: dict) -> list[dict]:
    """The request's messages without the system message (OpenAI puts it in `messages`)."""
    return [m for m in request["messages"] if m["role"] != "system"]


def user_texts(fmt: str, request: dict) -> list[str]:
    """The text of every user message (not tool results) of a request, in order."""
    texts = []
    for message in conversation(fmt, request):
        if message["role"] != "user":
            continue
        if fmt == "anthropic":
            texts.extend(b["text"] for b in message["content"] if b["type"] == "text")
        else:
            texts.append(text_of(message["content"]))
    return texts


def call_id_prefix(fmt: str) -> str:
    """The ids the scripted model gives tool calls (toolu_scripted_NNNN_I / call_scripted_NNNN_I)."""
    return "toolu_scripted_" if fmt == "anthropic" else "call_scripted_"


def call_id(fmt: str, request_number: int, index: int) -> str:
    return f"{call_id_prefix(fmt)}{request_number:04d}_{index}"


# --- the event stream ---------------------------------------------------------------------------


@dataclass
class SseEvent:
    id: int
    event: str
    data: dict
    raw_data: str


class EventStream:
    """Reads `GET /v1/sessions/{id}/events` on a thread and keeps every event received. Checks each
    message's framing on the way: `id:` equals the data's `id`, `event:` its `type`."""

    def __init__(self, base_url: str, token: str, session_id: str, last_event_id: int | None = None,
                 after: int | None = None) -> None:
        self.session_id = session_id
        self.events: list[SseEvent] = []
        self.errors: list[str] = []
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.ended = threading.Event()
        self._cond = threading.Condition()
        self._client = httpx.Client(base_url=base_url, timeout=httpx.Timeout(10.0, read=None))
        headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        params = {"after": after} if after is not None else None
        self._request = self._client.build_request("GET", f"/v1/sessions/{session_id}/events", headers=headers, params=params)
        self._opened = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._opened.wait(START_TIMEOUT):
            raise AssertionError("the event stream did not answer")
        if self.errors:
            raise AssertionError(f"event stream failed: {self.errors}")

    def _run(self) -> None:
        try:
            response = self._client.send(self._request, stream=True)
        except Exception as err:  # noqa: BLE001 (reported to the test)
            self.errors.append(f"connect: {err!r}")
            self._opened.set()
            self.ended.set()
            return
        self.status = response.status_code
        self.headers = dict(response.headers)
        self._response = response
        self._opened.set()
        if response.status_code != 200:
            self.body = response.read().decode(errors="replace")
            response.close()
            self.ended.set()
            return
        fields: dict[str, list[str]] = {}
        try:
            for line in response.iter_lines():
                if line == "":
                    if "data" in fields:
                        self._dispatch(fields)
                    fields = {}
                    continue
                if line.startswith(":"):
                    continue  # keep-alive comment
                name, _, value = line.partition(":")
                if value.startswith(" "):
                    value = value[1:]
                fields.setdefault(name, []).append(value)
        except (httpx.HTTPError, RuntimeError, ValueError) as err:
            if not self._closing:
                self.errors.append(f"read: {err!r}")
        finally:
            response.close()
            self.ended.set()
            with self._cond:
                self._cond.notify_all()

    _closing = False

    def _dispatch(self, fields: dict[str, list[str]]) -> None:
        raw = "\n".join(fields["data"])
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            self.errors.append(f"data is not JSON: {raw[:200]}")
            return
        ids = fields.get("id", [])
        kinds = fields.get("event", [])
        if len(ids) != 1 or not ids[0].isdigit() or int(ids[0]) != data.get("id"):
            self.errors.append(f"id: {ids} does not match the data's id {data.get('id')}")
        if len(kinds) != 1 or kinds[0] != data.get("type"):
            self.errors.append(f"event: {kinds} does not match the data's type {data.get('type')}")
        if data.get("session_id") != self.session_id:
            self.errors.append(f"event of another session: {data}")
        event = SseEvent(int(ids[0]) if ids and ids[0].isdigit() else -1, kinds[0] if kinds else "", data, raw)
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def wait_for(self, predicate: Callable[[dict], bool], timeout: float = TURN_TIMEOUT, what: str = "an event") -> dict:
        """The first event (data) received that satisfies `predicate`, waiting for it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events:
                    if predicate(event.data):
                        return event.data
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.ended.is_set() and not self._closing):
                    kinds = [e.event for e in self.events]
                    raise AssertionError(
                        f"no {what} within {timeout:.0f} s (stream ended: {self.ended.is_set()}, "
                        f"errors: {self.errors}); events so far: {kinds}")
                self._cond.wait(min(remaining, 0.5))

    def wait_type(self, kind: str, timeout: float = TURN_TIMEOUT, **match: Any) -> dict:
        return self.wait_for(lambda d: d.get("type") == kind and all(d.get(k) == v for k, v in match.items()),
                             timeout, f"`{kind}` event {match or ''}")

    def turn_end(self, turn_id: str, timeout: float = TURN_TIMEOUT) -> dict:
        return self.wait_type("turn_ended", timeout, turn_id=turn_id)

    def of_type(self, kind: str) -> list[dict]:
        with self._cond:
            return [e.data for e in self.events if e.event == kind]

    def data(self) -> list[dict]:
        with self._cond:
            return [e.data for e in self.events]

    def ids(self) -> list[int]:
        with self._cond:
            return [e.id for e in self.events]

    _response: httpx.Response | None = None

    def close(self) -> None:
        """Drop the connection (as a client that goes away does) and wait for the reader."""
        self._closing = True
        response = self._response
        if response is not None:
            # Closing the client from this thread does not wake a read blocked in the reader
            # thread; shutting the socket down does.
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self._thread.join(10)
        assert not self._thread.is_alive(), "the event stream reader did not stop"
        self._client.close()


# --- hands serve --------------------------------------------------------------------------------


def toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def user_config(model: ScriptedModel | None, store_path: Path, approval: str = "auto",
                extra: str = "") -> str:
    lines = [f"approval = {toml_str(approval)}", ""]
    if model is not None:
        lines += [
            "[model]",
            f"provider = {toml_str(model.fmt)}",
            f"model = {toml_str('claude-e2e' if model.fmt == 'anthropic' else 'gpt-e2e')}",
            f"base_url = {toml_str(model.base_url)}",
            f"api_key_env = {toml_str(KEY_ENV)}",
            "",
        ]
    lines += ["[store]", f"path = {toml_str(str(store_path))}", ""]
    return "\n".join(lines) + extra


class Hands:
    """A running `hands serve` with its own HOME, config, store, state folder and token."""

    SERVING = re.compile(r"serving MCP at http://127\.0\.0\.1:(\d+)/mcp")

    def __init__(self, binary: Path, home: Path, root: Path, model: ScriptedModel | None, *,
                 approval: str = "auto", extra_config: str = "", store_path: Path | None = None,
                 marker: str | None = None, args: Iterable[str] = (), extra_env: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.home = home
        self.root = root
        self.model = model
        self.token = f"e2e-{uuid.uuid4().hex}"
        # More arguments of `hands serve` (e.g. `--open`) and more variables (e.g. `BROWSER`).
        self.args = list(args)
        self.extra_env = dict(extra_env or {})
        # Every process hands starts inherits this: /proc/*/environ tells which are ours.
        self.marker = marker or f"hands-e2e-{uuid.uuid4().hex}"
        self.store_path = store_path or home / "store" / "sessions.db"
        config_dir = home / ".config" / "hands"
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "config.toml").write_text(user_config(model, self.store_path, approval, extra_config))
        self.log_path = home / "serve.log"
        self.proc: subprocess.Popen | None = None
        self.port = 0
        # Where the next start listens; a test that restarts on the same port sets it.
        self.listen = "127.0.0.1:0"
        self.client: httpx.Client | None = None
        self.streams: list[EventStream] = []

    def env(self) -> dict[str, str]:
        # Nothing of the caller's hands settings leaks in (CI may set HANDS_*).
        env = {k: v for k, v in os.environ.items() if not k.startswith("HANDS_")}
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            HANDS_STATE_DIR=str(self.home / "state"),
            HANDS_E2E_MARKER=self.marker,
            RUST_BACKTRACE="1",
        )
        if self.model is not None:
            env[KEY_ENV] = self.model.key
        env.update(self.extra_env)
        return env

    def start(self) -> "Hands":
        """Start (or start again) on a free port; returns once /healthz answers."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [str(self.binary), "--root", str(self.root), "serve", "--listen", self.listen, "--token", self.token,
                 *self.args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env(), cwd=self.root,
            )

        def port() -> int | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"hands serve exited at start (rc={self.proc.returncode}):\n{self.stderr()}")
            with open(self.log_path, "rb") as f:
                f.seek(offset)
                found = self.SERVING.search(f.read().decode(errors="replace"))
            return int(found.group(1)) if found else None

        self.port = wait_until(port, START_TIMEOUT, "hands serve to report its port")
        if self.client is not None:
            self.client.close()
        self.client = httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {self.token}"},
                                   timeout=httpx.Timeout(60.0))
        wait_until(lambda: self._healthy(), START_TIMEOUT, "/healthz")
        return self

    def _healthy(self) -> bool:
        try:
            return httpx.get(self.base_url + "/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stderr(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send `sig` and wait for the exit; the exit status (a kill after `timeout` fails the test)."""
        for stream in self.streams:
            stream.close()
        self.streams.clear()
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError(f"hands serve did not exit within {timeout:.0f} s of signal {sig}:\n{self.stderr()}")
        if self.client is not None:
            self.client.close()
            self.client = None
        return self.proc.returncode

    # --- the API ---

    def request(self, method: str, path: str, **kw: Any) -> httpx.Response:
        assert self.client is not None
        return self.client.request(method, path, **kw)

    def create_session(self, root: Path | None = None, **fields: Any) -> dict:
        body = {"root": str(root or self.root), **fields}
        r = self.request("POST", "/v1/sessions", json=body)
        assert r.status_code == 201, (r.status_code, r.text)
        info = r.json()
        assert info["root"] == str((root or self.root).resolve()), info
        return info

    def post_message(self, session_id: str, text: str) -> str:
        r = self.request("POST", f"/v1/sessions/{session_id}/messages", json={"text": text})
        assert r.status_code == 202, (r.status_code, r.text)
        return r.json()["turn_id"]

    def get_session(self, session_id: str) -> dict:
        r = self.request("GET", f"/v1/sessions/{session_id}")
        assert r.status_code == 200, (r.status_code, r.text)
        return r.json()

    def transcript(self, session_id: str) -> list[dict]:
        r = self.request("GET", f"/v1/sessions/{session_id}/messages")
        assert r.status_code == 200, (r.status_code, r.text)
        return r.json()["messages"]

    def events(self, session_id: str, last_event_id: int | None = None, after: int | None = None) -> EventStream:
        stream = EventStream(self.base_url, self.token, session_id, last_event_id, after)
        assert stream.status == 200, (stream.status, getattr(stream, "body", ""))
        assert stream.headers.get("content-type", "").startswith("text/event-stream"), stream.headers
        self.streams.append(stream)
        return stream


# --- processes ----------------------------------------------------------------------------------


def processes_with(needle: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live, non-zombie process whose environment holds `needle`."""
    wanted = needle.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if wanted not in f.read():
                    continue
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
            state = stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3]
            if state in (b"Z", b"X"):
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue
        found.append((int(entry), cmd))
    return found


def transcript_is_valid(messages: Iterable[dict]) -> list[str]:
    """Problems with a transcript: a tool_use without its tool_result (in the next user message),
    a result without a use, roles that do not make sense. Empty when valid."""
    problems = []
    messages = list(messages)
    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if not uses:
            continue
        answered: list[str] = []
        for later in messages[i + 1 :]:
            if later["role"] == "assistant":
                break
            answered += [b["tool_use_id"] for b in later["content"] if b["type"] == "tool_result"]
        for use in uses:
            if use not in answered:
                problems.append(f"tool_use {use} of message {i} has no tool_result")
    all_uses = {b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"}
    for m in messages:
        for b in m["content"]:
            if b["type"] == "tool_result" and b["tool_use_id"] not in all_uses:
                problems.append(f"tool_result {b['tool_use_id']} answers no tool_use")
    return problems
