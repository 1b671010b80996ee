#![allow(clippy::unwrap_used, clippy::expect_used)]
//! list_processes, process_output, stop_process, and the per-session limit.

use crate::process_support;

use std::time::Duration;

use process_support::{Env, eventually};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn output_is_read_once_then_by_tail() {
    let env = Env::with(|c| c.processes.settle_ms = 200);
    let command = "echo first; sleep 0.6; for i in 1 2 3 4 5; do echo more $i; done; exec sleep 60";
    let (_, s) = env.ok("spawn_process", json!({"command": command, "type": "long-run"})).await;
    assert_eq!(s["first_output"], "first");
    tokio::time::sleep(Duration::from_millis(900)).await;
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"][0]["unread_bytes"], 35, "5 × `more N\\n` unread: {list}");
    let (text, _) = env.ok("process_output", json!({"id": "p1"})).await;
    assert!(text.contains("more 1") && text.contains("more 5"), "{text}");
    let new = text.split("New output").nth(1).unwrap();
    assert!(!new.contains("first"), "already shown by spawn_process: {text}");
    let (text, _) = env.ok("process_output", json!({"id": "p1"})).await;
    assert!(text.contains("No new output"), "{text}");
    let (text, _) = env.ok("process_output", json!({"id": "p1", "tail": 2})).await;
    assert!(text.contains("more 4\n  more 5") && !text.contains("more 3"), "{text}");
    let (text, _) = env.ok("process_output", json!({"id": "p1", "since": 0})).await;
    assert!(text.contains("first") && text.contains("more 5"), "{text}");
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"][0]["unread_bytes"], 0);
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn identical_output_calls_in_one_turn_are_not_deduplicated() {
    let env = Env::with(|c| c.processes.settle_ms = 200);
    env.ok("spawn_process", json!({"command": "while :; do echo tick; sleep 0.1; done", "type": "daemon", "ready_pattern": "tick"})).await;
    let call = |id: &str| {
        hands_core::ToolCall::new(id, "process_output", json!({"id": "p1"})).in_turn("turn-1")
    };
    let first = env.registry.dispatch(&env.session, call("a")).await.unwrap().joined_text();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = env.registry.dispatch(&env.session, call("b")).await.unwrap().joined_text();
    assert_ne!(first, second, "the second call read anew");
    assert!(second.contains("tick"), "{second}");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_kills_what_ignores_sigterm_and_reports_it() {
    let env = Env::with(|c| c.processes.stop_grace_ms = 300);
    let command = "trap '' TERM; echo stubborn; while :; do sleep 0.1; done";
    let (_, s) = env
        .ok(
            "spawn_process",
            json!({"command": command, "type": "daemon", "ready_pattern": "stubborn"}),
        )
        .await;
    let (text, _) = env.ok("stop_process", json!({"id": "p1"})).await;
    assert!(text.starts_with("Stopped p1"), "{text}");
    assert!(text.contains("got SIGKILL"), "{text}");
    assert!(text.contains("stubborn"), "last lines: {text}");
    let pid = s["pid"].as_u64().unwrap();
    assert!(
        eventually(Duration::from_secs(10), || env.marked().is_empty()).await,
        "all gone, pid {pid}"
    );
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"][0]["status"], "stopped");
    let (text, _) = env.ok("stop_process", json!({"id": "p1"})).await;
    assert!(text.contains("was not running"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_ids_are_errors_that_list_the_known_ones() {
    let env = Env::with(|c| c.processes.settle_ms = 100);
    let m = env.err("stop_process", json!({"id": "p9"})).await;
    assert!(m.contains("has none"), "{m}");
    env.ok("spawn_process", json!({"command": "exec sleep 30", "type": "long-run"})).await;
    for tool in ["stop_process", "process_output"] {
        let m = env.err(tool, json!({"id": "p9"})).await;
        assert!(m.contains("Known ids: p1"), "{m}");
    }
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_seventeenth_process_is_refused_with_the_list() {
    let env = Env::with(|c| c.processes.settle_ms = 50);
    for i in 0..16 {
        let (_, s) = env
            .ok(
                "spawn_process",
                json!({"command": format!("exec sleep {}", 60 + i), "type": "long-run"}),
            )
            .await;
        assert_eq!(s["status"], "running");
    }
    let m = env.err("spawn_process", json!({"command": "sleep 1", "type": "long-run"})).await;
    assert!(m.contains("limit"), "{m}");
    assert!(m.contains("p16") && m.contains("exec sleep 75"), "lists them: {m}");
    assert!(m.contains("stop_process"), "{m}");
    env.ok("stop_process", json!({"id": "p3"})).await;
    env.ok("spawn_process", json!({"command": "exec sleep 30", "type": "long-run"})).await;
    let (text, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"].as_array().unwrap().len(), 17, "{text}");
    env.session.close().await;
}
