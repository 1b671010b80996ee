"""A type error hands' language server finds after an edit reaches the model through the real
clients: Claude Code and Codex each run the steps below over stdio, and the model's next request
after the breaking edit holds the error (file, line, TS code) in that edit's own result; the edit
that fixes it holds none.

typescript-language-server and TypeScript come from tests/lsp (npm ci in .ci/run) on the server's
PATH, as a user's installed ones would. `code.diagnostics_wait_ms` is raised for the test only: the
wait ends when the server has answered, so it costs nothing on a quick machine and keeps a loaded CI
machine from turning the error into the "will come with a later result" notice."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import client, missing
from task import readme_block, results_anthropic, results_responses
from test_claude_code import claude_env, run_claude
from test_codex import final_message, run_codex

REPO = Path(__file__).resolve().parents[2]
LSPBIN = REPO / "tests" / "lsp" / "node_modules" / ".bin"
FINAL = "Done: the type error is fixed."
BROKEN = 'add(1, "2")'


def ts_project(project: Path) -> None:
    (project / "package.json").write_text('{"name": "calc", "version": "1.0.0", "type": "module"}\n')
    (project / "tsconfig.json").write_text('{"compilerOptions": {"strict": true, "noEmit": true, "target": "ES2022"}}\n')
    (project / "src").mkdir()
    (project / "src" / "math.ts").write_text("export function add(a: number, b: number): number {\n  return a + b;\n}\n")
    (project / "src" / "main.ts").write_text('import { add } from "./math";\n\nexport const total = add(1, 2);\n')


def steps(tool_name, call_id) -> list[dict]:
    calls = [
        # Starts the server (the first touch of a TypeScript file) before the edits.
        ("diagnostics", {"path": "src"}),
        ("edit_file", {"path": "src/main.ts", "old_string": "add(1, 2)", "new_string": BROKEN}),
        ("edit_file", {"path": "src/main.ts", "old_string": BROKEN, "new_string": "add(1, 2)"}),
    ]
    out = [{"text": f"Step {n + 1}.", "tool_calls": [{"id": call_id(n), "name": tool_name(t), "input": a}]}
           for n, (t, a) in enumerate(calls)]
    return out + [{"text": FINAL}]


def check(requests: list, results, call_id, project: Path) -> None:
    seen: dict[str, str] = {}
    for body in requests:
        for cid, text in results(body).items():
            seen.setdefault(cid, text)
    broke, fixed = seen.get(call_id(1)), seen.get(call_id(2))
    assert broke is not None and fixed is not None, f"the edits' results never reached the model: {sorted(seen)}"
    # The error of the breaking edit, in its own result: where it is and what it is.
    assert "src/main.ts:3:" in broke and "[2345]" in broke, f"no type error in the breaking edit's result:\n{broke}"
    assert "not assignable" in broke, broke
    assert "1 error fixed, no errors now" in fixed, fixed
    assert "[2345]" not in fixed, f"the fixing edit still reports the error:\n{fixed}"
    assert (project / "src" / "main.ts").read_text().endswith("add(1, 2);\n")


def server_env() -> dict[str, str]:
    if not (LSPBIN / "typescript-language-server").is_file():
        missing(f"typescript-language-server is not installed at {LSPBIN}: npm ci in tests/lsp")
    return {"PATH": f"{LSPBIN}:{os.environ.get('PATH', '/usr/bin:/bin')}"}


ARGS_EXTRA = ["-c", "code.diagnostics_wait_ms=10000"]


def test_claude_code_sees_the_type_error(hands, project, model_server, client_env, run_client, refusing_proxy):
    client("claude")
    ts_project(project)
    name, cid = (lambda t: f"mcp__hands__{t}"), (lambda n: f"toolu_diag_{n:02d}")
    model = model_server("anthropic", steps(name, cid))
    config = json.loads(readme_block("claude-stdio").replace("/path/to/project", str(project)))
    server = config["mcpServers"]["hands"]
    server["command"] = str(hands)
    server["args"] += ARGS_EXTRA
    server["env"] = server_env()
    run = run_claude(run_client, project, config, claude_env(client_env, model.base))
    assert run.rc == 0, run.report()
    assert FINAL in run.stdout, run.report()
    requests = [r for r in model.requests() if isinstance(r, dict) and "messages" in r]
    check(requests, results_anthropic, cid, project)
    assert not refusing_proxy.attempts, refusing_proxy.attempts


def test_codex_sees_the_type_error(hands, project, home, model_server, client_env, run_client, refusing_proxy):
    client("codex")
    ts_project(project)
    name, cid = (lambda t: f"mcp__hands__{t}"), (lambda n: f"call_diag_{n:02d}")
    model = model_server("responses", steps(name, cid))
    block = readme_block("codex-stdio").replace("/path/to/project", str(project))
    block = block.replace('command = "hands"', f"command = {json.dumps(str(hands))}")
    args = ["mcp", "--root", str(project), *ARGS_EXTRA]
    assert 'args = ["mcp", "--root", ' in block, block
    block = "\n".join(f"args = {json.dumps(args)}" if line.startswith("args = ") else line for line in block.splitlines())
    block += "\n\n[mcp_servers.hands.env]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in server_env().items())
    run = run_codex(run_client, project, home, model, block, client_env)
    assert run.rc == 0, run.report()
    assert final_message(run.stdout) == FINAL, run.report()
    requests = [r for r in model.requests() if isinstance(r, dict) and "input" in r]
    check(requests, results_responses, cid, project)
    assert not refusing_proxy.attempts, refusing_proxy.attempts

