"""A throwaway PostgreSQL server for the scale-out scenarios: initdb and pg_ctl run as the
`postgres` user (the tests run as root) in a temp folder, listening on 127.0.0.1 and a free port,
password authentication for the role `hands_scale`. Each test gets a database of its own;
`psql` reads the stored truth (events, turns) that the tests compare against."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

# A canary: it must never appear in a log, an event or an API answer.
PASSWORD = "CANARYscalepw-3f9a1c"


def pg_bin() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        path = Path(candidate)
        if (path / "initdb").exists() and (path / "pg_ctl").exists():
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="hands-scale-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        pwfile = self.dir / "pw"
        pwfile.write_text(PASSWORD + "\n")
        subprocess.run(["chown", "-R", "postgres:postgres", str(self.dir)], check=True)
        self._as_postgres("initdb", "-D", str(self.data), "-U", "hands_scale", "--auth=scram-sha-256",
                          "--no-sync", "-E", "UTF8", f"--pwfile={pwfile}")
        # Room for three nodes' pools, the listeners and the tests' psql.
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.dir} -c fsync=off "
                   "-c synchronous_commit=off -c max_connections=300")
        self._as_postgres("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "log"), "-w", "-t", "60",
                          "-o", options, "start")

    def _as_postgres(self, program: str, *args: str) -> None:
        out = subprocess.run(["runuser", "-u", "postgres", "--", str(self.bin / program), *args],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"{program} failed: {out.stderr}\n{self.log()}"

    def log(self) -> str:
        try:
            return (self.dir / "log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def url(self, database: str) -> str:
        return f"postgresql://hands_scale:{PASSWORD}@127.0.0.1:{self.port}/{database}?sslmode=disable"

    def psql(self, database: str, sql: str) -> list[list[str]]:
        """Rows of `sql` (tab-separated fields, no header)."""
        env = dict(os.environ, PGPASSWORD=PASSWORD)
        out = subprocess.run(
            [str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "hands_scale",
             "-d", database, "-At", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-c", sql],
            capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0, f"psql: {out.stderr}"
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def create_database(self) -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        self.psql("postgres", f"CREATE DATABASE {name}")
        return name

    def stop(self) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", str(self.bin / "pg_ctl"), "-D", str(self.data),
                        "-m", "immediate", "-w", "-t", "20", "stop"], capture_output=True, timeout=60)
        shutil.rmtree(self.dir, ignore_errors=True)
