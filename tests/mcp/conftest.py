"""Fixtures for the independent MCP client suite: find the `hands` binary, make a project root, start
`hands serve` on a free loopback port, and open an MCP client session over stdio or Streamable HTTP
with the official Python SDK.

Every server is started with HANDS_TEST_TOKEN=<uuid> in its environment. The children it starts
inherit it, so a test can tell whether any process it caused is still alive by scanning
/proc/*/environ for that token (see `live_processes_with`)."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]


def hands_binary() -> Path:
    """HANDS_BIN, else $CARGO_TARGET_DIR/debug/hands, else <repo>/target/debug/hands."""
    env = os.environ.get("HANDS_BIN")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    if not target.is_absolute():
        target = REPO / target
    return target / "debug" / "hands"


@pytest.fixture(scope="session")
def hands() -> Path:
    path = hands_binary()
    if not path.is_file() or not os.access(path, os.X_OK):
        msg = f"hands binary not found at {path}: run `cargo build -p hands` (or set HANDS_BIN)"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A small project: a text file, a nested source file, a .gitignore'd file."""
    r = tmp_path / "proj"
    r.mkdir()
    (r / "hello.txt").write_text("hello world\nsecond line\n")
    (r / "src").mkdir()
    (r / "src" / "main.rs").write_text('fn main() {\n    println!("needle in a haystack");\n}\n')
    (r / "notes.md").write_text("# Notes\nno needle here? yes: needle\n")
    return r


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port: int, path: str, headers: dict[str, str] | None = None, timeout: float = 5.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


@dataclass
class Server:
    """A running `hands serve`."""

    proc: subprocess.Popen
    port: int
    root: Path
    token_env: str  # the HANDS_TEST_TOKEN value its children inherit
    log: Path
    bearer: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


# The bearer token of each running server, by port: `hands serve` always requires one, so every
# request a test sends to a server gets its token unless the test says otherwise (`bearer_for`).
BEARERS: dict[int, str] = {}


def bearer_for(port: int) -> dict[str, str]:
    """The Authorization header of the server on `port`."""
    return {"Authorization": f"Bearer {BEARERS[port]}"} if port in BEARERS else {}


def start_serve(hands: Path, root: Path, log: Path, token: str | None = None, mode: str | None = None) -> Server:
    test_token = uuid.uuid4().hex
    token = token or f"mcp-{uuid.uuid4().hex}"
    # the server's own folders (a generated token, process records, the store) stay in the test's
    state = log.parent / "state"
    env = dict(
        os.environ,
        HANDS_TEST_TOKEN=test_token,
        RUST_BACKTRACE="1",
        HANDS_STATE_DIR=str(state),
        XDG_STATE_HOME=str(state),
        XDG_DATA_HOME=str(log.parent / "data"),
    )
    env.pop("HANDS_SERVER__TOKEN", None)
    last_err = ""
    for _attempt in range(3):  # a free port can be taken between probe and bind: retry
        port = free_port()
        args = [str(hands), "serve", "--listen", f"127.0.0.1:{port}", "--root", str(root), "--token", token]
        if mode:
            args += ["--mode", mode]
        logf = open(log, "ab")
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env, cwd=root)
        logf.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                status, _, _ = http_get(port, "/healthz", timeout=1)
                if status == 200:
                    BEARERS[port] = token
                    return Server(proc, port, root, test_token, log, bearer=token)
            except OSError:
                pass
            time.sleep(0.05)
        last_err = log.read_text(errors="replace")[-2000:]
        stop_process(proc)
    pytest.fail(f"`hands serve` did not answer /healthz with 200 within 15 s:\n{last_err}")


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@pytest.fixture
def serve(hands: Path, root: Path, tmp_path: Path) -> Iterator[Server]:
    srv = start_serve(hands, root, tmp_path / "serve.log")
    yield srv
    crashed = not srv.alive()
    stop_process(srv.proc)
    assert not crashed, f"hands serve exited during the test (rc={srv.proc.returncode}):\n{srv.stderr()}"


def live_processes_with(marker: str, exclude: set[int] = frozenset()) -> list[tuple[int, str]]:
    """(pid, cmdline) of every live, non-zombie process whose environment holds `marker`."""
    needle = marker.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        if pid in exclude or pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = f.read()
            if needle not in env:
                continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            state = stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3]
            if state in (b"Z", b"X"):
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue
        found.append((pid, cmd))
    return found


def children_of_marker(marker: str, hands: Path) -> list[tuple[int, str]]:
    """Processes carrying `marker` that are not hands itself (i.e. what tools started)."""
    out = []
    for pid, cmd in live_processes_with(marker):
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            exe = ""
        if exe.endswith("/hands") or exe == str(hands):
            continue
        out.append((pid, cmd))
    return out


# --- MCP client sessions over either transport -------------------------------------------------------

TRANSPORTS = ["stdio", "http"]


@dataclass
class Conn:
    session: object  # mcp.ClientSession
    transport: str
    token_env: str  # HANDS_TEST_TOKEN of the server (and so of its children)
    init: object  # InitializeResult
    notifications: list = field(default_factory=list)
    server: Server | None = None


@pytest.fixture
def connect(hands: Path, root: Path, tmp_path: Path):
    """`async with connect(transport) as conn:` an initialized ClientSession to a fresh hands server
    (`hands mcp` as a child over stdio, or `hands serve` over Streamable HTTP). Every server
    notification is appended to conn.notifications."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client

    servers: list[Server] = []

    @contextlib.asynccontextmanager
    async def _connect(transport: str, mode: str | None = None, sampling_callback=None) -> AsyncIterator[Conn]:
        notes: list = []

        async def on_message(msg) -> None:
            if isinstance(msg, Exception):
                notes.append(("exception", msg))
            else:
                notes.append((getattr(msg, "method", None), msg))

        if transport == "stdio":
            token = uuid.uuid4().hex
            args = ["mcp", "--root", str(root)] + (["--mode", mode] if mode else [])
            params = StdioServerParameters(
                command=str(hands), args=args, env={"HANDS_TEST_TOKEN": token, "RUST_BACKTRACE": "1"}, cwd=str(root)
            )
            with open(tmp_path / "stdio-stderr.log", "a") as errlog:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write, message_handler=on_message, sampling_callback=sampling_callback) as session:
                        init = await session.initialize()
                        yield Conn(session, transport, token, init, notes)
        elif transport == "http":
            srv = start_serve(hands, root, tmp_path / "serve.log", mode=mode)
            servers.append(srv)
            from mcp.shared._httpx_utils import create_mcp_http_client

            async with create_mcp_http_client(headers={"Authorization": f"Bearer {srv.bearer}"}) as http:
                async with streamable_http_client(srv.url, http_client=http) as (read, write):
                    async with ClientSession(read, write, message_handler=on_message, sampling_callback=sampling_callback) as session:
                        init = await session.initialize()
                        yield Conn(session, transport, srv.token_env, init, notes, server=srv)
            assert srv.alive(), f"hands serve died:\n{srv.stderr()}"
        else:
            raise ValueError(transport)

    yield _connect
    for srv in servers:
        crashed = not srv.alive()
        stop_process(srv.proc)
        assert not crashed, f"hands serve exited during the test (rc={srv.proc.returncode}):\n{srv.stderr()}"
