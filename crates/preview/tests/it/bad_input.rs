//! What the preview says when it cannot run: a serve command that exits at once, a port already
//! taken, a server that never answers, Chromium missing, a project with no preview. Each is a
//! clear error at `error` with nothing left running.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::Env;
use serde_json::json;

/// Open must fail; returns `lastError` after checking the stage and that nothing runs.
async fn open_fails(env: &Env) -> String {
    let (text, status) = env.err("preview_open", json!({})).await;
    assert_eq!(status["stage"], "error", "{text}");
    assert_eq!(status["running"], false);
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
    let last = status["lastError"].as_str().unwrap().to_owned();
    assert!(text.contains(&last), "the result shows lastError: {text}");
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serve_command_that_exits_at_once() {
    let env = Env::empty(|c| {
        c.serve = "echo 'config.json not found' >&2; exit 3".into();
    });
    let last = open_fails(&env).await;
    assert!(last.contains("exited with code 3"), "{last}");
    assert!(last.contains("config.json not found"), "the server's own words: {last}");
    assert!(last.contains("preview.serve"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_already_taken() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let env = Env::empty(|c| {
        c.serve = "python3 -m http.server {port} --bind 127.0.0.1".into();
        c.port = port;
    });
    let last = open_fails(&env).await;
    assert!(last.contains(&format!("Port {port} is already in use")), "{last}");
    assert!(last.contains("preview.port"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_stopped_within_the_timeout() {
    let env = Env::empty(|c| {
        c.serve = "echo starting; exec sleep 600".into();
        c.ready_timeout_ms = 1_500;
    });
    let started = Instant::now();
    let last = open_fails(&env).await;
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(1_500), "{took:?}");
    assert!(took < Duration::from_secs(15), "the timeout is kept: {took:?}");
    assert!(last.contains("did not answer") && last.contains("within 1.5 s"), "{last}");
    assert!(last.contains("preview.ready_timeout_ms") && last.contains("starting"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_missing_names_the_setting() {
    let env = Env::fixture("static-site", |c| c.chromium = "/nonexistent/chromium".into());
    let last = open_fails(&env).await;
    assert!(last.contains("/nonexistent/chromium") && last.contains("preview.chromium"), "{last}");
    let (_, status) = env.ok("preview_status", json!({})).await;
    assert_eq!(status["stage"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vite_not_installed_says_to_install_it() {
    let env = Env::with_files(&[("package.json", r#"{"devDependencies": {"vite": "7"}}"#)], |_| {});
    let last = open_fails(&env).await;
    assert!(last.contains("npm install"), "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_preview_the_tools_are_not_offered() {
    let env = Env::empty(|_| {});
    let names: Vec<String> =
        env.registry.list(hands_core::Mode::Build).into_iter().map(|s| s.name).collect();
    for tool in hands_preview::TOOLS {
        assert!(!names.iter().any(|n| n == tool), "{tool} offered without a preview: {names:?}");
    }
    let out = env.call("preview_open", json!({})).await;
    assert!(out.is_error && out.joined_text().contains("Unknown tool"), "{}", out.joined_text());
    // The message a project without a preview gets says what to configure.
    let message = hands_preview::detect::plan(env.root(), &Default::default()).unwrap_err();
    assert!(message.contains("[preview]") && message.contains("serve = "), "{message}");

    // A configured command, or a detected project, offers them (read_runtime_errors in plan mode
    // too).
    let configured = Env::empty(|c| c.serve = "npm start".into());
    let plan: Vec<String> =
        configured.registry.list(hands_core::Mode::Plan).into_iter().map(|s| s.name).collect();
    assert_eq!(plan, ["read_runtime_errors"]);
    assert_eq!(
        configured
            .registry
            .list(hands_core::Mode::Build)
            .iter()
            .filter(|s| s.name.starts_with("preview_"))
            .count(),
        8
    );
    // preview_evaluate only where the user turned it on.
    assert!(configured.registry.get("preview_evaluate").is_none());
    let evaluating = Env::empty(|c| {
        c.serve = "npm start".into();
        c.evaluate = true;
    });
    assert!(
        evaluating
            .registry
            .list(hands_core::Mode::Build)
            .iter()
            .any(|s| s.name == "preview_evaluate")
    );
}

/// Issue 12, item 2: a project that gains an `index.html` mid-session gets the preview tools on
/// the next call, and a read call never looks at the disk for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_that_gains_a_page_gets_the_preview_tools_after_the_call_that_made_it() {
    let env = Env::empty(|_| {});
    let mut changes = env.registry.subscribe();
    let version = env.registry.version();
    let offered = |env: &Env| env.registry.get("preview_open").is_some();
    assert!(!offered(&env));
    let out = env.call("bash", json!({"command": "echo '<h1>hi</h1>' > index.html"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(offered(&env), "preview_open is not offered after index.html was made");
    assert_eq!(env.registry.version(), version + 1);
    assert!(changes.has_changed().unwrap());
    changes.borrow_and_update();
    let status = env.call("preview_status", json!({})).await;
    assert!(!status.is_error, "{}", status.joined_text());

    // Gone again: gone from the list after the next mutating call.
    std::fs::remove_file(env.root().join("index.html")).unwrap();
    let out = env.call("bash", json!({"command": "true"})).await;
    assert!(!out.is_error, "{}", out.joined_text());
    assert!(!offered(&env));
    assert!(changes.has_changed().unwrap());
}
