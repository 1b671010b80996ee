//! `hands serve` at the HTTP level, with a hand-rolled HTTP/1.1 client (so that every header and
//! body is exactly what the test says): Host and Origin validation (403), the bearer token (401
//! with `WWW-Authenticate`), hostile bodies that must not take the server down, and a client that
//! disconnects in the middle of a call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Serve {
    child: Child,
    port: u16,
    _root: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(extra: &[&str]) -> Serve {
    let root = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(root.path())
        .args(extra)
        .env_remove("HANDS_SERVER__TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("http://127.0.0.1:").nth(1) {
                let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let _ = tx.send(port.parse::<u16>().unwrap());
            }
        }
    });
    let port = rx.recv_timeout(Duration::from_secs(20)).expect("hands serve did not start");
    Serve { child, port, _root: root }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// One request on a fresh connection; `headers` replace the defaults of the same name.
fn request(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let host = format!("127.0.0.1:{port}");
    let mut all: Vec<(String, String)> = vec![
        ("Host".into(), host),
        ("Content-Type".into(), "application/json".into()),
        ("Accept".into(), "application/json, text/event-stream".into()),
        ("Connection".into(), "close".into()),
    ];
    for (k, v) in headers {
        all.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        all.push(((*k).into(), (*v).into()));
    }
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in &all {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer (and close) before reading a large body.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok());
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply { status: status.unwrap_or(0), headers, body: body.to_owned() }
}

fn initialize() -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "http-test", "version": "1"}}})
    .to_string()
    .into_bytes()
}

fn post(port: u16, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    request(port, "POST", "/mcp", headers, body)
}

fn assert_alive(server: &Serve) {
    let health = request(server.port, "GET", "/healthz", &[], b"");
    assert_eq!(health.status, 200, "healthz after the abuse: {}", health.body);
    let init = post(server.port, &[], &initialize());
    assert_eq!(init.status, 200, "{}", init.body);
    assert!(init.body.contains("\"serverInfo\""), "{}", init.body);
}

#[test]
fn healthz_and_a_loopback_initialize_work() {
    let server = serve(&[]);
    assert_alive(&server);
    let with_origin = post(server.port, &[("Origin", "http://localhost:5173")], &initialize());
    assert_eq!(with_origin.status, 200, "a loopback Origin is fine: {}", with_origin.body);
    let localhost = post(server.port, &[("Host", "localhost")], &initialize());
    assert_eq!(localhost.status, 200);
    let v6 = post(server.port, &[("Host", "[::1]:7777")], &initialize());
    assert_eq!(v6.status, 200);
}

#[test]
fn a_foreign_origin_or_host_is_forbidden() {
    let server = serve(&[]);
    for origin in ["http://evil.example", "null", "http://localhost.evil.example"] {
        let reply = post(server.port, &[("Origin", origin)], &initialize());
        assert_eq!(reply.status, 403, "Origin {origin}: {}", reply.body);
    }
    for host in ["evil.example", "evil.example:80", "127.0.0.1.nip.io"] {
        let reply = post(server.port, &[("Host", host)], &initialize());
        assert_eq!(reply.status, 403, "Host {host}: {}", reply.body);
    }
    let health = request(server.port, "GET", "/healthz", &[("Host", "evil.example")], b"");
    assert_eq!(health.status, 403, "DNS rebinding is refused on every route");
}

#[test]
fn allow_lists_come_from_the_settings() {
    let server = serve(&[
        "-c",
        "server.allowed_hosts=[\"hands.internal\"]",
        "-c",
        "server.allowed_origins=[\"https://app.example\"]",
    ]);
    let reply = post(
        server.port,
        &[("Host", "hands.internal:7777"), ("Origin", "https://app.example")],
        &initialize(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let reply = post(server.port, &[("Origin", "https://other.example")], &initialize());
    assert_eq!(reply.status, 403);
}

#[test]
fn a_token_is_required_when_configured() {
    let server = serve(&["--token", "s3cret"]);
    for auth in [None, Some("Bearer wrong"), Some("Basic czNjcmV0"), Some("Bearer ")] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", *a)).collect();
        let reply = post(server.port, &headers, &initialize());
        assert_eq!(reply.status, 401, "{auth:?}: {}", reply.body);
        assert_eq!(reply.header("WWW-Authenticate"), Some("Bearer"), "{auth:?}");
    }
    let reply = post(server.port, &[("Authorization", "Bearer s3cret")], &initialize());
    assert_eq!(reply.status, 200, "{}", reply.body);
    let health = request(server.port, "GET", "/healthz", &[], b"");
    assert_eq!(health.status, 200, "healthz needs no token");
}

#[test]
fn the_token_may_come_from_the_environment() {
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["serve", "--listen", "0.0.0.0:0", "--root"])
        .arg(root.path())
        .env_remove("HANDS_SERVER__TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success(), "a non-loopback listen address without a token must refuse");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("token"), "{stderr}");

    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["serve", "--listen", "0.0.0.0:0", "--root"])
        .arg(root.path())
        .env("HANDS_SERVER__TOKEN", "from-env")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("serving MCP"), "with a token from the environment it starts: {line}");
}

