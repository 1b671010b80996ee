//! A project in a temp folder (a copy of a fixture, its node_modules linked) with the preview
//! tools registered, a session to call them in, and helpers that look under /proc for what the
//! session left running.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use hands_exec::ExecConfig;
use hands_preview::PreviewConfig;
use serde_json::{Value, json};

/// The folder of a fixture under tests/preview/fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/preview/fixtures").join(name)
}

/// True when `program` exists. Missing: a failure under CI (which installs it), a loud skip
/// elsewhere.
pub fn require(program: &Path, how: &str) -> bool {
    if program.exists() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("{} is missing, and CI must have it: {how}", program.display());
    }
    eprintln!("\n!!! SKIPPED: {} is missing ({how}) !!!\n", program.display());
    false
}

/// Chromium, and the fixture's npm packages when it has a package.json.
pub fn require_for(name: &str) -> bool {
    let chromium = require(Path::new("/usr/bin/chromium"), "apt-get install chromium");
    let packages = !fixture(name).join("package.json").exists()
        || require(
            &fixture(name).join("node_modules/.bin"),
            &format!("npm ci in tests/preview/fixtures/{name} (.ci/run does it)"),
        );
    chromium && packages
}

pub struct Env {
    pub tmp: tempfile::TempDir,
    pub registry: Registry,
    pub session: Session,
    pub config: PreviewConfig,
}

/// Copy `from` into `to`, linking `node_modules` instead of copying it.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let name = entry.file_name();
        let (src, dst) = (entry.path(), to.join(&name));
        let skip = [".vite-cache", "dist", ".hands"];
        if skip.iter().any(|s| name == *s) {
            continue;
        }
        if name == "node_modules" {
            std::os::unix::fs::symlink(&src, &dst).unwrap();
        } else if entry.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

impl Env {
    /// A copy of fixture `name` with `config`.
    pub fn fixture(name: &str, change: impl FnOnce(&mut PreviewConfig)) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&fixture(name), tmp.path());
        Self::at(tmp, change)
    }

    /// A project of `files` (name, content) with `config`.
    pub fn with_files(files: &[(&str, &str)], change: impl FnOnce(&mut PreviewConfig)) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(tmp.path().join(name), text).unwrap();
        }
        Self::at(tmp, change)
    }

    /// An empty project with `config`.
    pub fn empty(change: impl FnOnce(&mut PreviewConfig)) -> Self {
        Self::at(tempfile::tempdir().unwrap(), change)
    }

    fn at(tmp: tempfile::TempDir, change: impl FnOnce(&mut PreviewConfig)) -> Self {
        // Loose limits: CI shares two cores between several test binaries.
        let mut config = PreviewConfig {
            ready_timeout_ms: 60_000,
            browser_timeout_ms: 60_000,
            ..PreviewConfig::default()
        };
        change(&mut config);
        let mut core = CoreConfig::default();
        core.timeouts.default_ms = 300_000;
        let exec = ExecConfig::default();
        let builder = hands_exec::register(Registry::builder(core), &exec);
        let registry = hands_preview::register(builder, &config, &exec, tmp.path()).build();
        let name = tmp.path().file_name().unwrap().to_string_lossy().into_owned();
        let session = Session::new(format!("preview-test-{name}"), tmp.path());
        Self { tmp, registry, session, config }
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
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

    /// A call that must fail: its text and structured result.
    pub async fn err(&self, tool: &str, args: Value) -> (String, Value) {
        let out = self.call(tool, args.clone()).await;
        let text = out.joined_text();
        assert!(out.is_error, "{tool} {args} should have failed: {text}");
        (text, out.structured.unwrap_or(Value::Null))
    }

    /// Open the preview; it must get to `ready`.
    pub async fn open(&self) -> Value {
        let (text, status) = self.ok("preview_open", json!({})).await;
        assert_eq!(status["stage"], "ready", "{text}");
        status
    }

    /// read_runtime_errors until `found` holds for one of the entries read so far (from cursor
    /// 0), or `within` passes. Returns every entry read.
    pub async fn errors_until(
        &self,
        within: Duration,
        found: impl Fn(&Value) -> bool,
    ) -> Vec<Value> {
        self.errors_until_all(within, |errors| errors.iter().any(&found)).await
    }

    /// read_runtime_errors until `done` holds for the entries read so far (from cursor 0), or
    /// `within` passes. Returns every entry read.
    pub async fn errors_until_all(
        &self,
        within: Duration,
        done: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + within;
        loop {
            let (_, result) = self.ok("read_runtime_errors", json!({"since": 0})).await;
            let errors = result["errors"].as_array().cloned().unwrap_or_default();
            if done(&errors) || Instant::now() > deadline {
                return errors;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Live processes that carry this session's marker.
    pub fn marked(&self) -> Vec<u32> {
        marked_pids(self.session.id())
    }

    /// Wait until nothing of this session runs (a stop reaps asynchronously).
    pub async fn nothing_left(&self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.marked().is_empty() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }
}

impl Drop for Env {
    /// A failed test must not leave its processes behind.
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
            .unwrap_or(true);
        if marked && !zombie {
            pids.push(pid);
        }
    }
    pids
}

/// The first entry of `kind` whose message contains `text`.
pub fn find<'a>(errors: &'a [Value], kind: &str, text: &str) -> Option<&'a Value> {
    errors
        .iter()
        .find(|e| e["kind"] == kind && e["message"].as_str().is_some_and(|m| m.contains(text)))
}

/// Evaluate `expression` in the preview's page through the DevTools endpoint of the discovery
/// file (as another tool would).
pub async fn evaluate(root: &Path, expression: &str) -> Value {
    let discovery: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(".hands/devtools.json")).unwrap())
            .unwrap();
    let ws = discovery["browserWsEndpoint"].as_str().unwrap();
    let target = discovery["targetId"].as_str().unwrap();
    let (cdp, _events) = hands_preview::cdp::Cdp::connect(ws).await.unwrap();
    let attached = cdp
        .call("Target.attachToTarget", json!({"targetId": target, "flatten": true}), None)
        .await
        .unwrap();
    let session = attached["sessionId"].as_str().unwrap().to_owned();
    let result = cdp
        .call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
            Some(&session),
        )
        .await
        .unwrap();
    cdp.close();
    result["result"]["value"].clone()
}
