"""Helpers for driving hands with real MCP clients (Gemini CLI, the MCP Inspector CLI).

Generic on purpose (the shared fixtures of the clients suite can take them over): where the hands
binary, Node 22 and the npm-installed clients are; a scripted model server with a script and a
request log; `hands serve` on a free loopback port with a bearer token; a client run bounded in
time. Only loopback addresses are ever used.

Environment:
    HANDS_BIN                 the hands binary (default $CARGO_TARGET_DIR/debug/hands, else target/debug/hands)
    HANDS_CLIENTS_NODE_MODULES  the node_modules folder with the clients (default tests/clients/node_modules)
    HANDS_CLIENTS_NODE_BIN    the folder of Node 22's `node` (default: the `node` on PATH)
    CI                        when set, a missing client fails the test instead of skipping it
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SCRIPTED_MODEL = REPO / "tests" / "agent" / "scripted_model.py"

# Environment variables that could send a client's traffic anywhere but loopback.
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def hands_bin() -> Path:
    if os.environ.get("HANDS_BIN"):
        path = Path(os.environ["HANDS_BIN"])
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        path = (target if target.is_absolute() else REPO / target) / "debug" / "hands"
    if not path.is_file():
        pytest.fail(f"no hands binary at {path}: run `cargo build -p hands` or set HANDS_BIN")
    return path


def node_modules() -> Path:
    return Path(os.environ.get("HANDS_CLIENTS_NODE_MODULES", HERE / "node_modules"))


def client_bin(name: str) -> Path:
    """`node_modules/.bin/<name>`; a missing client skips the test (fails it under CI)."""
    path = node_modules() / ".bin" / name
    if not path.exists():
        message = f"{name} is not installed at {path} (run tests/clients/run.sh, or set HANDS_CLIENTS_NODE_MODULES)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def client_env(home: Path, **extra: str) -> dict[str, str]:
    """A client's environment: its own HOME, Node 22 first on PATH, no proxies, no colour, no
    update checks or telemetry."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
    node_dir = os.environ.get("HANDS_CLIENTS_NODE_BIN")
    if node_dir:
        env["PATH"] = f"{node_dir}{os.pathsep}{env.get('PATH', '')}"
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=str(home / ".cache"),
        NO_PROXY="127.0.0.1,localhost,::1",
        NO_COLOR="1",
        NO_UPDATE_NOTIFIER="1",
        **extra,
    )
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_file(path: Path, proc: subprocess.Popen, what: str, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().endswith("\n"):
            return path.read_text().strip()
        if proc.poll() is not None:
            raise AssertionError(f"{what} exited early with {proc.returncode}")
        time.sleep(0.05)
    raise AssertionError(f"{what} did not start within {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@dataclass
class ScriptedModel:
    """tests/agent/scripted_model.py serving `steps` in `fmt` on a loopback port."""

    fmt: str
    steps: list[dict]
    work: Path
    expect_key: str | None = None
    proc: subprocess.Popen | None = None
    port: int = 0
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.work / f"model-{self.fmt}.jsonl"

    def start(self) -> ScriptedModel:
        script = self.work / f"script-{self.fmt}.json"
        script.write_text(json.dumps(self.steps))
        port_file = self.work / f"model-{self.fmt}.port"
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPTED_MODEL), "--format", self.fmt, "--script", str(script),
             "--port", "0", "--port-file", str(port_file), "--log", str(self.log),
             *(["--expect-key", self.expect_key] if self.expect_key else [])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.port = int(wait_for_file(port_file, self.proc, "the scripted model"))
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def requests(self) -> list[Any]:
        if not self.log.is_file():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)


@dataclass
class HandsServe:
    """`hands serve` on a free loopback port with a bearer token; MCP at `url`."""

    root: Path
    work: Path
    token: str = field(default_factory=lambda: f"test-token-{uuid.uuid4().hex}")
    proc: subprocess.Popen | None = None
    port: int = 0
    stderr: Path = field(init=False)

    def __post_init__(self) -> None:
        self.stderr = self.work / "serve.stderr"

    def start(self) -> HandsServe:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if k not in PROXY_VARS}
        env["HANDS_SERVER__TOKEN"] = self.token
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [str(hands_bin()), "serve", "--listen", f"127.0.0.1:{self.port}", "--root", str(self.root)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if "serving MCP at" in self.stderr.read_text(errors="replace"):
                return self
            if self.proc.poll() is not None:
                raise AssertionError(f"hands serve exited with {self.proc.returncode}: {self.stderr.read_text()}")
            time.sleep(0.05)
        raise AssertionError(f"hands serve did not start: {self.stderr.read_text()}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return f"exit {self.returncode}\n--- stdout\n{self.stdout[-4000:]}\n--- stderr\n{self.stderr[-6000:]}"


def run_client(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 180) -> Run:
    """Run a client to its end (killed with its process group after `timeout` seconds)."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
        raise AssertionError(f"{argv[0]} did not finish within {timeout} s\n--- stdout\n{out[-4000:]}\n--- stderr\n{err[-6000:]}")
    return Run(proc.returncode, out, err)


def marker() -> str:
    """A unique text a test expects to see come back (and nowhere else)."""
    return f"marker-{uuid.uuid4().hex[:12]}"


# --- the Gemini API -------------------------------------------------------------------------------


def gemini_settings(home: Path, server: dict) -> Path:
    """An isolated `~/.gemini/settings.json`: API-key auth, hands as the only MCP server, no
    telemetry, usage statistics, update checks or folder-trust prompt."""
    settings = {
        "mcpServers": {"hands": server},
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    path = home / ".gemini" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings, indent=2))
    return path


def gemini_function_responses(body: Any) -> list[dict]:
    """Every `functionResponse` part of a logged `generateContent` request, oldest first."""
    found = []
    for content in body.get("contents", []) if isinstance(body, dict) else []:
        for part in content.get("parts", []):
            if "functionResponse" in part:
                found.append(part["functionResponse"])
    return found


def gemini_declared_tools(body: Any) -> list[str]:
    return [d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])]