#[test]
fn hostile_bodies_get_errors_and_the_server_goes_on() {
    let server = serve(&[]);
    let garbage: Vec<u8> = (0..1_048_576u32).map(|i| (i % 251) as u8).collect();
    let reply = post(server.port, &[], &garbage);
    assert!((400..500).contains(&reply.status), "1 MB of garbage: {} {}", reply.status, reply.body);

    let truncated = &initialize()[..40];
    let reply = post(server.port, &[], truncated);
    assert!(
        (400..500).contains(&reply.status) || reply.body.contains("\"error\""),
        "truncated JSON: {} {}",
        reply.status,
        reply.body
    );

    let batch: Vec<Value> =
        (0..1000).map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"})).collect();
    let reply = post(server.port, &[], json!(batch).to_string().as_bytes());
    assert!(
        (400..500).contains(&reply.status) || reply.body.contains("\"error\""),
        "a batch of 1000: {} {}",
        reply.status,
        &reply.body[..reply.body.len().min(300)]
    );

    let huge = vec![b' '; 8 * 1024 * 1024];
    let reply = post(server.port, &[], &huge);
    assert!((400..500).contains(&reply.status) || reply.status == 0, "8 MB: {}", reply.status);

    let reply = post(server.port, &[("Content-Type", "text/plain")], &initialize());
    assert!((400..500).contains(&reply.status), "wrong content type: {}", reply.status);
    assert_alive(&server);
}

/// Pids of live processes of a session of hands `pid`.
fn session_processes(pid: u32) -> Vec<u32> {
    common::live_with_env(&format!("HANDS_SESSION=mcp-{pid}-"))
}

#[test]
fn ending_the_mcp_session_stops_its_processes() {
    let server = serve(&[]);
    let init = post(server.port, &[], &initialize());
    let session = init.header("Mcp-Session-Id").expect("a session id").to_owned();
    let with_session =
        [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let reply = post(server.port, &with_session, note.as_bytes());
    assert!(reply.status < 300, "{} {}", reply.status, reply.body);
    let daemon = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "spawn_process", "arguments": {"command": "sleep 300", "type": "daemon"}}});
    let reply = post(server.port, &with_session, daemon.to_string().as_bytes());
    assert!(reply.body.contains("\"result\""), "{}", reply.body);
    let pid = server.child.id();
    assert!(!session_processes(pid).is_empty(), "the daemon is not running");

    let reply = request(server.port, "DELETE", "/mcp", &with_session, b"");
    assert!(reply.status < 300, "DELETE: {} {}", reply.status, reply.body);
    let started = Instant::now();
    while !session_processes(pid).is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(session_processes(pid).is_empty(), "left running: {:?}", session_processes(pid));
}

#[test]
fn a_client_that_disconnects_cancels_its_call() {
    let server = serve(&[]);
    let init = post(server.port, &[], &initialize());
    let session = init.header("Mcp-Session-Id").expect("a session id").to_owned();
    let with_session =
        [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    post(server.port, &with_session, note.as_bytes());

    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "bash", "arguments": {"command": "sleep 140"}}})
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nAccept: \
         application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: \
         2025-06-18\r\nContent-Length: {}\r\n\r\n{call}",
        server.port,
        call.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let pid = server.child.id();
    let started = Instant::now();
    while session_processes(pid).is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!session_processes(pid).is_empty(), "the call's process never started");
    drop(stream);
    let started = Instant::now();
    while !session_processes(pid).is_empty() && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(session_processes(pid).is_empty(), "left running: {:?}", session_processes(pid));
    assert_alive(&server);
}
