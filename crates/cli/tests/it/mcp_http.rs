//! `hands serve` at the HTTP level, with a hand-rolled HTTP/1.1 client (so that every header and
//! body is exactly what the test says): Host and Origin validation (403), the bearer token (401
//! with `WWW-Authenticate`), hostile bodies that must not take the server down, and a client that
//! disconnects in the middle of a call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Serve {
    child: Child,
    port: u16,
    /// The bearer token: `--token`'s, or the one hands made in the state folder.
    token: String,
    /// Holds the project (`proj`) and hands' own folders (`state`, `data`).
    _tmp: tempfile::TempDir,
}

impl Drop for Serve {
    fn drop(&mut self) {
        lock_tokens().remove(&self.port);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bearer token of each running server, by port: [`request`] sends it unless told otherwise.
static TOKENS: std::sync::Mutex<BTreeMap<u16, String>> = std::sync::Mutex::new(BTreeMap::new());

fn lock_tokens() -> std::sync::MutexGuard<'static, BTreeMap<u16, String>> {
    TOKENS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn serve(extra: &[&str]) -> Serve {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    std::fs::create_dir(&root).unwrap();
    let state = tmp.path().join("state");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(&root)
        .args(extra)
        .env_remove("HANDS_SERVER__TOKEN")
        .env("HANDS_STATE_DIR", &state)
        .env("XDG_STATE_HOME", &state)
        .env("XDG_DATA_HOME", tmp.path().join("data"))
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
    let token = match extra.iter().position(|a| *a == "--token") {
        Some(i) => extra[i + 1].to_owned(),
        None => std::fs::read_to_string(state.join("server-token")).unwrap().trim().to_owned(),
    };
    lock_tokens().insert(port, token.clone());
    Serve { child, port, token, _tmp: tmp }
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

/// One request on a fresh connection, with the server's bearer token; `headers` replace the
/// defaults of the same name (an empty value drops the header: `("Authorization", "")` sends no
/// token).
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
    if let Some(token) = lock_tokens().get(&port) {
        all.push(("Authorization".into(), format!("Bearer {token}")));
    }
    for (k, v) in headers {
        all.retain(|(name, _)| !name.eq_ignore_ascii_case(k));
        if !v.is_empty() {
            all.push(((*k).into(), (*v).into()));
        }
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
        let headers = [("Authorization", auth.unwrap_or(""))];
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
         2025-06-18\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n\r\n{call}",
        server.port,
        server.token,
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

/// Run `args` as the user `nobody` (uid and gid 65534, no supplementary groups); `None` when
/// this test does not run as root (it cannot switch users then).
fn as_nobody(args: &[&str]) -> Option<std::process::Output> {
    if !std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
    {
        eprintln!("not root: the other-user check is skipped");
        return None;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(args)
        .output()
        .unwrap();
    Some(out)
}

/// A status code fetched by another user with Python's http.client (no token).
fn status_as_nobody(port: u16, method: &str, path: &str) -> Option<String> {
    let script = format!(
        "import http.client; c = http.client.HTTPConnection('127.0.0.1', {port}, timeout=10); \
         c.request('{method}', '{path}', body='{{}}', headers={{'Content-Type': \
         'application/json', 'Accept': 'application/json, text/event-stream'}}); \
         print(c.getresponse().status)"
    );
    let out = as_nobody(&["/usr/bin/python3", "-c", &script])?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn without_a_configured_token_one_is_made_private_and_required_and_kept() {
    let server = serve(&[]);
    let state = server._tmp.path().join("state");
    let file = state.join("server-token");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "the token file is the user's only");
    assert_eq!(mode(&state), 0o700, "and so is its folder");
    assert_eq!(server.token.len(), 64, "{}", server.token);
    for (method, path) in [("POST", "/mcp"), ("GET", "/v1/sessions"), ("POST", "/v1/sessions")] {
        let reply = request(server.port, method, path, &[("Authorization", "")], b"{}");
        assert_eq!(reply.status, 401, "{method} {path} without a token: {}", reply.body);
        if let Some(status) = status_as_nobody(server.port, method, path) {
            assert_eq!(status, "401", "{method} {path} as nobody");
        }
    }
    let reply = request(server.port, "GET", "/v1/sessions", &[], b"");
    assert_eq!(reply.status, 200, "with the token: {}", reply.body);
    assert_alive(&server);
    // Opened up to the file itself, only the file's own mode keeps another user out.
    let open = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(server._tmp.path(), open.clone()).unwrap();
    std::fs::set_permissions(&state, open).unwrap();
    if let Some(out) = as_nobody(&["cat", &file.display().to_string()]) {
        assert!(!out.status.success(), "nobody read the token file");
        assert!(!String::from_utf8_lossy(&out.stdout).contains(&server.token));
    }

    // Restarted on the same state folder, the same token still works.
    let token = server.token.clone();
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("hands"))
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(tmp.path())
        .env_remove("HANDS_SERVER__TOKEN")
        .env("HANDS_STATE_DIR", &state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = String::new();
    for _ in 0..3 {
        stderr.read_line(&mut lines).unwrap();
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(lines.contains(&file.display().to_string()), "stderr names the file: {lines}");
    assert!(lines.contains("Authorization: Bearer"), "and says how to send it: {lines}");
    assert!(!lines.contains(&token), "but never shows the token: {lines}");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token, "the file is kept");
    assert_eq!(mode(&state), 0o700, "a loosened state folder is tightened again");
    drop(server);
}

#[test]
fn a_second_host_or_origin_header_is_a_bad_request() {
    let server = serve(&[]);
    for extra in [
        "Host: 127.0.0.1\r\nHost: evil.example",
        "Host: 127.0.0.1\r\nOrigin: http://localhost\r\nOrigin: http://evil.example",
    ] {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let head = format!(
            "GET /v1/sessions HTTP/1.1\r\n{extra}\r\nAuthorization: Bearer {}\r\nConnection: \
             close\r\n\r\n",
            server.token
        );
        stream.write_all(head.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 400"), "{extra:?}: {answer}");
        assert!(answer.contains("more than one"), "{answer}");
    }
    assert_alive(&server);
}

/// Whether the server closes `stream` (EOF or reset) within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            // A 408 or any other answer before the close is fine; keep reading to the end.
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

#[test]
fn an_incomplete_request_head_or_an_idle_connection_is_closed_after_the_timeout() {
    let server = serve(&["-c", "server.header_timeout_ms=400"]);
    let started = Instant::now();
    let mut partial = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    partial.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ").unwrap();
    let mut idle = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    assert!(closed_within(&mut partial, Duration::from_secs(5)), "an incomplete head stayed open");
    assert!(closed_within(&mut idle, Duration::from_secs(5)), "an idle connection stayed open");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(300), "closed before the timeout: {took:?}");
    assert_alive(&server);
}

#[test]
fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let server = serve(&["-c", "server.max_connections=2", "-c", "server.header_timeout_ms=60000"]);
    let first = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let second = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    // The kernel still completes the handshake of a third, but hands does not serve it.
    let mut third = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    third.set_read_timeout(Some(Duration::from_millis(700))).unwrap();
    let mut buf = [0u8; 64];
    let early = third.read(&mut buf);
    assert!(
        matches!(&early, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "a third connection was served while two were open: {early:?}"
    );
    drop(first);
    third.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut answer = String::new();
    let _ = third.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "served once a slot is free: {answer}");
    drop(second);
}
