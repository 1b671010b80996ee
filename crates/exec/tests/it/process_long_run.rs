#![allow(clippy::unwrap_used, clippy::expect_used)]
//! spawn_process long-runs: the exit is announced with the next tool result; a time limit stops
//! them; one that ends while the call still waits is reported in the result, not again later.

use crate::process_support;

use std::time::Duration;

use hands_core::NoticeKind;
use process_support::Env;
use serde_json::json;

/// Call list_processes until a result carries a notice (at most 10 s); the result as a model
/// reads it, notices rendered.
async fn until_notice(env: &Env) -> String {
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let out = env.call("list_processes", json!({})).await;
        if !out.notices.is_empty() {
            assert!(out.notices.iter().all(|n| n.kind == NoticeKind::ProcessExited), "{out:?}");
            return out.notices_as_text().joined_text();
        }
    }
    panic!("no notice arrived within 10 s");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_exit_of_a_long_run_rides_on_the_next_tool_result() {
    let env = Env::new();
    let command = "echo begin; sleep 1; for i in $(seq 1 30); do echo line $i; done; exit 4";
    let (text, s) = env
        .ok("spawn_process", json!({"command": command, "type": "long-run", "name": "tests"}))
        .await;
    assert_eq!(s["status"], "running", "{text}");
    assert_eq!(s["type"], "long-run");
    assert!(s["first_output"].as_str().unwrap().contains("begin"), "{s}");
    assert!(text.contains("reported with a later tool result"), "{text}");
    // Any tool will do: the notice is appended to its result.
    let text = until_notice(&env).await;
    let notice = text.split("[notice] ").nth(1).unwrap_or_else(|| panic!("no notice in {text}"));
    assert!(notice.contains("p1 (tests: `"), "{notice}");
    assert!(notice.contains("exited with code 4 after"), "{notice}");
    assert!(notice.contains("line 30"), "{notice}");
    assert!(!notice.contains("line 10\n"), "only the last ~20 lines: {notice}");
    // Once.
    let out = env.call("list_processes", json!({})).await;
    assert!(out.notices.is_empty(), "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_run_over_its_limit_is_stopped_and_announced() {
    let env = Env::with(|c| c.processes.stop_grace_ms = 300);
    let (_, s) = env
        .ok(
            "spawn_process",
            json!({"command": "echo working; exec sleep 60", "type": "long-run", "timeout": 800}),
        )
        .await;
    let pid = s["pid"].as_u64().unwrap();
    let text = until_notice(&env).await;
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert!(text.contains("[notice] Background process p1"), "{text}");
    assert!(text.contains("timed out after 0.8s and was stopped"), "{text}");
    assert_eq!(list["processes"][0]["status"], "stopped");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}/stat")).exists() || env.marked().is_empty()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_run_that_ends_during_the_call_is_reported_there_only() {
    let env = Env::new();
    let out = env
        .call("spawn_process", json!({"command": "echo built; exit 2", "type": "long-run"}))
        .await;
    let text = out.joined_text();
    assert!(!out.is_error, "a non-zero exit is a result, not a failure: {text}");
    assert!(text.contains("finished after") && text.contains("exited with code 2"), "{text}");
    assert!(text.contains("built"), "{text}");
    let s = out.structured.unwrap();
    assert_eq!(s["status"], "exited");
    assert_eq!(s["exit_code"], 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let out = env.call("list_processes", json!({})).await;
    assert!(out.notices.is_empty(), "no second report: {out:?}");
}
