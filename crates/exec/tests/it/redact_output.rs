#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Process output passes through the redaction scrubber before it is kept: bash's output (read
//! through the tool itself, without the registry's redaction step) and a background process's
//! log file in `.hands/processes/` hold no secret, even one written in two pieces 50 ms apart.

use crate::process_support;

use std::sync::{Arc, Once};
use std::time::Duration;

use hands_core::redact::{self, Literals};
use hands_core::{Context, Session, Tool};
use hands_exec::ExecConfig;
use hands_exec::bash::{Bash, BashArgs};
use process_support::{Env, eventually};
use serde_json::json;

const CANARY: &str = "canary-9c41-drain-value";

/// Every test of this binary installs the same engine (the slot is process-wide).
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        redact::install(Arc::new(Literals(vec![("DRAIN_TOKEN".into(), CANARY.into())])));
    });
}

/// A shell command printing the canary in two writes 50 ms apart.
fn split_print() -> String {
    let (a, b) = CANARY.split_at(9);
    format!("printf 'before {a}'; sleep 0.05; printf '{b} after\\n'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_output_is_scrubbed_in_the_drain_even_when_split() {
    install();
    let dir = tempfile::tempdir().unwrap();
    let session = Session::new(format!("redact-{}", std::process::id()), dir.path());
    let ctx = Context::new(&session, "c", None);
    let command = format!("{}; echo {CANARY}", split_print());
    let out = Bash::new(ExecConfig::default())
        .call(ctx, BashArgs { command, timeout: None })
        .await
        .unwrap();
    let text = out.joined_text();
    assert!(!text.contains(CANARY), "{text}");
    assert!(text.contains("before [secret:DRAIN_TOKEN] after\n[secret:DRAIN_TOKEN]\n"), "{text}");
    let structured = out.structured.unwrap().to_string();
    assert!(!structured.contains(CANARY), "{structured}");
    session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_background_process_log_holds_no_secret_and_the_held_tail_is_flushed_at_exit() {
    install();
    let env = Env::with(|c| c.processes.settle_ms = 100);
    // The last write is a prefix of the canary that nothing completes: held back, then flushed
    // as it is when the process exits.
    let (a, _) = CANARY.split_at(12);
    let command = format!("{}; sleep 0.2; printf 'end {a}'", split_print());
    env.ok("spawn_process", json!({"command": command, "type": "long-run"})).await;
    let logs = env.tmp.path().join(".hands/processes");
    let done = eventually(Duration::from_secs(10), || {
        std::fs::read_dir(&logs).into_iter().flatten().flatten().any(|e| {
            let body = std::fs::read_to_string(e.path()).unwrap_or_default();
            body.ends_with(&format!("end {a}"))
        })
    })
    .await;
    let mut bodies = String::new();
    for entry in std::fs::read_dir(&logs).unwrap().flatten() {
        bodies += &std::fs::read_to_string(entry.path()).unwrap_or_default();
    }
    assert!(done, "the held tail never reached the log: {bodies:?}");
    assert!(!bodies.contains(CANARY), "{bodies}");
    assert!(bodies.contains("before [secret:DRAIN_TOKEN] after\n"), "{bodies}");
    env.session.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_typed_into_a_terminal_is_redacted_in_its_echo_and_log() {
    install();
    let env = Env::new();
    env.ok("terminal_start", json!({"command": "cat", "yield_ms": 100})).await;
    let (text, s) = env
        .ok("terminal_send", json!({"id": "p1", "text": format!("{CANARY}\n"), "yield_ms": 500}))
        .await;
    let all = format!("{text}{s}");
    assert!(!all.contains(CANARY), "{all}");
    assert!(all.contains("[secret:DRAIN_TOKEN]"), "the echo and cat's copy: {all}");
    let log = std::fs::read_to_string(env.tmp.path().join(".hands/processes/p1.log")).unwrap();
    assert!(!log.contains(CANARY), "{log}");
    let (_, screen) = env.ok("terminal_read", json!({"id": "p1", "screen": true})).await;
    assert!(!screen.to_string().contains(CANARY), "{screen}");
    env.session.close().await;
}
