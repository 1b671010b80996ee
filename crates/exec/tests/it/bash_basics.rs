#![allow(clippy::unwrap_used, clippy::expect_used)]
//! bash through its Tool implementation: output, exit codes, argument errors, stdin, cwd, long
//! commands, concurrency, timeouts and aborts.

use std::time::{Duration, Instant};

use hands_core::{Context, Session, Tool, ToolOutput};
use hands_exec::bash::{Bash, BashArgs};
use hands_exec::{ExecConfig, Supervisor};
use serde_json::Value;

fn session(name: &str) -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    let id = format!("{name}-{}", std::process::id());
    let s = Session::new(id, dir.path());
    (dir, s)
}

fn config() -> ExecConfig {
    let mut config = ExecConfig::default();
    config.processes.stop_grace_ms = 300;
    config
}

async fn bash(s: &Session, command: &str, timeout: Option<u64>) -> Result<ToolOutput, String> {
    let ctx = Context::new(s, "c", None);
    Bash::new(config())
        .call(ctx, BashArgs { command: command.into(), timeout })
        .await
        .map_err(|e| e.to_string())
}

fn text(out: &ToolOutput) -> String {
    out.joined_text()
}

fn field(out: &ToolOutput, name: &str) -> Value {
    out.structured.as_ref().unwrap()[name].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_and_exit_code() {
    let (_dir, s) = session("basic");
    let out = bash(&s, "echo out; echo err >&2; exit 3", None).await.unwrap();
    assert!(!out.is_error, "a non-zero exit is a normal result");
    let t = text(&out);
    assert!(t.contains("out\n") && t.contains("err\n"), "{t}");
    assert!(t.ends_with("[exit code 3]"), "{t}");
    assert_eq!(field(&out, "exit_code"), 3);
    assert_eq!(field(&out, "timed_out"), false);
    assert_eq!(field(&out, "output_bytes"), 8);
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_and_stderr_are_interleaved_in_order() {
    let (_dir, s) = session("order");
    let out = bash(&s, "for i in 1 2 3; do echo o$i; echo e$i >&2; done", None).await.unwrap();
    assert!(text(&out).starts_with("o1\ne1\no2\ne2\no3\ne3\n"), "{}", text(&out));
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_stdin_and_cwd() {
    let (dir, s) = session("env");
    let start = Instant::now();
    let out =
        bash(&s, "cat; echo \"[$NO_COLOR $PAGER $GIT_PAGER $TERM]\"; pwd", None).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(5), "cat must get EOF at once");
    let t = text(&out);
    assert!(t.contains("[1 cat cat dumb]"), "{t}");
    let root = dir.path().canonicalize().unwrap();
    assert!(t.contains(root.to_str().unwrap()), "{t}");
    bash(&s, "cd /tmp", None).await.unwrap();
    let again = text(&bash(&s, "pwd", None).await.unwrap());
    assert!(again.starts_with(root.to_str().unwrap()), "cd does not carry over: {again}");
    let marker = text(&bash(&s, "echo $HANDS_SESSION; echo $HANDS_PROCESS", None).await.unwrap());
    assert!(marker.starts_with(&format!("{}\n{}/b", s.id(), s.id())), "{marker}");
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_controlling_terminal() {
    let (_dir, s) = session("tty");
    let out = bash(&s, "exec 3</dev/tty && echo HAS_TTY || echo no tty", Some(5000)).await.unwrap();
    assert!(text(&out).contains("no tty"), "{}", text(&out));
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_are_errors_for_the_model() {
    let (_dir, s) = session("args");
    assert!(bash(&s, "", None).await.unwrap_err().contains("empty"));
    assert!(bash(&s, " \t\n", None).await.unwrap_err().contains("empty"));
    assert!(bash(&s, "echo a\0b", None).await.unwrap_err().contains("NUL"));
    let over = bash(&s, "true", Some(600_001)).await.unwrap_err();
    assert!(over.contains("600000") && over.contains("spawn_process"), "{over}");
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_megabyte_command_runs_through_a_script_file() {
    let (_dir, s) = session("long");
    let command = format!(": {}\necho ok", "x".repeat(1 << 20));
    let out = bash(&s, &command, None).await.unwrap();
    assert_eq!(text(&out), "ok\n[exit code 0]");
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_calls_in_one_session() {
    let (_dir, s) = session("many");
    let calls = (0..50).map(|i| {
        let s = s.clone();
        tokio::spawn(async move {
            (i, bash(&s, &format!("echo call-{i}; exit $(({i} % 7))"), None).await)
        })
    });
    for call in calls {
        let (i, out) = call.await.unwrap();
        let out = out.unwrap();
        assert_eq!(text(&out), format!("call-{i}\n[exit code {}]", i % 7));
    }
    assert!(Supervisor::of(&s, &config()).session_pids().is_empty());
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_is_an_error_with_the_output_so_far() {
    let (_dir, s) = session("timeout");
    let start = Instant::now();
    let out = bash(&s, "echo before; sleep 30", Some(300)).await.unwrap();
    // 300 ms timeout + 300 ms grace; generous for a loaded machine, far below the 30 s sleep.
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(out.is_error);
    let t = text(&out);
    assert!(t.contains("timed out") && t.contains("before\n"), "{t}");
    assert!(t.contains("[killed by signal 15 (SIGTERM)]"), "{t}");
    assert_eq!(field(&out, "timed_out"), true);
    assert!(Supervisor::of(&s, &config()).session_pids().is_empty());
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftovers_are_stopped_and_named() {
    let (_dir, s) = session("left");
    let out = bash(&s, "sleep 1000 & echo started", None).await.unwrap();
    assert!(!out.is_error);
    let t = text(&out);
    assert!(t.contains("started\n") && t.contains("spawn_process"), "{t}");
    assert_eq!(field(&out, "stopped_leftovers"), 1);
    assert!(t.ends_with("[exit code 0]"), "{t}");
    assert!(Supervisor::of(&s, &config()).session_pids().is_empty());
    s.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_with_the_default_grace_stops_everything_within_three_seconds() {
    let (_dir, s) = session("abort");
    let ctx = Context::new(&s, "c", None);
    let call = tokio::spawn(async move {
        Bash::new(ExecConfig::default())
            .call(
                ctx,
                BashArgs { command: "trap '' TERM; echo up; sleep 1000".into(), timeout: None },
            )
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start = Instant::now();
    s.abort();
    let out = call.await.unwrap().unwrap();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(out.is_error);
    assert!(text(&out).contains("aborted") && text(&out).contains("up\n"), "{}", text(&out));
    assert!(Supervisor::of(&s, &config()).session_pids().is_empty());
    s.close().await;
}
