//! The bwrap and remote sandbox backends with the real `hands` inside: `hands call` under
//! `sandbox.backend = "bwrap"` runs bash in bubblewrap; a registry with hands' own tools proxied to
//! an inner `hands mcp` recovers from a killed sandbox between and during calls and gives up after
//! three recoveries; a remote `hands serve` that is killed is brought back by `recreate`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use hands_mcp::sandbox::{ProxyProvider, find_on_path};
use serde_json::json;

fn hands_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("hands")
}

#[test]
fn hands_call_runs_bash_inside_bubblewrap() {
    if find_on_path("bwrap").is_none() {
        eprintln!("skipped: bwrap is not installed");
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

struct Fixture {
    _tmp: tempfile::TempDir,
    project: String,
    provider: Arc<ProxyProvider>,
    registry: Registry,
    session: Session,
}

fn bwrap_fixture() -> Option<Fixture> {
    let bwrap = find_on_path("bwrap")?;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let inner =
        vec![hands_bin().display().to_string(), "mcp".into(), "--root".into(), "{root}".into()];
    let provider = Arc::new(ProxyProvider::bwrap(bwrap, inner, true).unwrap());
    Some(fixture(tmp, &root, provider))
}

fn fixture(tmp: tempfile::TempDir, root: &Path, provider: Arc<ProxyProvider>) -> Fixture {
    let mut config = CoreConfig::default();
    config.recovery.wait_ms = 50;
    let builder = Registry::builder(config);
    let builder = hands_fs::register(builder, &hands_fs::FsConfig::default());
    let builder = hands_exec::register(builder, &hands_exec::ExecConfig::default());
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
