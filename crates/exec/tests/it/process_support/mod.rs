//! A project in a temp folder with the process tools registered, a session to call them in, and
//! helpers to look under /proc for what the session left running.
#![allow(dead_code)]

use std::time::Duration;

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use hands_exec::ExecConfig;
use serde_json::Value;

pub struct Env {
    pub tmp: tempfile::TempDir,
    pub registry: Registry,
    pub session: Session,
    pub config: ExecConfig,
}

impl Env {
    pub fn new() -> Self {
        Self::with(|_| {})
    }

    pub fn with(change: impl FnOnce(&mut ExecConfig)) -> Self {
        let mut config = ExecConfig::default();
        change(&mut config);
        let tmp = tempfile::tempdir().unwrap();
        let registry =
            hands_exec::register(Registry::builder(CoreConfig::default()), &config).build();
        let name = tmp.path().file_name().unwrap().to_string_lossy().into_owned();
        let session = Session::new(format!("test-{name}"), tmp.path());
        Self { tmp, registry, session, config }
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let id = self.session.next_call_id();
        self.registry.dispatch(&self.session, ToolCall::new(id, tool, args)).await.unwrap()
    }

    /// A successful call: its text and structured result.
    pub async fn ok(&self, tool: &str, args: Value) -> (String, Value) {
        let out = self.call(tool, args.clone()).await;
        let text = out.joined_text();
        assert!(!out.is_error, "{tool} {args} failed: {text}");
        (text, out.structured.unwrap_or(Value::Null))
    }

    /// The message of a call that must fail.
    pub async fn err(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args.clone()).await;
        let text = out.joined_text();
        assert!(out.is_error, "{tool} {args} should have failed: {text}");
        text
    }

    /// Pids of live processes that carry this session's marker.
    pub fn marked(&self) -> Vec<u32> {
        marked_pids(self.session.id())
    }
}

impl Drop for Env {
    /// A failed test must not leave its processes behind for the next one.
    fn drop(&mut self) {
        for pid in self.marked() {
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
    }
}

/// Live (not zombie) processes whose environment holds `HANDS_SESSION=<session>`.
pub fn marked_pids(session: &str) -> Vec<u32> {
    let marker = format!("HANDS_SESSION={session}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { continue };
        let marked = environ.split(|b| *b == 0).any(|var| var == marker.as_bytes());
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().starts_with('Z')))
            .unwrap_or(false);
        if marked && !zombie {
            pids.push(pid);
        }
    }
    pids
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// node's path; without it the test fails under CI and is skipped loudly elsewhere.
pub fn node() -> Option<String> {
    let found = ["/usr/bin/node", "/usr/local/bin/node"]
        .iter()
        .map(|p| p.to_string())
        .find(|p| std::path::Path::new(p).exists())
        .or_else(|| {
            let out =
                std::process::Command::new("sh").args(["-c", "command -v node"]).output().ok()?;
            let path = String::from_utf8(out.stdout).ok()?.trim().to_owned();
            (!path.is_empty()).then_some(path)
        });
    if found.is_none() {
        assert!(std::env::var_os("CI").is_none(), "node is required under CI and is missing");
        eprintln!("SKIPPED: node is not installed; this test needs it");
    }
    found
}

/// Poll `check` until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}
