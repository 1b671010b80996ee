//! The bwrap and remote sandbox backends with the real `hands` inside: `hands call` under
//! `sandbox.backend = "bwrap"` runs bash in bubblewrap; a registry with hands' own tools proxied to
//! an inner `hands mcp` forwards bash's progress to the host call, brings back what an aborted
//! bash printed (and its process is gone), keeps each host session's state (the stale-write
//! guard) apart, switches plan mode on the host, recovers from a killed sandbox between and during
//! calls and gives up after three recoveries; a remote `hands serve` that is killed is brought
//! back by `recreate`, and an aborted call there also brings back its partial output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hands_core::{
    CallOptions, CancellationToken, CoreConfig, Mode, Progress, Registry, Session, ToolCall,
    ToolOutput,
};
use hands_mcp::sandbox::{Bwrap, ProxyProcesses, ProxyProvider, find_on_path};
use serde_json::json;

fn hands_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("hands")
}

/// bubblewrap, or None locally when it is missing (CI must have it: the test fails there).
fn bwrap() -> Option<PathBuf> {
    let found = find_on_path("bwrap");
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "bwrap is required in CI (apt-get install bubblewrap)"
        );
        eprintln!("!!!!! bwrap is not installed: SKIPPING this sandbox test !!!!!");
    }
    found
}

