#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Issue 11, item 11: a leftover that clears every hands marker and leaves its group —
//! `(setsid env -u HANDS_SESSION -u HANDS_PROCESS -u HANDS_OWNER sleep N &)` — is re-parented to
//! hands (the subreaper) when its subshell exits; the bash call that made it stops it when it
//! ends, and the end of the session stops one that a background process made. Found here by its
//! command line, straight from /proc.

use crate::supervisor_common;

use std::time::Duration;

use hands_core::{Context, Tool};
use hands_exec::bash::{Bash, BashArgs};
use hands_exec::{Kind, SpawnSpec, Supervisor};
use supervisor_common::{config, session, settle, zombies};

/// The line, with a sleep length that names this test's leftover.
fn escape(seconds: u32) -> String {
    format!("(setsid env -u HANDS_SESSION -u HANDS_PROCESS -u HANDS_OWNER sleep {seconds} &)")
}

/// A sleep length no other test uses.
fn unique(offset: u32) -> u32 {
    900_000 + (std::process::id() % 40_000) * 2 + offset
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

#[tokio::test(flavor = "multi_thread")]
async fn the_bash_call_stops_an_unmarked_orphan_it_made() {
    let n = unique(0);
    let (_dir, s) = session("unmarked-call");
    let sup = Supervisor::of(&s, &config());
    sup.set_records_dir(None);
    let ctx = Context::new(&s, "c", None);
    // The pause lets the subshell exit first: the leftover is then an orphan of hands, not a
    // child of a marked process, when bash ends.
    let args = BashArgs { command: format!("{}; sleep 0.5", escape(n)), timeout: Some(10_000) };
    let out = Bash::new(config()).call(ctx, args).await.unwrap();
    // The session is still open: only the end of the call can have stopped it.
    let left = settle(|| sleeping(n), Duration::from_secs(2)).await;
    assert_eq!(left, Vec::<u32>::new(), "the unmarked leftover outlived the bash call");
    assert!(out.joined_text().contains("stopped 1 background process"), "{}", out.joined_text());
    assert_eq!(settle(zombies, Duration::from_secs(2)).await, Vec::<u32>::new());
    s.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_end_of_the_session_stops_an_unmarked_orphan_of_a_background_process() {
    let n = unique(1);
    let (_dir, s) = session("unmarked-daemon");
    let sup = Supervisor::of(&s, &config());
    sup.set_records_dir(None);
    let spec = SpawnSpec {
        command: format!("{}; sleep 1000", escape(n)),
        kind: Kind::Daemon,
        name: None,
        cwd: s.root().to_path_buf(),
        head: 4096,
        tail: 4096,
        log: false,
    };
    let _proc = sup.spawn(spec).unwrap();
    let born =
        settle(|| if sleeping(n).is_empty() { vec![0] } else { vec![] }, Duration::from_secs(5));
    assert!(born.await.is_empty(), "the leftover never started");
    s.close().await;
    let left = settle(|| sleeping(n), Duration::from_secs(2)).await;
    assert_eq!(left, Vec::<u32>::new(), "the unmarked leftover outlived the session");
}
