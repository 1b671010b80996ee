//! The bwrap backend at the library level: a registry whose tools run in an inner MCP server (the
//! `echo_server` example, standing in for `hands mcp`) under bubblewrap. Calls run inside (own PID
//! namespace, private /tmp); each host session has its own inner server, which ends with the
//! session; progress comes back to the host call; the host follows the inner server's tool list;
//! a sandbox killed between or during calls is recovered and the call retried; the fourth loss for
//! a project fails hard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hands_core::{
    BoxFuture, CallOptions, Context, CoreConfig, DynTool, Progress, Registry, Session, ToolCall,
    ToolError, ToolOutput, ToolSpec,
};
use hands_mcp::sandbox::{Bwrap, ProxyProvider, find_on_path};
use serde_json::{Value, json};

fn echo_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join("examples").join("echo_server")
}

/// Stands for a hands tool: the host has it, the sandbox runs it (by name).
struct HostTool(ToolSpec);

impl DynTool for HostTool {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn run<'a>(
        &'a self,
        _: Context,
        _: &'a Value,
        _: &'a hands_core::Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("ran on the host")) })
    }
}

/// A tool whose policy says it acts for the host session (as enter_plan_mode's does).
fn session_tool(name: &str) -> Arc<dyn DynTool> {
    let mut spec = host_tool(name).spec().clone();
    spec.policy = spec.policy.on_host();
    Arc::new(HostTool(spec))
}

fn host_tool(name: &str) -> Arc<dyn DynTool> {
    Arc::new(HostTool(ToolSpec {
        name: name.into(),
        description: String::new(),
        input_schema: json!({"type": "object"}),
        output_schema: None,
        annotations: hands_core::Annotations::default(),
        needs_approval: false,
        cacheable: false,
        policy: hands_core::Policy::from_annotations(hands_core::Annotations::default()),
    }))
}

/// Log lines of every test in this binary.
fn logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let writer = Arc::clone(&buf);
        tracing_subscriber::fmt()
            .with_env_filter("warn")
            .with_writer(move || Sink(Arc::clone(&writer)))
            .init();
        buf
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    provider: Arc<ProxyProvider>,
    registry: Registry,
    session: Session,
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

fn fixture(network: bool) -> Option<Fixture> {
    let bwrap = bwrap()?;
    let _ = logs();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    // network = true: slirp4netns's network (which cannot reach the host's loopback).
    let slirp = network.then(|| find_on_path("slirp4netns").expect("slirp4netns is installed"));
    let inner = vec![echo_server().display().to_string()];
    let provider = Arc::new(
        ProxyProvider::bwrap(Bwrap { bwrap, inner, slirp, hidden: Default::default() }).unwrap(),
    );
    let mut config = CoreConfig::default();
    config.recovery.wait_ms = 50;
    let registry = Registry::builder(config)
        .dyn_tool(host_tool("sh"))
        .dyn_tool(host_tool("sleep"))
        .dyn_tool(host_tool("pid"))
        .dyn_tool(host_tool("toggle"))
        .dyn_tool(host_tool("extra"))
        .dyn_tool(session_tool("enter_plan_mode"))
        .sandbox(provider.clone())
        .build();
    let session = Session::new("s1", &root);
    Some(Fixture { _tmp: tmp, root, provider, registry, session })
}

impl Fixture {
    async fn sh(&self, command: &str) -> ToolOutput {
        self.registry
            .dispatch(&self.session, ToolCall::new("c", "sh", json!({"command": command})))
            .await
            .unwrap()
    }

