"""`hands serve` at the HTTP level, with a plain http.client: DNS-rebinding protection (Host and
Origin), bearer tokens, and hostile bodies that must get error answers without taking the server down."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import time

import pytest

from conftest import bearer_for, http_get, start_serve, stop_process

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}
BASE_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def post(port: int, body: bytes, headers: dict[str, str] | None = None, path: str = "/mcp", timeout: float = 15, auth: bool = True):
    """POST `body`; with `auth`, the server's bearer token is sent unless `headers` names one."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        auth_headers = bearer_for(port) if auth else {}
        conn.request("POST", path, body=body, headers={**BASE_HEADERS, **auth_headers, **(headers or {})})
        resp = conn.getresponse()
        headers = {k.lower(): v for k, v in resp.getheaders()}
        if "event-stream" not in headers.get("content-type", ""):
            return resp.status, headers, resp.read()
        # an SSE stream stays open: read until an event carries a response (a message with an id)
        data = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = resp.read1(1 << 16)
            except (TimeoutError, OSError):
                break
            if not chunk:
                break
            data += chunk
            if any("id" in m for m in messages(headers, data)):
                break
        return resp.status, headers, data
    finally:
        conn.close()


def messages(headers: dict[str, str], body: bytes) -> list[dict]:
    """The JSON-RPC messages in a JSON or SSE answer."""
    text = body.decode(errors="replace")
    if "event-stream" in headers.get("content-type", ""):
        out = []
        for line in text.splitlines():
            if line.startswith("data:") and line[5:].strip():
                try:
                    out.append(json.loads(line[5:].strip()))
                except ValueError:
                    pass
        return out
    if not text.strip():
        return []
    parsed = json.loads(text)
    return parsed if isinstance(parsed, list) else [parsed]


def assert_initializes(port: int, headers: dict[str, str] | None = None) -> None:
    status, hdrs, body = post(port, json.dumps(INIT).encode(), headers)
    assert status == 200, f"initialize answered {status}: {body[:300]!r}"
    msgs = messages(hdrs, body)
    assert any("result" in m and m["result"].get("protocolVersion") for m in msgs), msgs


def assert_healthy(srv) -> None:
    assert srv.alive(), f"hands serve died:\n{srv.stderr()}"
    status, _, _ = http_get(srv.port, "/healthz")
    assert status == 200
    assert_initializes(srv.port)


def assert_error_answer(status: int, hdrs: dict[str, str], body: bytes, what: str) -> None:
    if 400 <= status < 500:
        return
    assert status < 500, f"{what}: server error {status}: {body[:300]!r}"
    msgs = messages(hdrs, body)
    assert msgs and all("error" in m for m in msgs), f"{what}: expected 4xx or JSON-RPC errors, got {status} {msgs[:3]}"


def test_healthz(serve):
    status, _, _ = http_get(serve.port, "/healthz")
    assert status == 200


def test_localhost_origin_and_host_accepted(serve):
    assert_initializes(serve.port)
    assert_initializes(serve.port, {"Origin": f"http://127.0.0.1:{serve.port}"})
    assert_initializes(serve.port, {"Origin": f"http://localhost:{serve.port}", "Host": f"localhost:{serve.port}"})


@pytest.mark.parametrize("origin", ["http://evil.example", "https://attacker.test:8443", "null"])
def test_foreign_origin_is_403(serve, origin):
    status, _, body = post(serve.port, json.dumps(INIT).encode(), {"Origin": origin})
    assert status == 403, f"Origin {origin} got {status}: {body[:200]!r}"
    assert_healthy(serve)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", "localhost.attacker.test"])
def test_foreign_host_is_403(serve, host):
    h = host.format(port=serve.port)
    status, _, body = post(serve.port, json.dumps(INIT).encode(), {"Host": h})
    assert status == 403, f"Host {h} got {status}: {body[:200]!r}"
    # the GET stream and healthz-free paths are guarded too
    conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=5)
    try:
        conn.request("GET", "/mcp", headers={"Host": h, "Accept": "text/event-stream", **bearer_for(serve.port)})
        assert conn.getresponse().status == 403
    finally:
        conn.close()
    assert_healthy(serve)


@pytest.fixture
def token_serve(hands, root, tmp_path):
    token = secrets.token_urlsafe(24)
    srv = start_serve(hands, root, tmp_path / "serve-token.log", token=token)
    yield srv
    crashed = not srv.alive()
    stop_process(srv.proc)
    assert not crashed, srv.stderr()


@pytest.mark.parametrize("auth", [None, "Bearer wrong-token", "Basic dXNlcjpwYXNz", "Bearer "])
def test_token_required(token_serve, auth):
    headers = {"Authorization": auth} if auth is not None else {}
    status, hdrs, body = post(token_serve.port, json.dumps(INIT).encode(), headers, auth=False)
    assert status == 401, f"Authorization {auth!r} got {status}: {body[:200]!r}"
    assert "www-authenticate" in hdrs, "a 401 must carry WWW-Authenticate"
    assert hdrs["www-authenticate"].lower().startswith("bearer"), hdrs["www-authenticate"]


def test_token_accepted(token_serve):
    assert_initializes(token_serve.port, {"Authorization": f"Bearer {token_serve.bearer}"})
    # a token that merely starts with the right one is refused
    status, _, _ = post(token_serve.port, json.dumps(INIT).encode(), {"Authorization": f"Bearer {token_serve.bearer}x"})
    assert status == 401


def test_garbage_body_1mb(serve):
    body = os.urandom(1 << 20)
    try:
        status, hdrs, resp = post(serve.port, body)
    except (ConnectionResetError, BrokenPipeError):
        status = None  # refusing a too-large body by closing is acceptable; a crash is not
    if status is not None:
        assert_error_answer(status, hdrs, resp, "1 MB of garbage")
    assert_healthy(serve)


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVer',
        b"",
        b"[]",
        b"null",
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
        b'\xff\xfe{"jsonrpc":"2.0"}',
    ],
    ids=["truncated", "empty", "empty-batch", "null", "no-method", "wrong-version", "bad-utf8"],
)
def test_malformed_json(serve, body):
    status, hdrs, resp = post(serve.port, body)
    assert_error_answer(status, hdrs, resp, f"body {body[:40]!r}")
    assert_healthy(serve)


def test_batch_of_1000(serve):
    batch = [{"jsonrpc": "2.0", "id": i, "method": "tools/list", "params": {}} for i in range(1000)]
    status, hdrs, resp = post(serve.port, json.dumps(batch).encode(), timeout=60)
    assert_error_answer(status, hdrs, resp, "a batch of 1000 requests")
    assert_healthy(serve)


def test_wrong_content_type_and_method(serve):
    status, _, _ = post(serve.port, json.dumps(INIT).encode(), {"Content-Type": "text/plain"})
    assert 400 <= status < 500, f"text/plain body got {status}"
    conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=5)
    try:
        conn.request("PUT", "/mcp", body=b"{}", headers={**BASE_HEADERS, **bearer_for(serve.port)})
        assert 400 <= conn.getresponse().status < 500
    finally:
        conn.close()
    assert_healthy(serve)


def test_unknown_session_id(serve):
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}).encode()
    status, hdrs, resp = post(serve.port, body, {"Mcp-Session-Id": "not-a-session", "MCP-Protocol-Version": "2025-06-18"})
    assert_error_answer(status, hdrs, resp, "an unknown session id")
    assert_healthy(serve)
