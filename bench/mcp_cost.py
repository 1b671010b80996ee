#!/usr/bin/env python3
"""What one MCP read_file round trip costs the server, counted rather than timed: system calls,
context switches and CPU time per call, by `strace -c -f` and `perf stat` around the server while a
separate client (this script, no MCP library) makes N sequential `tools/call`s over stdio. The
start-up (and shut-down) is taken out by running the same server with no calls and subtracting.
Unlike wall-clock medians, these counts barely move with the machine's load or the placement of
client and server, so they show per-call work that a busy or fresh machine would magnify.

Usage: python3 bench/mcp_cost.py N NAME TOOL PATH_ARG -- SERVER_COMMAND...
(`bash bench/mcp.sh` runs it for hands and the rmcp floor after the timed table.)
"""

import json
import os
import re
import subprocess
import sys
import tempfile


def drive(command, tool, path, n):
    """Start `command`, initialize, make n calls, close stdin, wait for it to exit."""
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)

    def ask(message):
        child.stdin.write((json.dumps(message) + "\n").encode())
        child.stdin.flush()
        while True:
            line = child.stdout.readline()
            if not line:
                sys.exit(f"{command[0]}: server closed its output")
            if b'"id"' in line:
                if b'"error"' in line:
                    sys.exit(f"{command[0]}: {line!r}")
                return

    ask({"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "cost", "version": "1"}}})
    child.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    for i in range(1, n + 1):
        ask({"jsonrpc": "2.0", "id": i, "method": "tools/call",
             "params": {"name": tool, "arguments": {"path": path}}})
    child.stdin.close()
    child.wait()


def strace_counts(command, tool, path, n):
    with tempfile.NamedTemporaryFile(suffix=".strace") as out:
        drive(["strace", "-f", "-c", "-o", out.name, *command], tool, path, n)
        text = open(out.name).read()
    counts = {}
    for line in text.splitlines():
        parts = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
            counts[parts[-1]] = int(parts[3])
    return counts


def perf_counts(command, tool, path, n):
    with tempfile.NamedTemporaryFile(suffix=".perf") as out:
        drive(["perf", "stat", "-x,", "-o", out.name,
               "-e", "task-clock,context-switches,cpu-migrations,page-faults", *command],
              tool, path, n)
        text = open(out.name).read()
    values = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and re.match(r"^[\d.]+$", fields[0]):
            values[fields[2]] = float(fields[0])
    return values


def main():
    args = sys.argv[1:]
    split = args.index("--")
    n, name, tool, path = int(args[0]), args[1], args[2], args[3]
    command = args[split + 1:]
    base, calls = strace_counts(command, tool, path, 0), strace_counts(command, tool, path, n)
    per_call = {k: (calls.get(k, 0) - base.get(k, 0)) / n for k in set(base) | set(calls)}
    per_call = {k: v for k, v in per_call.items() if v >= 0.05}
    total = sum(per_call.values())
    pbase, pcalls = perf_counts(command, tool, path, 0), perf_counts(command, tool, path, n)
    delta = {k: (pcalls.get(k, 0) - pbase.get(k, 0)) / n for k in pcalls}
    cpu_us = delta.get("task-clock", 0) * 1000  # perf reports task-clock in ms
    detail = " ".join(f"{k}={v:.2f}" for k, v in sorted(per_call.items(), key=lambda kv: -kv[1]))
    print(f"{name}\tsyscalls_per_call={total:.2f}\tcpu_us_per_call={cpu_us:.1f}"
          f"\tctx_switches_per_call={delta.get('context-switches', 0):.2f}"
          f"\tstartup_syscalls={sum(base.values())}\t{detail}")


if __name__ == "__main__":
    main()