    async fn kill(&self) {
        let project = self.root.to_string_lossy().into_owned();
        let pid = self.provider.pid(&project).await.expect("a sandbox is running");
        assert!(
            std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .unwrap()
                .success()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_run_inside_bubblewrap() {
    let Some(f) = fixture(false) else { return };
    let marker = PathBuf::from(format!("/tmp/hands-host-marker-{}", std::process::id()));
    std::fs::write(&marker, "host").unwrap();
    let out = f.sh("tr '\\0' ' ' < /proc/1/cmdline; echo; ls -A /tmp; pwd; touch inside.txt; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").await;
    std::fs::remove_file(&marker).unwrap();
    let text = out.joined_text();
    assert!(!out.is_error, "{text}");
    assert!(
        text.lines().next().unwrap().contains("bwrap --ro-bind"),
        "pid 1 is bwrap's init in its own PID namespace: {text}"
    );
    assert!(!text.contains("hands-host-marker"), "/tmp is private: {text}");
    let tmp_entries: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(tmp_entries.len(), 1, "only the root's own folder is in /tmp: {text}");
    assert!(text.contains(&f.root.display().to_string()), "runs in the root: {text}");
    assert!(f.root.join("inside.txt").exists(), "the root is writable and shared");
    assert_eq!(text.lines().last(), Some("lo"), "network = false leaves only loopback: {text}");
    let outside = f.sh("touch /usr/hands-escape 2>&1; echo rc=$?").await.joined_text();
    assert!(outside.contains("Read-only file system"), "{outside}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_killed_between_calls_is_recovered() {
    let Some(f) = fixture(false) else { return };
    let first = f.sh("echo $PPID").await;
    assert!(!first.is_error);
    f.kill().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = f.sh("echo again").await;
    assert_eq!(second.joined_text().trim(), "again", "{second:?}");
    let logs = String::from_utf8(logs().lock().unwrap().clone()).unwrap();
    assert!(logs.contains("sandbox_recovery_attempted"), "{logs}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sandbox_killed_during_a_call_is_recovered() {
    let Some(f) = fixture(true) else { return };
    f.sh("true").await;
    let started = std::time::Instant::now();
    let call = f.registry.dispatch(&f.session, ToolCall::new("long", "sleep", json!({"ms": 1500})));
    let killer = async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        f.kill().await;
    };
    let (out, ()) = tokio::join!(call, killer);
    let out = out.unwrap();
    assert_eq!(out.joined_text(), "slept 1500 ms", "{out:?}");
    assert!(started.elapsed() >= Duration::from_millis(2000), "the call ran again after the loss");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fourth_loss_fails_hard() {
    let Some(f) = fixture(true) else { return };
    f.sh("true").await;
    for round in 1..=3 {
        f.kill().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let out = f.sh(&format!("echo round {round}")).await;
        assert_eq!(out.joined_text().trim(), format!("round {round}"));
    }
    f.kill().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let err = f
        .registry
        .dispatch(&f.session, ToolCall::new("c", "sh", json!({"command": "echo 4"})))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("after 3 recoveries; giving up"), "{err}");
}

fn pid_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
}

#[tokio::test(flavor = "multi_thread")]
async fn each_host_session_has_its_own_inner_server_until_it_closes() {
    let Some(f) = fixture(true) else { return };
    let other = Session::new("s2", &f.root);
    let project = f.root.to_string_lossy().into_owned();
    let sh = |session: &Session| {
        let (registry, session) = (&f.registry, session.clone());
        async move {
            let call = ToolCall::new("c", "sh", json!({"command": "echo hi"}));
            registry.dispatch(&session, call).await.unwrap().joined_text()
        }
    };
    assert_eq!(sh(&f.session).await.trim(), "hi");
    assert_eq!(sh(&other).await.trim(), "hi");
    let first = f.provider.session_pid(&project, "s1").await.unwrap();
    let second = f.provider.session_pid(&project, "s2").await.unwrap();
    assert_ne!(first, second, "two host sessions, two inner servers");
    sh(&f.session).await;
    assert_eq!(f.provider.session_pid(&project, "s1").await, Some(first), "kept per session");
    assert!(pid_alive(second));

    other.close().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while pid_alive(second) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!pid_alive(second), "the closed session's sandbox is gone");
    assert_eq!(f.provider.session_pid(&project, "s2").await, None);
    assert_eq!(sh(&f.session).await.trim(), "hi");
    assert_eq!(f.provider.session_pid(&project, "s1").await, Some(first), "the other one stays");
}

#[tokio::test(flavor = "multi_thread")]
async fn progress_of_a_proxied_call_reaches_the_host_call() {
    let Some(f) = fixture(true) else { return };
    let seen = Arc::new(Mutex::new(Vec::<Progress>::new()));
    let sink = Arc::clone(&seen);
    let options = CallOptions {
        progress: Some(Arc::new(move |p: Progress| sink.lock().unwrap().push(p))),
        cancel: None,
    };
    let call = ToolCall::new("s", "sleep", json!({"ms": 800}));
    let out = f.registry.dispatch_with(&f.session, call, options).await.unwrap();
    assert_eq!(out.joined_text(), "slept 800 ms");
    let seen = seen.lock().unwrap().clone();
    assert!(seen.len() >= 2, "the inner server reports every 100 ms: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0].progress < w[1].progress), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_host_follows_the_inner_tool_list() {
    let Some(f) = fixture(true) else { return };
    let extra = || f.registry.dispatch(&f.session, ToolCall::new("x", "extra", json!({})));
    let refused = extra().await.unwrap();
    assert!(refused.is_error, "{refused:?}");
    assert!(refused.joined_text().contains("extra is not available in the sandbox"), "{refused:?}");
    assert!(refused.joined_text().contains("toggle"), "names what it offers: {refused:?}");

    let out = f.registry.dispatch(&f.session, ToolCall::new("t", "toggle", json!({}))).await;
    assert_eq!(out.unwrap().joined_text(), "extra on");
    // The list is fetched again when the notification arrives, just after the answer.
    let deadline = Instant::now() + Duration::from_secs(10);
    let out = loop {
        let out = extra().await.unwrap();
        if !out.is_error || Instant::now() > deadline {
            break out;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(out.joined_text(), "extra", "{out:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn session_tools_run_on_the_host() {
    let Some(f) = fixture(true) else { return };
    // The inner echo server has no enter_plan_mode: run there, this would be refused.
    let out = f
        .registry
        .dispatch(&f.session, ToolCall::new("p", "enter_plan_mode", json!({})))
        .await
        .unwrap();
    assert_eq!(out.joined_text(), "ran on the host", "{out:?}");
}
