//! The preview's processes and files over its life: reuse, close, session end, a crashed browser,
//! and the discovery file.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Env, require_for};
use serde_json::{Value, json};

/// Addresses (as /proc/net/tcp writes them) listening on `port`.
fn listeners(port: u16) -> Vec<String> {
    let mut found = Vec::new();
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else { continue };
            let Some((addr, p)) = local.rsplit_once(':') else { continue };
            if *state == "0A" && u16::from_str_radix(p, 16) == Ok(port) {
                found.push(addr.to_owned());
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_twice_reuses_and_close_and_session_end_leave_nothing() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |_| {});
    let first = env.open().await;
    let browser = first["browserPid"].as_u64().unwrap() as u32;
    assert!(env.marked().contains(&browser), "the browser carries the session's marker");
    assert!(env.marked().len() > 1, "and so do its helper processes: {:?}", env.marked());
    // A fresh profile folder, named on the browser's command line.
    let cmdline = std::fs::read(format!("/proc/{browser}/cmdline")).unwrap();
    let profile = cmdline
        .split(|b| *b == 0)
        .find_map(|arg| arg.strip_prefix(b"--user-data-dir="))
        .map(|p| std::path::PathBuf::from(String::from_utf8_lossy(p).into_owned()))
        .unwrap();
    assert!(profile.join("DevToolsActivePort").exists(), "{}", profile.display());
    let flags = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    for flag in ["--headless=new", "--no-first-run", "--disable-background-networking"] {
        assert!(flags.contains(flag), "{flag} missing: {flags}");
    }

    // The discovery file: every field, on loopback.
    let file = env.root().join(".hands/devtools.json");
    let discovery: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    for key in [
        "version",
        "pid",
        "cdpPort",
        "browserWsEndpoint",
        "targetId",
        "previewUrl",
        "stage",
        "startedAt",
    ] {
        assert!(!discovery[key].is_null(), "{key} missing: {discovery}");
    }
    assert_eq!(discovery["pid"], std::process::id());
    assert_eq!(discovery["stage"], "ready");
    assert_eq!(discovery["cdpPort"], first["cdpPort"]);
    assert_eq!(discovery["previewUrl"], first["previewUrl"]);
    let port = discovery["cdpPort"].as_u64().unwrap() as u16;
    let ws = discovery["browserWsEndpoint"].as_str().unwrap();
    assert!(ws.starts_with(&format!("ws://127.0.0.1:{port}/devtools/browser/")), "{ws}");
    let addrs = listeners(port);
    assert!(!addrs.is_empty(), "nothing listens on the DevTools port {port}");
    assert!(
        addrs.iter().all(|a| a == "0100007F"),
        "DevTools must listen on 127.0.0.1 only: {addrs:?}"
    );

    let (text, again) = env.ok("preview_open", json!({})).await;
    assert!(text.contains("reused"), "{text}");
    assert_eq!(again["browserPid"], first["browserPid"]);

    // preview_close answers in text only (no output schema, no structured copy).
    let (text, closed) = env.ok("preview_close", json!({})).await;
    assert!(text.starts_with("Stopped the preview"), "{text}");
    assert!(closed.is_null(), "{closed}");
    assert!(env.nothing_left().await, "preview_close left {:?}", env.marked());
    assert!(!file.exists(), "the discovery file is removed");
    assert!(!profile.exists(), "the profile folder is removed");
    let (_, status) = env.ok("preview_status", json!({})).await;
    assert_eq!(
        (status["stage"].as_str(), status["running"].as_bool()),
        (Some("stopped"), Some(false))
    );
    let (text, _) = env.ok("preview_close", json!({})).await;
    assert!(text.contains("nothing to stop"), "{text}");

    // The end of the session stops a preview too.
    let reopened = env.open().await;
    assert_ne!(reopened["browserPid"], first["browserPid"]);
    assert!(file.exists());
    env.session.close().await;
    assert!(env.nothing_left().await, "session end left {:?}", env.marked());
    assert!(!file.exists(), "the discovery file is removed at session end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_chromium_is_reported_and_the_next_open_recovers() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |_| {});
    let first = env.open().await;
    let browser = first["browserPid"].as_u64().unwrap();
    std::process::Command::new("kill").args(["-KILL", &browser.to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        let (_, status) = env.ok("preview_status", json!({})).await;
        if status["stage"] == "error" || Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status["stage"], "error", "{status}");
    assert_eq!(status["running"], false);
    assert_eq!(status["attached"], false);
    let last = status["lastError"].as_str().unwrap();
    assert!(last.contains("Chromium") && last.contains("signal 9"), "{last}");
    let (_, read) = env.ok("read_runtime_errors", json!({})).await;
    assert!(
        common::find(read["errors"].as_array().unwrap(), "crash", "Chromium").is_some(),
        "{read}"
    );

    let second = env.open().await;
    assert_ne!(second["browserPid"].as_u64().unwrap(), browser);
    assert_eq!(second["running"], true);
    assert_eq!(second["lastError"], json!(null));
    env.session.close().await;
    assert!(env.nothing_left().await, "left running: {:?}", env.marked());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bricks_compatibility_writes_the_discovery_file_under_bricks() {
    if !require_for("static-site") {
        return;
    }
    let env = Env::fixture("static-site", |c| c.compat = hands_preview::Compat::Bricks);
    env.open().await;
    let bricks = env.root().join(".bricks/devtools.json");
    let discovery: Value =
        serde_json::from_str(&std::fs::read_to_string(&bricks).unwrap()).unwrap();
    assert_eq!(discovery["version"], 1);
    assert!(!env.root().join(".hands/devtools.json").exists());
    env.ok("preview_close", json!({})).await;
    assert!(!bricks.exists());
}
