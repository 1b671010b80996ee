#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The end of a session stops every background process (SIGTERM first, so that they can clean up)
//! and nothing marked with the session survives.
//!
//! The supervisor sends the stops newest first but runs them together (one grace period for all),
//! so the order in which the processes see SIGTERM is not fixed and is not asserted here.

use crate::process_support;

use std::time::Duration;

use process_support::Env;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn closing_the_session_stops_everything_and_leaves_nothing() {
    let env = Env::with(|c| c.processes.settle_ms = 100);
    let order = env.tmp.path().join("order.txt");
    for name in ["a", "b", "c"] {
        // Each writes its name when told to stop; a child keeps the tree non-trivial.
        let command = format!(
            "sleep 300 & trap 'echo {name} >> {}; kill $!; exit 0' TERM; echo up; while :; do sleep 0.05; done",
            order.display()
        );
        env.ok(
            "spawn_process",
            json!({"command": command, "type": "daemon", "name": name, "ready_pattern": "up"}),
        )
        .await;
    }
    // A double-forked, setsid'd descendant escapes the group but not the marker.
    env.ok("spawn_process", json!({"command": "setsid sh -c 'sleep 300 &' ; echo forked; exec sleep 300", "type": "daemon", "ready_pattern": "forked"})).await;
    assert!(env.marked().len() >= 8, "{:?}", env.marked());
    env.session.close().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(env.marked(), Vec::<u32>::new(), "nothing of the session is left");
    let order = std::fs::read_to_string(&order).unwrap();
    let mut got: Vec<&str> = order.lines().collect();
    got.sort_unstable();
    assert_eq!(got, ["a", "b", "c"], "each got SIGTERM and cleaned up");
    let supervisor = hands_exec::Supervisor::of(&env.session, &env.config);
    for proc in supervisor.list() {
        assert_eq!(
            proc.status(),
            hands_exec::Status::Stopped { reason: "session ended".into() },
            "{}",
            proc.id
        );
    }
}
