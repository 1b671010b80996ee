//! The bwrap backend at the library level: a registry whose tools run in an inner MCP server (the
//! `echo_server` example, standing in for `hands mcp`) under bubblewrap. Calls run inside (own PID
//! namespace, private /tmp); a sandbox killed between or during calls is recovered and the call
//! retried; the fourth loss for a project fails hard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use hands_core::{
    BoxFuture, Context, CoreConfig, DynTool, Registry, Session, ToolCall, ToolError, ToolOutput,
    ToolSpec,
};
use hands_mcp::sandbox::{ProxyProvider, find_on_path};
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
    fn call_json(
        &self,
        _ctx: Context,
        _args: Value,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("ran on the host")) })
    }
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

fn fixture(network: bool) -> Option<Fixture> {
    let Some(bwrap) = find_on_path("bwrap") else {
        eprintln!("skipped: bwrap is not installed");
        return None;
    };
    let _ = logs();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let provider = Arc::new(
        ProxyProvider::bwrap(bwrap, vec![echo_server().display().to_string()], network).unwrap(),
    );
    let mut config = CoreConfig::default();
    config.recovery.wait_ms = 50;
    let registry = Registry::builder(config)
        .dyn_tool(host_tool("sh"))
        .dyn_tool(host_tool("sleep"))
        .dyn_tool(host_tool("pid"))
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
