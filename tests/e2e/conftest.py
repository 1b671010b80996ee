"""Fixtures of the end-to-end session scenarios: the `hands` binary, a project root, and `setup`,
which starts a scripted model server and a `hands serve` configured to use it, and tears both down
(checking that hands did not crash and left no process behind)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import SCRIPTED_MODEL, Hands, ScriptedModel, hands_binary, processes_with  # noqa: E402


def _missing(msg: str) -> None:
    """A missing prerequisite fails under CI and skips elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def hands_bin() -> Path:
    path = hands_binary()
    if not path.is_file() or not os.access(path, os.X_OK):
        _missing(f"hands binary not found at {path}: run `cargo build -p hands` (or set HANDS_BIN)")
    if not SCRIPTED_MODEL.is_file():
        _missing(f"the scripted model server is missing: {SCRIPTED_MODEL}")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A small project: a module with a bug, its test, some files to read and search."""
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.sh").write_text(
        "#!/bin/sh\n"
        "# a tiny test runner: exit 0 when add() adds\n"
        "python3 -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)' && echo 'calc: 1 passed'\n"
    )
    (root / "hello.txt").write_text("hello world\nsecond line\n")
    (root / "notes.md").write_text("# Notes\nthe needle is here\n")
    (root / "src" / "main.rs").write_text('fn main() {\n    println!("needle in a haystack");\n}\n')
    return root


class Setup:
    """Starts the pieces of one scenario and stops them at the end."""

    def __init__(self, hands_bin: Path, project: Path, tmp_path: Path) -> None:
        self.hands_bin = hands_bin
        self.project = project
        self.tmp = tmp_path
        self.models: list[ScriptedModel] = []
        self.servers: list[Hands] = []

    def model(self, fmt: str, steps: list[dict]) -> ScriptedModel:
        model = ScriptedModel(fmt, steps, self.tmp / f"model-{len(self.models)}")
        self.models.append(model)
        return model

    def hands(self, model: ScriptedModel | None, **kw) -> Hands:
        home = self.tmp / f"home-{len(self.servers)}"
        home.mkdir()
        server = Hands(self.hands_bin, home, self.project, model, **kw)
        self.servers.append(server)
        return server.start()

    def __call__(self, fmt: str, steps: list[dict], **kw) -> tuple[ScriptedModel, Hands]:
        model = self.model(fmt, steps)
        return model, self.hands(model, **kw)

    def teardown(self) -> None:
        problems = []
        for server in self.servers:
            if server.proc is None:
                continue
            # stop() clears the client: an exit without it is a crash
            crashed = server.proc.poll() is not None and server.client is not None
            if crashed:
                problems.append(f"hands serve exited during the test (rc={server.proc.returncode}):\n{server.stderr()}")
            if server.proc.poll() is None:
                rc = server.stop()
                if rc != 0:
                    problems.append(f"hands serve exited with {rc} on SIGTERM:\n{server.stderr()}")
            if "panicked" in server.stderr():
                problems.append(f"hands serve panicked:\n{server.stderr()}")
            left = processes_with(server.marker)
            if left:
                problems.append(f"processes left behind by hands serve: {left}")
        for model in self.models:
            model.stop()
        assert not problems, "\n\n".join(problems)


@pytest.fixture
def setup(hands_bin: Path, project: Path, tmp_path: Path) -> Iterator[Setup]:
    s = Setup(hands_bin, project, tmp_path)
    try:
        yield s
    finally:
        s.teardown()


@pytest.fixture(params=["anthropic", "openai"])
def fmt(request) -> str:
    """Both wire formats, for scenarios where the shape of what goes back to the model matters."""
    return request.param
