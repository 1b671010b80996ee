#![allow(clippy::unwrap_used, clippy::expect_used)]
//! After a timeout, an abort, a stop and the end of the session, no process with the session's
//! marker survives and no zombie is left, for every way a command can leave processes behind.
//! Each (way, command) pair runs 50 times, concurrently in batches.

use crate::supervisor_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hands_core::{Context, Session, Tool};
use hands_exec::bash::{Bash, BashArgs};
use hands_exec::{Kind, SpawnSpec, Supervisor};
use supervisor_common::{config, marked, session, settle, zombies};

const REPS: usize = 50;

/// The commands, each with the batch size it runs in (fork loops are heavy: smaller batches).
const COMMANDS: &[(&str, usize)] = &[
    ("sleep 1000 & sleep 1000 & wait", 50),
    ("setsid sleep 1000 & wait", 50),
    ("nohup sleep 1000 & sleep 1000", 50),
    ("( (sleep 1000 &) & ); sleep 1000", 50),
    ("trap '' TERM; sleep 1000", 50),
    ("while true; do sleep 1 & done", 10),
    // Escapes the group and the shell both: a setsid'd grandchild of a subshell that exited.
    ("(setsid sh -c 'sleep 1000 & exec sleep 1000' &); sleep 1000", 50),
];

#[derive(Debug, Clone, Copy)]
enum Way {
    Timeout,
    Abort,
    Stop,
    SessionEnd,
}

fn spec(s: &Session, command: &str) -> SpawnSpec {
    SpawnSpec {
        command: command.into(),
        kind: Kind::Daemon,
        name: None,
        cwd: s.root().to_path_buf(),
        head: 4096,
        tail: 4096,
        log: false,
    }
}

/// Run `n` copies of `command` in one session and end them `way`; the session id.
async fn batch(way: Way, command: &str, n: usize) -> (tempfile::TempDir, Session) {
    let (dir, s) = session("surv");
    let sup = Supervisor::of(&s, &config());
    sup.set_records_dir(None);
    match way {
        Way::Timeout | Way::Abort => {
            let timeout = if matches!(way, Way::Timeout) { 600 } else { 60_000 };
            let calls: Vec<_> = (0..n)
                .map(|_| {
                    let ctx = Context::new(&s, "c", None);
                    let args = BashArgs { command: command.into(), timeout: Some(timeout) };
                    tokio::spawn(async move { Bash::new(config()).call(ctx, args).await })
                })
                .collect();
            if matches!(way, Way::Abort) {
                tokio::time::sleep(Duration::from_millis(400)).await;
                s.abort();
            }
            for call in calls {
                let out = call.await.unwrap().unwrap();
                assert!(out.is_error, "{command}: {}", out.joined_text());
            }
        }
        Way::Stop => {
            let procs: Vec<_> = (0..n).map(|_| sup.spawn(spec(&s, command)).unwrap()).collect();
            tokio::time::sleep(Duration::from_millis(400)).await;
            let stops: Vec<_> = procs
                .into_iter()
                .map(|p| {
                    let p = Arc::clone(&p);
                    tokio::spawn(async move { p.stop("stopped", Duration::from_millis(300)).await })
                })
                .collect();
            for stop in stops {
                let report = stop.await.unwrap();
                assert_eq!(report.survivors, 0, "{command}: {report:?}");
            }
        }
        Way::SessionEnd => {
            for _ in 0..n {
                sup.spawn(spec(&s, command)).unwrap();
            }
            tokio::time::sleep(Duration::from_millis(400)).await;
            s.close().await;
        }
    }
    (dir, s)
}

async fn run_way(way: Way) {
    let started = Instant::now();
    for &(command, size) in COMMANDS {
        let t = Instant::now();
        let mut sessions = Vec::new();
        for _ in 0..REPS / size {
            let (dir, s) = batch(way, command, size).await;
            // Survivors are counted at once: stop has returned, nothing may be left.
            let left = marked(s.id());
            assert!(left.is_empty(), "{way:?} `{command}`: survivors {left:?}");
            sessions.push((dir, s));
        }
        for (_dir, s) in sessions {
            s.close().await;
        }
        eprintln!("  {way:?} `{command}`: {:?}", t.elapsed());
    }
    let z = settle(zombies, Duration::from_secs(3)).await;
    assert!(z.is_empty(), "{way:?}: zombie children {z:?}");
    eprintln!(
        "{way:?}: {} commands × {REPS}: 0 survivors, 0 zombies, {:?}",
        COMMANDS.len(),
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_a_timeout() {
    run_way(Way::Timeout).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_an_abort() {
    run_way(Way::Abort).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_a_stop() {
    run_way(Way::Stop).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_survives_the_end_of_the_session() {
    run_way(Way::SessionEnd).await;
}
