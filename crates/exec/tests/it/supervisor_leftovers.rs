#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A hands killed with SIGKILL leaves its daemons running; the next hands's `reap_leftovers`
//! stops them from the records, and never touches a pid that names another process now.
//!
//! (The whole scenario with the real binary — hands SIGKILLed while its daemon and that daemon's
//! escaped children run, the next hands start stopping them — is crates/cli/tests/it/leftovers.rs.)

use std::process::Command;

use hands_exec::{Record, reap_leftovers};

#[tokio::test]
async fn a_record_whose_pid_was_reused_is_dropped_without_killing() {
    let state = tempfile::tempdir().unwrap();
    let mut bystander = Command::new("sleep").arg("1000").spawn().unwrap();
    let pid = bystander.id() as i32;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start: u64 =
        stat[stat.rfind(')').unwrap() + 1..].split_whitespace().nth(19).unwrap().parse().unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_owner = gone.id() as i32;
    gone.wait().unwrap();
    let record = Record {
        owner_pid: dead_owner,
        owner_start: 1,
        owner: format!("{dead_owner}.1"),
        pid,
        pgid: pid,
        // The recorded process started at another time: this pid names someone else now.
        start: start + 1,
        command: "sleep 1000".into(),
        session: format!("reused-{}", std::process::id()),
        marker: "x/p1".into(),
    };
    let path = record.write(state.path()).unwrap();
    let report = reap_leftovers(state.path());
    assert_eq!((report.records, report.reused_pids, report.removed), (1, 1, 1), "{report:?}");
    assert!(!path.exists());
    assert!(bystander.try_wait().unwrap().is_none(), "the bystander was killed");
    bystander.kill().unwrap();
    bystander.wait().unwrap();
}
