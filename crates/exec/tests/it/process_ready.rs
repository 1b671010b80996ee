#![allow(clippy::unwrap_used, clippy::expect_used)]
//! spawn_process daemons: ready by port, by printed URL, by ready_pattern; an early exit is an
//! error with the tail; no sign of readiness is "running, not confirmed".

use crate::process_support;

use std::time::Duration;

use process_support::{Env, free_port, node};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_silent_server_is_ready_by_its_listening_port() {
    let env = Env::new();
    let port = free_port();
    // Silenced (python buffers stdout into a pipe anyway, unless PYTHONUNBUFFERED is set), so
    // only the port can tell.
    let command = format!("python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1");
    let (text, s) = env.ok("spawn_process", json!({"command": command, "type": "daemon"})).await;
    assert_eq!(s["ready"], "port", "{text}");
    assert_eq!(s["port"], port, "{text}");
    assert_eq!(s["status"], "running");
    assert_eq!(s["type"], "daemon");
    assert!(text.contains(&format!("on port {port}")), "{text}");
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("it really listens");
    let log = s["log"].as_str().expect("a log path");
    assert!(env.tmp.path().join(log).exists(), "log {log} exists");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_prints_its_url_is_ready_by_the_url() {
    let Some(node) = node() else { return };
    let env = Env::new();
    let port = free_port();
    // Prints the URL (coloured, on 0.0.0.0) a moment before it listens: only the URL can tell.
    let script = format!(
        "console.log('  \\x1b[32mLocal:\\x1b[0m http://0.0.0.0:\\x1b[1m{port}\\x1b[22m/'); \
         setTimeout(() => require('http').createServer((q, s) => s.end('hi')).listen({port}, '127.0.0.1'), 1500);"
    );
    let command = format!("{node} -e \"{script}\"");
    let (text, s) =
        env.ok("spawn_process", json!({"command": command, "type": "daemon", "name": "web"})).await;
    assert_eq!(s["ready"], "url", "{text}");
    assert_eq!(s["url"], format!("http://localhost:{port}/"), "0.0.0.0 is reported as localhost");
    assert_eq!(s["port"], port);
    assert_eq!(s["name"], "web");
    assert!(s["first_output"].as_str().unwrap().contains("Local:"), "{s}");
    assert!(!s["first_output"].as_str().unwrap().contains('\x1b'), "colours stripped");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_daemon_that_exits_before_it_is_ready_is_an_error_with_its_tail() {
    let env = Env::new();
    let command =
        "echo starting; echo 'Error: EADDRINUSE: address already in use :::3000' >&2; exit 3";
    let message = env.err("spawn_process", json!({"command": command, "type": "daemon"})).await;
    assert!(message.contains("exited with code 3 before"), "{message}");
    assert!(message.contains("EADDRINUSE"), "{message}");
    assert!(message.contains("starting"), "{message}");
    // It is still listed, as exited.
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"][0]["status"], "exited");
    assert_eq!(list["processes"][0]["exit_code"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn ready_pattern_waits_for_its_line() {
    let env = Env::new();
    let command = "echo booting; sleep 0.5; printf '\\033[32mServer ready in 42 ms\\033[0m\\n'; exec sleep 30";
    let started = std::time::Instant::now();
    let (text, s) = env
        .ok(
            "spawn_process",
            json!({"command": command, "type": "daemon", "ready_pattern": r"ready in \d+ ms"}),
        )
        .await;
    assert!(started.elapsed() >= Duration::from_millis(450), "waited for the line");
    assert_eq!(s["ready"], "pattern", "{text}");
    assert!(text.contains("matched \"Server ready in 42 ms\""), "{text}");
    assert!(s["first_output"].as_str().unwrap().contains("booting"));
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn no_sign_of_readiness_is_running_but_not_confirmed() {
    let env = Env::with(|c| c.processes.ready_timeout_ms = 1_000);
    let (text, s) = env
        .ok("spawn_process", json!({"command": "echo worker up; exec sleep 30", "type": "daemon"}))
        .await;
    assert_eq!(s["ready"], "not-confirmed", "{text}");
    assert_eq!(s["status"], "running");
    assert!(text.contains("Not confirmed ready after 1.0s"), "{text}");
    assert!(text.contains("worker up"), "{text}");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_arguments_are_refused_before_anything_starts() {
    let env = Env::new();
    let m = env
        .err(
            "spawn_process",
            json!({"command": "sleep 1", "type": "daemon", "ready_pattern": "(("}),
        )
        .await;
    assert!(m.contains("ready_pattern"), "{m}");
    let m = env.err("spawn_process", json!({"command": "sleep 1", "type": "forever"})).await;
    assert!(m.contains("field `type`"), "{m}");
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"], json!([]));
}
