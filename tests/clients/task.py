"""The task every client runs through the scripted model, and how to check that it happened.

The model asks for four hands tools in turn — write_file, read_file, bash, edit_file — then answers.
Each tool result must reach the model's next request as the model would need it: the written path,
the file's content, bash's output (a marker the command computes, so it is in the output and not in
the command), the edit's diff. `results_<format>` pull the tool results out of a request body in
each wire format; `check_task` asserts all of it and the files on disk.

The client snippets are read from docs/guide/mcp-clients.md by `readme_block` (each follows an HTML
comment `<!-- client-suite: NAME -->`), so the suite runs them as written; the README's copies of
the shortest ones must equal these (crates/cli/tests/it/readme.rs)."""

from __future__ import annotations

import json
import re
import shlex
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
# The hands tools the task calls, in order.
TOOLS = ("write_file", "read_file", "bash", "edit_file")
FINAL_ANSWER = "Done: notes/plan.txt is written, checked and edited."


@dataclass
class Task:
    """One run's steps and what each tool result must contain."""

    marker: str
    steps: list[dict]
    # call id -> (tool, substrings its result must show the model)
    expect: dict[str, tuple[str, list[str]]]


def make_task(tool_name: Callable[[str], str], call_id: Callable[[int], str]) -> Task:
    """The steps with tools named by `tool_name` (e.g. `mcp__hands__bash`) and ids by `call_id`."""
    marker = uuid.uuid4().hex[:12]
    calls = [
        ("write_file", {"path": "notes/plan.txt", "content": "first line\nsecond line\n"}, ["notes/plan.txt"]),
        ("read_file", {"path": "notes/plan.txt"}, ["first line", "second line"]),
        # The output holds `marker-42-<hex>`; the command holds `$((6*7))` instead of 42.
        ("bash", {"command": f"cat notes/plan.txt && echo marker-$((6*7))-{marker}"}, ["first line", f"marker-42-{marker}"]),
        ("edit_file", {"path": "notes/plan.txt", "old_string": "second line", "new_string": "second line, edited"},
         ["-second line", "+second line, edited"]),
    ]
    assert tuple(tool for tool, _, _ in calls) == TOOLS
    steps, expect = [], {}
    for n, (tool, args, wanted) in enumerate(calls):
        cid = call_id(n)
        steps.append({"text": f"Step {n + 1}: {tool}.", "tool_calls": [{"id": cid, "name": tool_name(tool), "input": args}]})
        expect[cid] = (tool, wanted)
    steps.append({"text": FINAL_ANSWER})
    return Task(marker, steps, expect)


def text_of(content: Any) -> str:
    """The text of a tool result's content: a string, or a list of text blocks / parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(c.get("text", c.get("content", ""))) if isinstance(c, dict) else str(c) for c in content)
    return json.dumps(content)


def results_anthropic(body: Any) -> dict[str, str]:
    """tool_use_id -> text of every `tool_result` block in a Messages request."""
    out = {}
    for message in body.get("messages", []) if isinstance(body, dict) else []:
        for block in message.get("content", []) if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out[block["tool_use_id"]] = text_of(block.get("content", ""))
    return out


def results_responses(body: Any) -> dict[str, str]:
    """call_id -> text of every `function_call_output` item in a Responses request."""
    out = {}
    for item in body.get("input", []) if isinstance(body, dict) else []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            out[item["call_id"]] = text_of(item.get("output", ""))
    return out


def results_chat(body: Any) -> dict[str, str]:
    """tool_call_id -> text of every `tool` message in a Chat Completions request."""
    out = {}
    for message in body.get("messages", []) if isinstance(body, dict) else []:
        if isinstance(message, dict) and message.get("role") == "tool":
            out[message.get("tool_call_id", "")] = text_of(message.get("content", ""))
    return out


def results_gemini(body: Any) -> dict[str, str]:
    """name -> the tool's text of every `functionResponse` part in a generateContent request (Gemini
    CLI sends `{"name", "response": {"output": <text>}}`; other shapes are kept as JSON)."""
    out = {}
    for content in body.get("contents", []) if isinstance(body, dict) else []:
        for part in content.get("parts", []) if isinstance(content, dict) else []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                shown = response.get("response", {})
                output = shown.get("output") if isinstance(shown, dict) else None
                out[response.get("name", "")] = output if isinstance(output, str) else json.dumps(shown)
    return out


def check_task(task: Task, requests: list, results: Callable[[Any], dict[str, str]], project: Path) -> None:
    """Every tool result reached a later request to the model with what it must say; the file on
    disk is what the four calls make of it."""
    assert requests, "the model got no request"
    seen: dict[str, str] = {}
    for body in requests:
        for cid, text in results(body).items():
            seen.setdefault(cid, text)
    problems = []
    for cid, (tool, wanted) in task.expect.items():
        if cid not in seen:
            problems.append(f"{tool} ({cid}): its result never reached the model")
            continue
        lost = [w for w in wanted if w not in seen[cid]]
        if lost:
            problems.append(f"{tool} ({cid}): the model never saw {lost}; it got:\n    {seen[cid][:600]!r}")
    assert not problems, "tool results the model did not get in full:\n  " + "\n  ".join(problems)
    plan = project / "notes" / "plan.txt"
    assert plan.is_file(), f"write_file did not create {plan}"
    assert plan.read_text() == "first line\nsecond line, edited\n"


CLIENT_GUIDE = "docs/guide/mcp-clients.md"


def readme_block(name: str) -> str:
    """The fenced code block after `<!-- client-suite: NAME -->` in docs/guide/mcp-clients.md."""
    text = (REPO / CLIENT_GUIDE).read_text(encoding="utf-8")
    m = re.search(rf"<!-- client-suite: {re.escape(name)} -->\s*```[^\n]*\n(.*?)```", text, re.S)
    assert m, f"{CLIENT_GUIDE} has no code block marked <!-- client-suite: {name} -->"
    return m.group(1)


def readme_serve(hands_serve: Callable, project: Path) -> Any:
    """`hands serve` started with the guide's `hands-serve` block, run as written (on a free port)."""
    block = readme_block("hands-serve")
    assert block.strip().splitlines()[-1].startswith("hands serve"), "the hands-serve block should end with `hands serve`"
    serve = hands_serve(project, block.replace("/path/to/project", shlex.quote(str(project))))
    # The token is required, so a client that got through sent it.
    assert serve.status_without_token() == 401, "hands serve answers /mcp without its bearer token"
    return serve