#[test]
fn hands_call_runs_bash_inside_bubblewrap() {
    if bwrap().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(hands_bin())
        .args(["--root"])
        .arg(tmp.path())
        .args(["-c", "sandbox.backend=\"bwrap\"", "-c", "sandbox.network=false"])
        .args([
            "call",
            "bash",
            "command=tr '\\0' ' ' < /proc/1/cmdline; echo; tail -n +3 /proc/net/dev | cut -d: -f1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("bwrap --ro-bind / /") && stdout.contains("--unshare-net"), "{stdout}");
    assert!(stdout.contains(" mcp --root "), "the inner is hands mcp: {stdout}");
    assert!(!stdout.contains("eth"), "no network: {stdout}");
}

#[test]
fn hands_call_overwrites_an_existing_file_inside_bubblewrap() {
    // A `hands call` session is one-shot on the host; the inner hands must treat it so too, or
    // its stale-write guard refuses to overwrite a file the single call never read.
    if bwrap().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "old\n").unwrap();
    let out = std::process::Command::new(hands_bin())
        .args(["--root"])
        .arg(tmp.path())
        .args(["-c", "sandbox.backend=\"bwrap\""])
        .args(["call", "write_file", "path=notes.txt", "content=new"])
        .output()
        .unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert_eq!(std::fs::read_to_string(tmp.path().join("notes.txt")).unwrap(), "new");
}

#[test]
fn command_line_settings_reach_the_inner_hands() {
    // `-c fs.read_limit=1` on the host must hold inside: read_file shows one line, not three.
    if bwrap().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("three.txt"), "first\nsecond\nthird\n").unwrap();
    let out = std::process::Command::new(hands_bin())
        .args(["--root"])
        .arg(tmp.path())
        .args(["-c", "sandbox.backend=\"bwrap\"", "-c", "fs.read_limit=1"])
        .args(["call", "read_file", "path=three.txt"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("first"), "{stdout}");
    assert!(!stdout.contains("third"), "the inner hands ignored -c fs.read_limit=1: {stdout}");
}

struct Fixture {
    _tmp: tempfile::TempDir,
    project: String,
    provider: Arc<ProxyProvider>,
    registry: Registry,
    session: Session,
}

fn bwrap_fixture() -> Option<Fixture> {
    let bwrap = bwrap()?;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let inner =
        vec![hands_bin().display().to_string(), "mcp".into(), "--root".into(), "{root}".into()];
    let provider = Arc::new(
        ProxyProvider::bwrap(Bwrap { bwrap, inner, slirp: None, hidden: Default::default() })
            .unwrap(),
    );
    Some(fixture(tmp, &root, provider))
}

fn fixture(tmp: tempfile::TempDir, root: &Path, provider: Arc<ProxyProvider>) -> Fixture {
    let mut config = CoreConfig::default();
    config.recovery.wait_ms = 50;
    let builder = Registry::builder(config);
    let builder = hands_fs::register(builder, &hands_fs::FsConfig::default());
    let builder = hands_exec::register(builder, &hands_exec::ExecConfig::default());
    let builder = hands_agent::register(builder);
    let registry = builder.sandbox(provider.clone()).build();
    let session = Session::new("s", root);
    Fixture { _tmp: tmp, project: root.to_string_lossy().into_owned(), provider, registry, session }
}

impl Fixture {
    async fn bash(&self, command: &str) -> Result<ToolOutput, hands_core::DispatchError> {
        self.registry
            .dispatch(&self.session, ToolCall::new("c", "bash", json!({"command": command})))
            .await
    }

    async fn call(&self, session: &Session, tool: &str, args: serde_json::Value) -> ToolOutput {
        self.registry.dispatch(session, ToolCall::new("c", tool, args)).await.unwrap()
    }

    /// `echo started; sleep 30`, aborted after 1 s: what it printed comes back, promptly, and
    /// its `sleep` (marked by an exported variable) is gone.
    async fn abort_a_long_bash(&self) {
        let mark = format!("HANDS_TEST_ABORT={}-{}", std::process::id(), self.project.len());
        let command = format!("export {mark}; echo started; sleep 30");
        let cancel = CancellationToken::new();
        let options = CallOptions { progress: None, cancel: Some(cancel.clone()) };
        let call = ToolCall::new("long", "bash", json!({"command": command}));
        let started = Instant::now();
        let canceller = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert!(!common::live_with_env(&mark).is_empty(), "the command is running inside");
            cancel.cancel();
        };
        let (out, ()) =
            tokio::join!(self.registry.dispatch_with(&self.session, call, options), canceller);
        let elapsed = started.elapsed();
        let out = out.unwrap();
        let text = out.joined_text();
        assert!(out.is_error, "{out:?}");
        assert!(text.contains("started"), "what it printed comes back: {text}");
        assert!(text.contains("bash was aborted"), "{text}");
        assert_eq!(text.matches("bash was aborted before it finished.").count(), 1, "{text}");
        assert!(elapsed < Duration::from_secs(8), "took {elapsed:?}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while !common::live_with_env(&mark).is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(common::live_with_env(&mark), Vec::<u32>::new(), "the inner sleep is gone");
    }

    async fn kill(&self) {
        let pid = self.provider.pid(&self.project).await.unwrap();
        assert!(
            std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_real_inner_hands_is_recovered_three_times_then_gives_up() {
    let Some(f) = bwrap_fixture() else { return };
    std::fs::write(f._tmp.path().join("a.txt"), "inside\n").unwrap();
    let out = f
        .registry
        .dispatch(&f.session, ToolCall::new("r", "read_file", json!({"path": "a.txt"})))
        .await
        .unwrap();
    assert!(out.joined_text().contains("inside"), "{out:?}");
    let out = f.bash("tr '\\0' ' ' < /proc/1/cmdline").await.unwrap();
    assert!(out.joined_text().contains("bwrap"), "{out:?}");

    // Killed between calls.
    f.kill().await;
    let out = f.bash("echo one").await.unwrap();
    assert!(out.joined_text().contains("one"), "{out:?}");

    // Killed during a call: the call is run again in the fresh sandbox.
    let call = f.bash("sleep 1; echo two");
    let killer = async {
        tokio::time::sleep(Duration::from_millis(400)).await;
        f.kill().await;
    };
    let (out, ()) = tokio::join!(call, killer);
    assert!(out.unwrap().joined_text().contains("two"));

    f.kill().await;
    assert!(f.bash("echo three").await.unwrap().joined_text().contains("three"));

    f.kill().await;
    let err = f.bash("echo four").await.unwrap_err();
    assert!(err.to_string().contains("after 3 recoveries; giving up"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_of_a_proxied_bash_reaches_the_host_call() {
    let Some(f) = bwrap_fixture() else { return };
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = Arc::clone(&seen);
    let options = CallOptions {
        progress: Some(Arc::new(move |p: Progress| sink.lock().unwrap().push(p))),
        cancel: None,
    };
    let command = "for i in 1 2 3; do echo $i; sleep 0.3; done";
    let call = ToolCall::new("p", "bash", json!({"command": command}));
    let out = f.registry.dispatch_with(&f.session, call, options).await.unwrap();
    assert!(out.joined_text().contains("1\n2\n3"), "{out:?}");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "bash inside reports every 200 ms: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0].progress < w[1].progress), "{seen:?}");
    assert!(seen.iter().any(|p| p.message.as_deref().is_some_and(|m| m.contains("bytes"))));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aborted_proxied_bash_returns_what_it_printed_and_stops() {
    let Some(f) = bwrap_fixture() else { return };
    f.abort_a_long_bash().await;
    // The session goes on.
    assert!(f.bash("echo after").await.unwrap().joined_text().contains("after"));
}

#[tokio::test(flavor = "multi_thread")]
async fn host_sessions_do_not_share_the_stale_write_guard() {
    let Some(f) = bwrap_fixture() else { return };
    std::fs::write(f._tmp.path().join("f.txt"), "original\n").unwrap();
    let a = &f.session;
    let b = Session::new("b", Path::new(&f.project));
    let out = f.call(a, "read_file", json!({"path": "f.txt"})).await;
    assert!(out.joined_text().contains("original"), "{out:?}");

    let out = f.call(&b, "write_file", json!({"path": "f.txt", "content": "from b\n"})).await;
    assert!(out.is_error && out.joined_text().contains("has not read"), "{out:?}");
    let on_disk = std::fs::read_to_string(f._tmp.path().join("f.txt")).unwrap();
    assert_eq!(on_disk, "original\n");

    let out = f.call(a, "write_file", json!({"path": "f.txt", "content": "from a\n"})).await;
    assert!(!out.is_error, "a read it: {out:?}");
    assert_eq!(std::fs::read_to_string(f._tmp.path().join("f.txt")).unwrap(), "from a\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_process_service_of_a_proxy_reaches_the_inner_processes() {
    let Some(fx) = bwrap_fixture() else { return };
    // The host's own exec service says which tools reach the inner one.
    let exec = hands_exec::ExecConfig { background_processes: true, ..Default::default() };
    let local = hands_exec::register(hands_core::Registry::builder(Default::default()), &exec)
        .build()
        .service::<Arc<dyn hands_core::ProcessService>>()
        .unwrap();
    let processes = ProxyProcesses::service(Arc::clone(&fx.provider), local.as_ref());
    assert!(processes.list(&fx.session).await.processes.is_empty());
    let args =
        json!({"command": "echo up; exec sleep 60", "type": "daemon", "ready_pattern": "up"});
    let out = fx.call(&fx.session, "spawn_process", args).await;
    assert!(!out.is_error, "{}", out.joined_text());
    // The host's own supervisor has nothing; the list comes from the inner hands.
    let list = processes.list(&fx.session).await;
    assert_eq!(list.processes.len(), 1, "{list:?}");
    assert_eq!(list.processes[0].status, hands_core::process::ProcessStatus::Running);
    let id = list.processes[0].id.clone();
    assert!(processes.output(&fx.session, &id, 5).await.unwrap().contains("up"));
    assert!(processes.stop(&fx.session, "p99").await.is_err());
    assert_eq!(processes.stop_running(&fx.session).await, 1);
    let list = processes.list(&fx.session).await;
    assert_ne!(list.processes[0].status, hands_core::process::ProcessStatus::Running, "{list:?}");
    fx.session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn plan_mode_under_bwrap_switches_the_host_session() {
    let Some(f) = bwrap_fixture() else { return };
    assert!(f.bash("true").await.unwrap().joined_text().contains("exit code 0"));
    let out = f.call(&f.session, "enter_plan_mode", json!({})).await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(f.session.mode(), Mode::Plan, "the host session is in plan mode");
    let out = f.bash("echo no").await.unwrap();
    assert!(out.is_error && out.joined_text().contains("not available in plan mode"), "{out:?}");
    let out = f.call(&f.session, "list_files", json!({})).await;
    assert!(!out.is_error, "read-only tools still run inside: {out:?}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_remote_sandbox_is_recreated() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let port = free_port();
    let pidfile = root.join("serve.pid");
    let start = format!(
        "nohup {} serve --root {} --listen 127.0.0.1:{port} --token sekret >/dev/null 2>&1 & echo $! > {}",
        hands_bin().display(),
        root.display(),
        pidfile.display()
    );
    assert!(std::process::Command::new("sh").args(["-c", &start]).status().unwrap().success());
    let provider = Arc::new(
        ProxyProvider::remote(
            format!("http://127.0.0.1:{port}/mcp"),
            Some("sekret".into()),
            Some(start.clone()),
        )
        .unwrap(),
    );
    // The first connection may come before the server listens.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let f = fixture(tmp, &root, provider);
    let out = f.bash("echo first").await.unwrap();
    assert!(out.joined_text().contains("first"), "{out:?}");

    let pid = std::fs::read_to_string(&pidfile).unwrap();
    assert!(
        std::process::Command::new("kill").args(["-9", pid.trim()]).status().unwrap().success()
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    let out = f.bash("echo second").await;
    let new_pid = std::fs::read_to_string(&pidfile).unwrap();
    let _ = std::process::Command::new("kill").arg(new_pid.trim()).status();
    let out = out.unwrap();
    assert!(out.joined_text().contains("second"), "{out:?}");
    assert_ne!(pid, new_pid, "recreate started a new server");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_aborted_remote_bash_returns_what_it_printed_and_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let port = free_port();
    let _serve = KillOnDrop(
        std::process::Command::new(hands_bin())
            .args(["serve", "--root"])
            .arg(&root)
            .args(["--listen", &format!("127.0.0.1:{port}"), "--token", "sekret"])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    let provider = Arc::new(ProxyProvider::remote(url, Some("sekret".into()), None).unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let f = fixture(tmp, &root, provider);
    f.abort_a_long_bash().await;
}

/// A child process killed when the test ends, passed or failed.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
