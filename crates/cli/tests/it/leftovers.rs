//! hands killed with SIGKILL while a daemon of its session runs: the next `hands` start stops the
//! leftover (its record says what it was), and leaves a recorded PID that now names another process
//! alone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Pids of live processes whose environment contains `needle`.
fn marked(needle: &str) -> Vec<u32> {
    common::live_with_env(needle)
}

fn hands(state: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("hands"));
    cmd.env("HANDS_STATE_DIR", state).env("HOME", root).arg("--root").arg(root);
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

#[test]
fn the_next_hands_stops_what_a_killed_one_left_running() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let needle = format!("HANDS_STATE_DIR={}", state.display());

    // A daemon that never becomes ready keeps `hands call spawn_process` waiting: kill hands then.
    // The daemon has escaped children too: one setsid'd, one double-forked.
    let mut first = hands(&state, &root)
        .args(["call", "spawn_process", "type=daemon", "ready_pattern=never"])
        .arg("command=setsid sleep 1000 & (sleep 1000 &); sleep 1000")
        .spawn()
        .unwrap();
    let started = Instant::now();
    // hands itself and the daemon's three sleeps (bash may exec the last one in place of itself)
    // carry the test's HANDS_STATE_DIR.
    while marked(&needle).len() < 4 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let records = std::fs::read_dir(state.join("processes")).unwrap().count();
    assert_eq!(records, 1, "the daemon was recorded");
    first.kill().unwrap(); // SIGKILL: no chance to clean up
    first.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let left = marked(&needle);
    assert!(left.len() >= 3, "the daemon and its children outlived the killed hands: {left:?}");

    // Any next hands start stops it and deletes the record.
    let out = hands(&state, &root).args(["call", "list_files"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(marked(&needle), Vec::<u32>::new(), "leftovers survived the next start");
    assert_eq!(std::fs::read_dir(state.join("processes")).unwrap().count(), 0);
}

#[test]
fn a_recorded_pid_that_was_reused_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let needle = format!("HANDS_STATE_DIR={}", state.display());
    let mut first = hands(&state, &root)
        .args(["call", "spawn_process", "type=daemon", "command=sleep 1000", "ready_pattern=never"])
        .spawn()
        .unwrap();
    let started = Instant::now();
    while marked(&needle).len() < 2 && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    first.kill().unwrap();
    first.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));

    // Pretend the recorded pid now belongs to an unrelated process: change its start time, and
    // give the leftover another session marker so that only the pid check could find it.
    let dir = state.join("processes");
    let record_path = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap();
    record["start"] = serde_json::json!(record["start"].as_u64().unwrap() + 12345);
    record["session"] = serde_json::json!("some-other-session");
    record["marker"] = serde_json::json!("some-other-session/p1");
    record["owner"] = serde_json::json!("some-other-owner");
    std::fs::write(&record_path, serde_json::to_vec(&record).unwrap()).unwrap();
    let survivors_before = marked(&needle);

    let out = hands(&state, &root).args(["call", "list_files"]).output().unwrap();
    assert!(out.status.success());
    let after = marked(&needle);
    assert_eq!(after, survivors_before, "a process whose start time does not match was touched");
    // Clean up for real.
    for pid in after {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
}

#[test]
fn a_one_shot_call_stops_its_daemon_when_it_exits_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let needle = format!("HANDS_STATE_DIR={}", state.display());
    let out = hands(&state, &root)
        .args([
            "call",
            "spawn_process",
            "type=daemon",
            "command=echo up; sleep 1000",
            "ready_pattern=up",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Started daemon p1"), "{text}");
    assert!(text.contains("stopped as hands exits"), "{text}");
    assert_eq!(marked(&needle), Vec::<u32>::new(), "the daemon outlived hands call");
    assert_eq!(std::fs::read_dir(state.join("processes")).unwrap().count(), 0, "record left");
}

/// Live processes whose command line is `sleep <seconds>`.
fn sleeping(seconds: u32) -> Vec<u32> {
    let wanted = format!("sleep\0{seconds}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
        if cmdline == wanted.as_bytes() && !zombie {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_leftover_that_clears_its_markers_does_not_outlive_the_call() {
    // Issue 11, item 11, exactly: the leftover leaves the group and clears every hands marker.
    // The pause lets its subshell exit first, so that it is an orphan of hands (not a child of a
    // marked process) when bash ends.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let n = 800_000 + std::process::id() % 50_000;
    let out = hands(&tmp.path().join("state"), &root)
        .args(["call", "bash"])
        .arg(format!(
            "command=(setsid env -u HANDS_SESSION -u HANDS_PROCESS -u HANDS_OWNER sleep {n} &); \
             sleep 0.5"
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let deadline = Instant::now() + Duration::from_secs(2);
    while !sleeping(n).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = sleeping(n);
    for pid in &left {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert_eq!(left, Vec::<u32>::new(), "the leftover outlived the bash call and hands");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("stopped 1 background process"), "{stdout}");
}
