"""What any MCP client sees of hands on the wire, below the clients' own tests:

- over Streamable HTTP, a client of protocol 2025-06-18 gets no SSE "priming" event (an event id
  with empty data, defined by 2025-11-25): every event's data is a JSON-RPC message (Gemini CLI
  parses each one as JSON and dropped hands on the empty one);
- over stdio, the probes clients send for capabilities hands does not offer (`resources/list`,
  `resources/templates/list`, `prompts/list`) get empty lists and leave stderr empty, and what
  hands does log on a captured stderr carries no ANSI colour.
"""

from __future__ import annotations

import http.client
import json
import subprocess
from pathlib import Path

from conftest import Serve

OLD_PROTOCOL = "2025-06-18"


def sse_events(raw: bytes) -> list[dict]:
    """Split an SSE body into events (`{"id":..., "data":..., "retry":...}`), comments dropped."""
    events = []
    for block in raw.decode().replace("\r\n", "\n").split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            if not line or line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            fields[name] = fields[name] + "\n" + value if name == "data" and name in fields else value
        if fields:
            events.append(fields)
    return events


class McpHttp:
    def __init__(self, serve: Serve) -> None:
        self.serve = serve
        self.session: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {
            "Authorization": f"Bearer {self.serve.token}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": OLD_PROTOCOL,
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        return headers

    def post(self, message: dict) -> tuple[int, str, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.serve.port, timeout=30)
        try:
            conn.request("POST", "/mcp", json.dumps(message), self.headers())
            response = conn.getresponse()
            self.session = response.getheader("mcp-session-id") or self.session
            return response.status, response.getheader("content-type", ""), response.read()
        finally:
            conn.close()


def assert_only_messages(raw: bytes, what: str) -> list[dict]:
    events = sse_events(raw)
    assert events, f"{what}: no SSE event in {raw!r}"
    messages = []
    for event in events:
        data = event.get("data", "")
        assert data.strip(), f"{what}: an SSE event without data (a priming event) reached a {OLD_PROTOCOL} client: {event}"
        messages.append(json.loads(data))
    return messages


def test_http_streams_to_a_2025_06_18_client_carry_only_messages(project: Path, hands_serve) -> None:
    serve = hands_serve(project)
    mcp = McpHttp(serve)
    init = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": OLD_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "wire-test", "version": "0"}},
    }
    status, kind, raw = mcp.post(init)
    assert status == 200 and kind.startswith("text/event-stream"), (status, kind, raw)
    [answer] = assert_only_messages(raw, "initialize")
    assert answer["result"]["protocolVersion"] == OLD_PROTOCOL
    assert mcp.session, "no Mcp-Session-Id"

    status, _, _ = mcp.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status == 202

    status, _, raw = mcp.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert status == 200
    assert any(t["name"] == "bash" for t in assert_only_messages(raw, "tools/list")[-1]["result"]["tools"])

    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "echo wire-ok"}}}
    status, _, raw = mcp.post(call)
    assert status == 200
    assert "wire-ok" in json.dumps(assert_only_messages(raw, "tools/call")[-1]["result"])

    # The standalone GET stream: nothing until there is something to say (its keep-alive is a
    # comment, 15 s away), where the priming event used to come at once.
    conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=5)
    try:
        headers = {k: v for k, v in mcp.headers().items() if k != "Content-Type"}
        conn.request("GET", "/mcp", headers={**headers, "Accept": "text/event-stream"})
        response = conn.getresponse()
        assert response.status == 200, response.status
        assert conn.sock is not None
        conn.sock.settimeout(1.5)
        try:
            early = response.read1(4096)
        except TimeoutError:
            early = b""
    finally:
        conn.close()
    assert b"data:" not in early and b"retry:" not in early, f"the GET stream sent {early!r}"
    serve.assert_quiet()


def rpc(proc: subprocess.Popen, message: dict) -> dict | None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    while True:
        line = proc.stdout.readline()
        assert line, "hands mcp closed stdout"
        reply = json.loads(line)
        if reply.get("id") == message["id"]:
            return reply


def test_probes_are_answered_and_stderr_stays_quiet_and_plain(hands: Path, project: Path, tmp_path: Path) -> None:
    stderr = tmp_path / "mcp.stderr"
    with stderr.open("w") as err:
        proc = subprocess.Popen(
            [str(hands), "mcp", "--root", str(project)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
        )
    try:
        init = {"protocolVersion": OLD_PROTOCOL, "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}
        assert rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})["result"]
        rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        probes = {"resources/list": "resources", "resources/templates/list": "resourceTemplates", "prompts/list": "prompts"}
        for n, (method, key) in enumerate(probes.items(), start=2):
            reply = rpc(proc, {"jsonrpc": "2.0", "id": n, "method": method})
            assert reply.get("result") == {key: []}, f"{method}: {reply}"
        assert rpc(proc, {"jsonrpc": "2.0", "id": 9, "method": "tools/list"})["result"]["tools"]
        assert stderr.read_text() == "", f"probes logged: {stderr.read_text()!r}"

        # A real client error is still logged, as plain text on a captured stderr.
        reply = rpc(proc, {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}})
        assert "no_such_tool" in reply["error"]["message"]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=20)
    logged = stderr.read_bytes()
    assert b"WARN" in logged, f"the failed call was not logged: {logged!r}"
    assert b"\x1b" not in logged, f"ANSI escapes on a captured stderr: {logged!r}"
