#!/usr/bin/env python3
"""A stdio MCP server's tap: starts the server given after `--`, passes every line between the
client (our stdin/stdout) and the server, and logs each JSON-RPC message with its direction and
the time it passed, one JSON per line. With `--drop-progress`, the server's
`notifications/progress` are logged but not passed on: the client then sees a call that says
nothing until its answer (the control of test_opencode.py's long call).

    python3 mcp_tap.py --log tap.jsonl [--drop-progress] -- hands mcp --root /path/to/project

Standard library only; MCP's stdio transport is one JSON message per line."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from typing import IO


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="append every message here, one JSON per line")
    parser.add_argument("--drop-progress", action="store_true", help="do not pass the server's notifications/progress on")
    parser.add_argument("server", nargs=argparse.REMAINDER, help="-- then the server's command")
    args = parser.parse_args()
    server = args.server[1:] if args.server[:1] == ["--"] else args.server
    if not server:
        parser.error("no server command after --")
    log = open(args.log, "a", encoding="utf-8")
    lock = threading.Lock()
    proc = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def record(direction: str, line: bytes, passed: bool) -> None:
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            message = {"unparsable": line.decode("utf-8", "replace")}
        with lock:
            log.write(json.dumps({"t": time.time(), "dir": direction, "passed": passed, "msg": message}) + "\n")
            log.flush()

    def pump(src: IO[bytes], dst: IO[bytes], direction: str) -> None:
        for line in iter(src.readline, b""):
            dropped = args.drop_progress and direction == "server" and b'"notifications/progress"' in line
            record(direction, line, not dropped)
            if dropped:
                continue
            try:
                dst.write(line)
                dst.flush()
            except (BrokenPipeError, ValueError):
                break
        try:  # the other side's EOF is this side's EOF (the client closing stdin stops the server)
            dst.close()
        except (BrokenPipeError, OSError):
            pass

    assert proc.stdin is not None and proc.stdout is not None  # both piped above
    to_server = threading.Thread(target=pump, args=(sys.stdin.buffer, proc.stdin, "client"), daemon=True)
    to_server.start()
    pump(proc.stdout, sys.stdout.buffer, "server")
    return proc.wait()


if __name__ == "__main__":
    sys.exit(main())
