"""Fixtures of the scale-out scenarios: one throwaway PostgreSQL server for the run (a database
per test), and `cluster`, which starts `hands serve` nodes on that database with the scripted
model of tests/agent and tears them down (checking for crashes, panics, leftover processes and
the database password in their logs)."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "e2e"))

from harness import SCRIPTED_MODEL, Hands, ScriptedModel, hands_binary, processes_with, toml_str  # noqa: E402
from pg import PASSWORD, Postgres, pg_bin  # noqa: E402


def _missing(msg: str) -> None:
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


@pytest.fixture(scope="session")
def server() -> Iterator[Postgres]:
    bin_dir = pg_bin()
    if bin_dir is None:
        _missing("PostgreSQL is not installed (/usr/lib/postgresql/*/bin): install the postgresql package")
    pg = Postgres(bin_dir)
    try:
        yield pg
    finally:
        pg.stop()


class Node(Hands):
    """`hands serve` on the shared PostgreSQL database, with `[cluster]` timings for tests."""

    def __init__(self, *args, url: str, cluster: str, token: str, **kw) -> None:
        super().__init__(*args, **kw)
        self.url = url
        self.token = token  # every node of a cluster takes the same token
        config = self.home / ".config" / "hands" / "config.toml"
        text = config.read_text()
        head, _, _ = text.partition("[store]")
        config.write_text(head + "[store]\nbackend = \"postgres\"\npool_size = 8\n\n[cluster]\n" + cluster)

    def env(self) -> dict[str, str]:
        env = super().env()
        env["HANDS_STORE_URL"] = self.url  # the password reaches hands only this way
        # Takeovers and lost leases are logged, for the post-mortem of a failed scenario.
        env["HANDS_LOG"] = os.environ.get("HANDS_SCALE_LOG", "warn,hands_agent::host=info")
        return env


class Cluster:
    def __init__(self, hands_bin: Path, project: Path, tmp: Path, server: Postgres) -> None:
        self.hands_bin = hands_bin
        self.project = project
        self.tmp = tmp
        self.pg = server
        self.db = server.create_database()
        self.token = f"scale-{uuid.uuid4().hex}"
        self.models: list[ScriptedModel] = []
        self.nodes: list[Node] = []

    def model(self, fmt: str, steps: list[dict]) -> ScriptedModel:
        model = ScriptedModel(fmt, steps, self.tmp / f"model-{len(self.models)}")
        self.models.append(model)
        return model

    def node(self, model: ScriptedModel | None, *, lease_ms: int = 2000, renew_ms: int = 400,
             sweep_ms: int = 400, extra: str = "", start: bool = True, approval: str = "auto") -> Node:
        index = len(self.nodes)
        home = self.tmp / f"node-{index}"
        home.mkdir()
        cluster = (f"node_id = \"node-{index}\"\nlease_ms = {lease_ms}\nrenew_ms = {renew_ms}\n"
                   f"sweep_ms = {sweep_ms}\ndrain_grace_ms = 2000\n{extra}")
        node = Node(self.hands_bin, home, self.project, model, url=self.pg.url(self.db), cluster=cluster,
                    token=self.token, approval=approval)
        node.name = f"node-{index}"
        self.nodes.append(node)
        return node.start() if start else node

    def sql(self, query: str) -> list[list[str]]:
        return self.pg.psql(self.db, query)

    def teardown(self) -> None:
        problems = []
        for node in self.nodes:
            if node.proc is None:
                continue
            if node.proc.poll() is None:
                rc = node.stop()
                if rc not in (0, -9):
                    problems.append(f"{node.name} exited with {rc} on SIGTERM:\n{node.stderr()}")
            log = node.log_path.read_text(errors="replace") if node.log_path.exists() else ""
            if "panicked" in log:
                problems.append(f"{node.name} panicked:\n{log[-3000:]}")
            if PASSWORD in log:
                problems.append(f"{node.name}'s log holds the database password")
            left = processes_with(node.marker)
            if left:
                problems.append(f"processes left behind by {node.name}: {left}")
        for model in self.models:
            model.stop()
        assert not problems, "\n\n".join(problems)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "hello.txt").write_text("hello world\n")
    (root / "src" / "main.rs").write_text("fn main() {}\n")
    return root


@pytest.fixture
def cluster(hands_bin: Path, project: Path, tmp_path: Path, server: Postgres) -> Iterator[Cluster]:
    c = Cluster(hands_bin, project, tmp_path, server)
    try:
        yield c
    finally:
        c.teardown()


__all__ = ["Cluster", "Node", "toml_str"]
