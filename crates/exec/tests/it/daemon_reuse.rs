#![allow(clippy::unwrap_used, clippy::expect_used)]
//! daemon::start_or_reuse, as bash's dev-server short-circuit calls it.

use crate::process_support;

use hands_core::Context;
use hands_exec::daemon::start_or_reuse;
use process_support::{Env, free_port};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn the_same_command_reuses_the_running_daemon() {
    let env = Env::new();
    let port = free_port();
    let command = format!("python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1");
    let ctx = Context::new(&env.session, "c1", None);
    let first = start_or_reuse(&ctx, &env.config, &command).await.unwrap();
    let s = first.structured.clone().unwrap();
    assert_eq!(s["reused"], false);
    assert_eq!(s["port"], port, "{}", first.joined_text());
    let ctx = Context::new(&env.session, "c2", None);
    let again = start_or_reuse(&ctx, &env.config, &format!("  {command} ")).await.unwrap();
    let text = again.joined_text();
    let s2 = again.structured.unwrap();
    assert_eq!(s2["reused"], true, "{text}");
    assert_eq!(s2["id"], s["id"]);
    assert!(text.contains("Reused the running daemon p1"), "{text}");
    assert!(text.contains(&format!("Port: {port}")), "{text}");
    let (_, list) = env.ok("list_processes", json!({})).await;
    assert_eq!(list["processes"].as_array().unwrap().len(), 1, "started once");
    // Once stopped, the next call starts it afresh.
    env.ok("stop_process", json!({"id": "p1"})).await;
    let ctx = Context::new(&env.session, "c3", None);
    let third = start_or_reuse(&ctx, &env.config, &command).await.unwrap();
    assert_eq!(third.structured.unwrap()["id"], "p2");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dev_server_that_fails_is_an_error_for_the_model() {
    let env = Env::new();
    let ctx = Context::new(&env.session, "c1", None);
    let err =
        start_or_reuse(&ctx, &env.config, "echo 'vite: command not found' >&2; exit 127").await;
    match err {
        Err(hands_core::ToolError::RespondToModel(m)) => {
            assert!(m.contains("exited with code 127") && m.contains("command not found"), "{m}")
        }
        other => panic!("expected an error for the model, got {other:?}"),
    }
}
