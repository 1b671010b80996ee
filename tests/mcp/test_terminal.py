"""The trap suite of terminal sessions (issue 29): programs that need a terminal, each driven the way
a model drives them, over MCP `tools/call` through `hands mcp --root <root>` with approval auto.

Every terminal call is timed: it must answer within the wait it was given (`timeout_ms` when it
waits for a pattern or the exit, else `yield_ms`) plus 1 s. That bound is the property under test.
Every test ends with no process left that carries the session's HANDS_TEST_TOKEN, after
stop_process, the program's exit or the end of the session."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator

import anyio
import pytest
from mcp import types

from conftest import REPO, children_of_marker, free_port

pytestmark = pytest.mark.anyio

# The npm packages of the watcher and scaffolder traps (vitest, create-vite): a package folder that
# .ci/run installs with `npm ci`. Absent until that folder exists.
NPM_FIXTURE = REPO / "tests" / "mcp" / "terminal-npm"

# A pattern no program prints: terminal_send waits with it until the program exits.
UNTIL_EXIT = "until-exit-never-printed-7f3a"
DEFAULT_YIELD_MS = 1_000
DEFAULT_WAIT_MS = 30_000


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def skip_or_fail(msg: str) -> None:
    """Under CI a missing tool fails the test; locally it skips, loudly."""
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


def allowed_seconds(tool: str, args: dict) -> float | None:
    """How long a terminal call may take: the wait it was given, plus 1 s."""
    if tool in ("terminal_start", "terminal_send"):
        wait = args.get("timeout_ms", DEFAULT_WAIT_MS) if "wait_for" in args else args.get("yield_ms", DEFAULT_YIELD_MS)
    elif tool == "terminal_read":
        wait = args.get("timeout_ms", DEFAULT_WAIT_MS) if ("wait_for" in args or args.get("wait_exit")) else 0
    else:
        return None
    return wait / 1000 + 1


@dataclass
class Term:
    """An MCP session with `hands mcp`, and the marker its children carry."""

    session: object
    token: str
    hands: Path
    root: Path

    async def result(self, tool: str, args: dict) -> types.CallToolResult:
        started = time.monotonic()
        result = await self.session.call_tool(tool, args)
        took = time.monotonic() - started
        assert not result.is_error, f"{tool} {args} failed: {text_of(result)}"
        bound = allowed_seconds(tool, args)
        if bound is not None:
            assert took <= bound, f"{tool} {args} took {took:.2f} s, allowed {bound:.2f} s: {text_of(result)}"
        return result

    async def call(self, tool: str, **args) -> dict:
        """The structured result of a successful call."""
        result = await self.result(tool, args)
        assert result.structured_content is not None, f"{tool} returned no structured content: {text_of(result)}"
        return result.structured_content

    def alive(self) -> list[tuple[int, str]]:
        return children_of_marker(self.token, self.hands)

    async def none_alive(self, what: str) -> None:
        """Every process the session caused is gone (10 s for the stop to land)."""
        for _ in range(200):
            if not self.alive():
                return
            await anyio.sleep(0.05)
        pytest.fail(f"{what}: processes still alive: {self.alive()}")


@pytest.fixture
def term(hands: Path, root: Path, tmp_path: Path):
    """`async with term() as t:` a `hands mcp` session; on leaving, the session ended and none of
    its processes is alive."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    @contextlib.asynccontextmanager
    async def _open(env: dict[str, str] | None = None) -> AsyncIterator[Term]:
        token = uuid.uuid4().hex
        params = StdioServerParameters(
            command=str(hands),
            args=["mcp", "--root", str(root), "-c", "approval=auto"],
            env={
                "HANDS_TEST_TOKEN": token,
                "RUST_BACKTRACE": "1",
                "HANDS_STATE_DIR": str(tmp_path / "state"),
                "XDG_STATE_HOME": str(tmp_path / "state"),
                "XDG_DATA_HOME": str(tmp_path / "data"),
                **(env or {}),
            },
            cwd=str(root),
        )
        t = None
        with open(tmp_path / "stdio-stderr.log", "a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    t = Term(session, token, hands, root)
                    yield t
        await t.none_alive("after the session ended")

    return _open


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return out.stdout


def git_repo(root: Path, commits: int) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Trap Test")
    git(root, "config", "user.email", "trap@example.invalid")
    git(root, "config", "core.editor", "vi")
    for n in range(1, commits + 1):
        (root / f"f{n}.txt").write_text(f"{n}\n")
        git(root, "add", f"f{n}.txt")
        git(root, "commit", "-q", "-m", f"commit {n}")


# --- REPLs --------------------------------------------------------------------------------------


async def test_python_repl(term):
    async with term() as t:
        r = await t.call("terminal_start", command="python3", wait_for=">>> ", timeout_ms=15000)
        assert r["waited"] == "match" and r["status"] == "running", r
        r = await t.call("terminal_send", id=r["id"], text="6*7\n", wait_for=">>> ", timeout_ms=10000)
        assert re.search(r"(?m)^42$", r["output"]), r
        r = await t.call("terminal_send", id=r["id"], text="exit()\n", wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after python3 exited")


async def test_node_repl(term):
    if not shutil.which("node"):
        skip_or_fail("node is not installed")
    async with term() as t:
        r = await t.call("terminal_start", command="node", wait_for="> $", timeout_ms=15000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=r["id"], text="6*7\n", wait_for=r"(?m)^42$", timeout_ms=10000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=r["id"], text=".exit\n", wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after node exited")


# --- editors opened by git ----------------------------------------------------------------------


async def test_git_rebase_interactive_in_vi(term, root: Path):
    git_repo(root, 3)
    async with term() as t:
        r = await t.call("terminal_start", command="GIT_EDITOR=vi git rebase -i HEAD~2",
                         wait_for="commit 3", timeout_ms=15000)
        pid = r["id"]
        screen = r.get("screen") or (await t.call("terminal_read", id=pid, screen=True))["screen"]
        assert re.search(r"(?m)^pick \w+ commit 2", screen) and re.search(r"(?m)^pick \w+ commit 3", screen), screen
        # line 1 picks commit 2, line 2 commit 3: squash the second into the first
        await t.call("terminal_send", id=pid, text="jcwsquash", keys=["Esc"], yield_ms=300)
        r = await t.call("terminal_send", id=pid, text=":wq\n", wait_for="combination of 2 commits|Successfully rebased",
                         timeout_ms=15000)
        assert r["waited"] in ("match", "exit"), r
        if r["status"] == "running":  # the commit-message editor opened: keep the combined message
            r = await t.call("terminal_send", id=pid, text=":wq\n", wait_for="Successfully rebased", timeout_ms=15000)
        if r["status"] == "running":
            r = await t.call("terminal_read", id=pid, wait_exit=True, timeout_ms=15000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        log = git(root, "log", "--format=%s").splitlines()
        assert len(log) == 2, log
        body = git(root, "log", "-1", "--format=%B")
        assert "commit 2" in body and "commit 3" in body, body
        await t.none_alive("after the rebase")


async def test_git_commit_message_in_vi(term, root: Path):
    git_repo(root, 1)
    (root / "new.txt").write_text("new\n")
    git(root, "add", "new.txt")
    message = "Trap commit typed in vi"
    async with term() as t:
        r = await t.call("terminal_start", command="GIT_EDITOR=vi git commit", wait_for="COMMIT_EDITMSG",
                         timeout_ms=15000)
        pid = r["id"]
        await t.call("terminal_send", id=pid, text=f"i{message}", keys=["Esc"], yield_ms=300)
        r = await t.call("terminal_send", id=pid, text=":wq\n", wait_for=re.escape(message), timeout_ms=15000)
        if r["status"] == "running":
            r = await t.call("terminal_read", id=pid, wait_exit=True, timeout_ms=15000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        assert git(root, "log", "-1", "--format=%s").strip() == message
        assert len(git(root, "log", "--format=%s").splitlines()) == 2
        await t.none_alive("after git commit")


# --- psql ---------------------------------------------------------------------------------------


def scale_pg():
    """tests/scale/pg.py as a module (its name `pg` is not on this suite's path)."""
    spec = importlib.util.spec_from_file_location("scale_pg", REPO / "tests" / "scale" / "pg.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def postgres():
    pg = scale_pg()
    bin_dir = pg.pg_bin()
    if bin_dir is None or not (bin_dir / "psql").exists() or not shutil.which("runuser"):
        skip_or_fail("PostgreSQL (initdb, pg_ctl, psql under /usr/lib/postgresql/*/bin) is not installed")
    server = pg.Postgres(bin_dir)
    try:
        yield server, pg.PASSWORD
    finally:
        server.stop()


async def test_psql(term, postgres):
    server, password = postgres
    async with term() as t:
        r = await t.call("terminal_start",
                         command=f"{server.bin / 'psql'} -h 127.0.0.1 -p {server.port} -U hands_scale -d postgres",
                         wait_for="[Pp]assword", timeout_ms=15000)
        pid = r["id"]
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, text=password + "\n", wait_for="postgres=#", timeout_ms=15000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, text="select 40+2;\n", wait_for=r"\(1 row\)", timeout_ms=15000)
        assert re.search(r"(?m)^\s*42\s*$", r["output"]), r
        r = await t.call("terminal_send", id=pid, text="\\q\n", wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after psql quit")


# --- full-screen programs -----------------------------------------------------------------------


async def test_less_pages(term, root: Path):
    (root / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 501)))
    async with term() as t:
        r = await t.call("terminal_start", command="less big.txt", rows=24, cols=80, wait_for=r"line 23\b",
                         timeout_ms=10000)
        pid = r["id"]
        screen = r.get("screen") or (await t.call("terminal_read", id=pid, screen=True))["screen"]
        assert screen.startswith("line 1\n"), screen
        r = await t.call("terminal_send", id=pid, keys=["Space"], wait_for=r"line 46\b", timeout_ms=10000)
        assert r["waited"] == "match", r
        screen = r.get("screen") or (await t.call("terminal_read", id=pid, screen=True))["screen"]
        assert re.match(r"line 2[34]\n", screen) and "line 1\n" not in screen, screen
        r = await t.call("terminal_send", id=pid, text="q", wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after less quit")


async def test_top_screen(term):
    async with term() as t:
        r = await t.call("terminal_start", command="top", wait_for="load average|Tasks", timeout_ms=10000)
        pid = r["id"]
        assert r["waited"] == "match", r
        screen = (await t.call("terminal_read", id=pid, screen=True))["screen"]
        assert re.search("load average|Tasks", screen), screen
        r = await t.call("terminal_send", id=pid, text="q", wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after top quit")


# --- input, signals, leftovers ------------------------------------------------------------------


async def test_cat_until_ctrl_d(term):
    async with term() as t:
        r = await t.call("terminal_start", command="cat", yield_ms=300)
        pid = r["id"]
        assert r["status"] == "running", r
        # the terminal echoes the line, then cat writes it back: twice
        r = await t.call("terminal_send", id=pid, text="first line\n", wait_for=r"first line\n(.*\n)?first line",
                         timeout_ms=10000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, text="second\n", wait_for=r"second\n(.*\n)?second", timeout_ms=10000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, keys=["Ctrl-D"], wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after cat ended")


async def test_daemon_left_holding_the_terminal(term):
    async with term() as t:
        r = await t.call("terminal_start", command="sleep 300 & echo started", wait_for="started", timeout_ms=10000)
        pid = r["id"]
        assert r["waited"] in ("match", "exit"), r
        if r["status"] == "running":
            r = await t.call("terminal_read", id=pid, wait_exit=True, timeout_ms=10000)
        assert r["status"] != "running", r
        await t.none_alive("after the shell exited, its `sleep 300 &`")


HUNDRED_MB = "head -c 100000000 /dev/zero | tr '\\0' 'x' | fold -w 100"


async def test_hundred_megabytes(term):
    async with term() as t:
        r = await t.call("terminal_start", command=HUNDRED_MB, wait_for="never-printed-[0-9]", timeout_ms=5000,
                         max_bytes=4096)
        pid = r["id"]
        assert r["skipped_bytes"] > 0 and r["skipped_from"] is not None, r | {"output": r["output"][:200]}
        assert r["offset"] >= r["skipped_bytes"] + 4096 - 200, r | {"output": r["output"][:200]}
        listed = await t.call("list_processes")
        assert any(p.get("id") == pid for p in listed.get("processes", [])), listed
        await t.result("stop_process", {"id": pid})
        await t.none_alive("after stop_process of the 100 MB printer")


# Found by this suite: the skipped-bytes line used to come on top of max_bytes.
async def test_hundred_megabytes_output_within_max_bytes(term):
    async with term() as t:
        r = await t.call("terminal_start", command=HUNDRED_MB, wait_for="never-printed-[0-9]", timeout_ms=5000,
                         max_bytes=4096)
        await t.result("stop_process", {"id": r["id"]})
        assert len(r["output"].encode()) <= 4096, len(r["output"].encode())
        assert r["skipped_bytes"] > 0, r


async def test_sigterm_ignored(term):
    async with term() as t:
        r = await t.call("terminal_start", command="trap '' TERM; echo armed; while :; do sleep 0.1; done",
                         wait_for="armed", timeout_ms=10000)
        pid = r["id"]
        assert r["waited"] == "match" and t.alive(), r
        stopped = await t.result("stop_process", {"id": pid})
        assert "kill" in text_of(stopped).lower(), text_of(stopped)
        await t.none_alive("after stop_process of a SIGTERM-ignoring loop")
        listed = await t.call("list_processes")
        entry = [p for p in listed.get("processes", []) if p.get("id") == pid]
        assert entry and entry[0]["status"] != "running", listed


async def test_ctrl_c_reaches_the_foreground_program(term):
    async with term() as t:
        r = await t.call("terminal_start", command="trap 'echo shell-saw-int' INT; echo sleeping; sleep 30; echo after",
                         wait_for="sleeping", timeout_ms=10000)
        pid = r["id"]
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, keys=["Ctrl-C"], wait_for=r"(?m)^after$", timeout_ms=10000)
        assert r["waited"] in ("match", "exit") and re.search(r"(?m)^after$", r["output"]), r
        if r["status"] == "running":
            r = await t.call("terminal_read", id=pid, wait_exit=True, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after the shell went on past Ctrl-C")


async def test_ctrl_c_spares_the_shell_under_job_control(term):
    """With job control (`set -m`) the shell puts `sleep` in a foreground group of its own: Ctrl-C
    reaches that group only. The sleep ends at once, the shell's INT trap never runs (bash then ends
    its script, as it does in any terminal), nothing is left."""
    async with term() as t:
        r = await t.call("terminal_start",
                         command="set -m; trap 'echo shell-saw-int' INT; echo sleeping; sleep 30; echo after",
                         wait_for="sleeping", timeout_ms=10000)
        pid = r["id"]
        assert any("sleep 30" in cmd for _, cmd in t.alive()), t.alive()
        r = await t.call("terminal_send", id=pid, keys=["Ctrl-C"], wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["waited"] == "exit" and r["status"] == "exited", r
        assert "shell-saw-int" not in r["output"], r
        await t.none_alive("after Ctrl-C under job control")


# --- ssh with a password ------------------------------------------------------------------------


@pytest.fixture
def sshd(tmp_path: Path):
    """A loopback sshd on a free port that takes a password for a throwaway user; both removed after."""
    sshd_bin = Path("/usr/sbin/sshd")
    if not sshd_bin.exists() or not shutil.which("ssh") or not shutil.which("ssh-keygen"):
        skip_or_fail("openssh-server (/usr/sbin/sshd) or the ssh client is not installed")
    if os.geteuid() != 0:
        skip_or_fail("the sshd trap creates a user: it needs root")
    user = f"htrap{uuid.uuid4().hex[:8]}"
    password = f"pw-{uuid.uuid4().hex[:12]}"
    work = tmp_path / "sshd"
    work.mkdir()
    key = work / "host_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation folder
    subprocess.run(["useradd", "-m", "-s", "/bin/sh", user], check=True)
    proc = None
    try:
        subprocess.run(["chpasswd"], input=f"{user}:{password}\n", text=True, check=True)
        port = free_port()
        config = work / "sshd_config"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {key}\nPidFile {work / 'sshd.pid'}\n"
            f"PasswordAuthentication yes\nKbdInteractiveAuthentication no\nPubkeyAuthentication no\n"
            f"UsePAM no\nPermitRootLogin no\nAllowUsers {user}\nStrictModes no\n"
        )
        log = open(work / "sshd.log", "wb")
        proc = subprocess.Popen([str(sshd_bin), "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
        log.close()
        for _ in range(200):
            if proc.poll() is not None:
                break
            try:
                import socket

                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.05)
        assert proc.poll() is None, f"sshd exited: {(work / 'sshd.log').read_text(errors='replace')}"
        yield port, user, password
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        subprocess.run(["userdel", "-r", "-f", user], capture_output=True)


async def test_ssh_password_prompt(term, sshd):
    port, user, password = sshd
    async with term() as t:
        r = await t.call("terminal_start",
                         command=f"ssh -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
                                 f"-o PreferredAuthentications=password -p {port} {user}@127.0.0.1",
                         wait_for="password:", timeout_ms=20000)
        pid = r["id"]
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, text=password + "\n", wait_for=r"\$ $", timeout_ms=20000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, text="echo hi-from-ssh\n", wait_for=r"(?m)^hi-from-ssh", timeout_ms=10000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, text="exit\n", wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        await t.none_alive("after ssh logged out")


# --- npm programs: a test watcher and a scaffolder ----------------------------------------------


def npm_bin(name: str) -> Path:
    path = NPM_FIXTURE / "node_modules" / ".bin" / name
    if not path.exists():
        msg = f"{path.relative_to(REPO)} is missing: `npm ci` in {NPM_FIXTURE.relative_to(REPO)} installs it"
        if (NPM_FIXTURE / "package.json").exists():
            skip_or_fail(msg)
        pytest.skip(msg + " (that package folder is not in the repository yet)")
    return path


async def test_vitest_watch(term, root: Path):
    vitest = npm_bin("vitest")
    (root / "node_modules").symlink_to(NPM_FIXTURE / "node_modules")
    (root / "package.json").write_text('{"name": "trap", "private": true, "type": "module"}\n')
    (root / "sum.test.js").write_text(
        "import { expect, test } from 'vitest'\ntest('adds', () => { expect(40 + 2).toBe(42) })\n"
    )
    async with term() as t:
        r = await t.call("terminal_start", command=f"{vitest} --watch", wait_for=r"1 passed", timeout_ms=60000)
        pid = r["id"]
        assert r["waited"] == "match", r
        (root / "sum.test.js").write_text(
            "import { expect, test } from 'vitest'\ntest('adds', () => { expect(40 + 2).toBe(43) })\n"
        )
        r = await t.call("terminal_read", id=pid, wait_for=r"1 failed", timeout_ms=30000)
        assert r["waited"] == "match", r
        r = await t.call("terminal_send", id=pid, text="q", wait_for=UNTIL_EXIT, timeout_ms=10000)
        assert r["status"] == "exited", r
        await t.none_alive("after vitest quit")


async def test_create_vite_prompts(term, root: Path):
    create = npm_bin("create-vite")
    async with term() as t:
        r = await t.call("terminal_start", command=f"{create} trap-app", wait_for="Select a framework",
                         timeout_ms=30000)
        pid = r["id"]
        assert r["waited"] == "match" and "Vanilla" in r["output"], r
        r = await t.call("terminal_send", id=pid, keys=["Enter"], wait_for="Select a variant", timeout_ms=15000)
        assert r["waited"] == "match" and "JavaScript" in r["output"], r
        # the second variant, JavaScript: the arrow key must reach the prompt
        r = await t.call("terminal_send", id=pid, keys=["Down", "Enter"], wait_for=r"Install with npm|Done\. Now run",
                         timeout_ms=15000)
        assert r["waited"] in ("match", "exit"), r
        if r["status"] == "running":  # "Install with npm and start now?": No (it would fetch packages)
            r = await t.call("terminal_send", id=pid, keys=["Right", "Enter"], wait_for=UNTIL_EXIT, timeout_ms=15000)
        assert r["status"] == "exited" and r["exit_code"] == 0, r
        app = root / "trap-app"
        assert (app / "package.json").exists() and not (app / "node_modules").exists(), list(app.iterdir())
        assert (app / "src" / "main.js").exists(), sorted(p.name for p in (app / "src").iterdir())
        await t.none_alive("after create-vite")


async def test_session_end_stops_a_running_terminal(term):
    async with term() as t:
        r = await t.call("terminal_start", command="python3", wait_for=">>> ", timeout_ms=15000)
        assert r["status"] == "running" and any("python3" in cmd for _, cmd in t.alive()), (r, t.alive())
    # leaving `term()` ended the session and found nothing alive


# --- wake-ups -----------------------------------------------------------------------------------


async def test_notify_on_wakes_a_later_call(term):
    async with term() as t:
        # the marker is computed, so the notice can only come from the output, not the command's text
        r = await t.call("terminal_start", command="echo begin; sleep 0.3; echo WAKE-$((6*7)); exec sleep 300",
                         notify_on="WAKE-42", yield_ms=100)
        pid = r["id"]
        assert r["status"] == "running" and "WAKE-42" not in r["output"], r
        notice = ""
        for _ in range(100):
            body = text_of(await t.result("read_file", {"path": "hello.txt"}))
            if "[notice]" in body:
                notice = body[body.index("[notice]"):]
                break
            await anyio.sleep(0.1)
        assert notice, "no notice reached an unrelated call within 100 calls"
        assert pid in notice and "WAKE-42" in notice, notice
        again = text_of(await t.result("read_file", {"path": "hello.txt"}))
        assert "WAKE-42" not in again, f"the notice came twice: {again}"
        await t.result("stop_process", {"id": pid})
        await t.none_alive("after stop_process")
