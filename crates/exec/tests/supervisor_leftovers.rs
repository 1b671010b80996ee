#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A hands killed with SIGKILL leaves its daemons running; the next hands's `reap_leftovers`
//! stops them from the records, and never touches a pid that names another process now.
//!
//! "hands" here is this test binary re-run as a child with `HANDS_TEST_FAKE_HANDS` set: the
//! ignored test `fake_hands` then starts a daemon through the supervisor and waits to be killed.

mod supervisor_common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use hands_core::Session;
use hands_exec::{Kind, Record, SpawnSpec, Supervisor, reap_leftovers};
use supervisor_common::{config, marked, settle};

#[tokio::test]
#[ignore = "run as a child by a_killed_hands_leaves_nothing_after_reap_leftovers"]
async fn fake_hands() {
    let Ok(id) = std::env::var("HANDS_TEST_FAKE_HANDS") else { return };
    let root = tempfile::tempdir().unwrap();
    let s = Session::new(id, root.path());
    let sup = Supervisor::of(&s, &config());
    let spec = SpawnSpec {
        command: "setsid sleep 1000 & (sleep 1000 &); echo started; sleep 1000".into(),
        kind: Kind::Daemon,
        name: None,
        cwd: root.path().to_path_buf(),
        head: 1000,
        tail: 1000,
        log: true,
    };
    let proc = sup.spawn(spec).unwrap();
    let mut progress = proc.subscribe();
    while !String::from_utf8_lossy(&proc.snapshot().head).contains("started") {
        progress.changed().await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    println!("READY {}", proc.pid);
    tokio::time::sleep(Duration::from_secs(1000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_hands_leaves_nothing_after_reap_leftovers() {
    let state = tempfile::tempdir().unwrap();
    let session = format!("leftover-{}", std::process::id());
    let mut hands = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "fake_hands", "--ignored", "--nocapture", "--test-threads", "1"])
        .env("HANDS_TEST_FAKE_HANDS", &session)
        .env("HANDS_STATE_DIR", state.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(hands.stdout.take().unwrap()).lines();
    let pid: u32 = loop {
        let line = lines.next().expect("fake hands ended before READY").unwrap();
        // libtest prints `test fake_hands ... ` before the test's own output.
        if let Some((_, pid)) = line.split_once("READY ") {
            break pid.trim().parse().unwrap();
        }
    };
    let records = state.path().join("processes");
    let files: Vec<_> = std::fs::read_dir(&records).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "one record per background process");
    let record: Record = serde_json::from_slice(&std::fs::read(files[0].path()).unwrap()).unwrap();
    assert_eq!((record.pid as u32, record.session.as_str()), (pid, session.as_str()));

    hands.kill().unwrap();
    hands.wait().unwrap();
    let before = marked(&session);
    assert!(before.len() >= 3, "the daemon and its escaped children outlive hands: {before:?}");

    let report = tokio::task::spawn_blocking(move || reap_leftovers(&records)).await.unwrap();
    assert_eq!((report.records, report.removed, report.survivors), (1, 1, 0), "{report:?}");
    assert!(report.stopped >= 3, "{report:?}");
    let left = settle(|| marked(&session), Duration::from_secs(2)).await;
    assert!(left.is_empty(), "survivors {left:?}");
}

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
