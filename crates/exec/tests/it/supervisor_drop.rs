#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A session dropped without `close()` does not leave its processes running.

use crate::supervisor_common;

use std::time::Duration;

use hands_exec::{Kind, SpawnSpec, Supervisor};
use supervisor_common::{config, marked, session, settle};

#[tokio::test]
async fn dropping_a_session_kills_its_process_groups() {
    let (root, s) = session("dropped");
    let id = s.id().to_owned();
    let sup = Supervisor::of(&s, &config());
    for kind in [Kind::Daemon, Kind::LongRun] {
        sup.spawn(SpawnSpec {
            command: "sleep 1000 & sleep 1000".into(),
            kind,
            name: None,
            cwd: root.path().to_path_buf(),
            head: 100,
            tail: 100,
            log: false,
        })
        .unwrap();
    }
    // One reading decides: a shell exec-ing into `sleep` is briefly unreadable in /proc, so a
    // second reading after the loop could miss a process the first one saw.
    let started = std::time::Instant::now();
    let running = loop {
        let now = marked(&id);
        if now.len() >= 4 || started.elapsed() >= Duration::from_secs(10) {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(running.len() >= 4, "{running:?}");
    drop(sup);
    drop(s);
    let left = settle(|| marked(&id), Duration::from_secs(3)).await;
    assert!(left.is_empty(), "survivors after the session was dropped: {left:?}");
}
