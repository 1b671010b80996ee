//! The test kit: a project in a temp folder, a registry with the file tools and the code tools,
//! the servers from tests/lsp (or `HANDS_LSP_BIN`), and the check that a closed session left no
//! process behind.

use std::path::{Path, PathBuf};

use hands_code::CodeConfig;
use hands_core::{CoreConfig, Registry, Session, ToolCall, ToolOutput};
use hands_exec::{ExecConfig, Supervisor};
use serde_json::Value;

/// The folder with the npm servers' binaries; None (and a loud skip) when absent locally, a
/// failure under CI.
pub fn lsp_bin() -> Option<PathBuf> {
    let dir = std::env::var_os("HANDS_LSP_BIN").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lsp/node_modules/.bin")
    });
    if dir.join("typescript-language-server").exists() && dir.join("pyright-langserver").exists() {
        return Some(dir);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "the language servers are missing from {}: run `npm ci` in tests/lsp",
            dir.display()
        );
    }
    eprintln!("SKIPPED: no language servers in {} (run `npm ci` in tests/lsp)", dir.display());
    None
}

/// A project, a session on it and a registry.
pub struct Project {
    _dir: tempfile::TempDir,
    pub session: Session,
    pub registry: Registry,
    calls: std::sync::atomic::AtomicUsize,
}

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Project {
    pub fn new(files: &[(&str, &str)], config: CodeConfig) -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        // The writing tools' own limits (30 s) must not cut the diagnostics wait a test sets
        // above them on a loaded machine: they get the wait plus the request time.
        let mut core = CoreConfig::default();
        let limit = config.diagnostics_wait_ms.saturating_add(config.request_timeout_ms);
        for tool in ["write_file", "edit_file", "apply_patch"] {
            core.timeouts.tools.insert(tool.into(), limit.max(30_000));
        }
        let builder = hands_fs::register(Registry::builder(core), &Default::default());
        let registry = hands_code::register(builder, &config, &ExecConfig::default()).build();
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let session = Session::new(format!("code-it-{}-{n}", std::process::id()), dir.path());
        Self { _dir: dir, session, registry, calls: Default::default() }
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.registry
            .dispatch(&self.session, ToolCall::new(format!("c{n}"), tool, args))
            .await
            .unwrap()
    }

    /// Close the session and assert that none of its processes is left.
    pub async fn close(self) {
        let supervisor = Supervisor::of(&self.session, &ExecConfig::default());
        self.session.close().await;
        let left = supervisor.session_pids();
        assert!(left.is_empty(), "processes left after the session closed: {left:?}");
    }
}

/// The notices of a result, as text.
pub fn notices(out: &ToolOutput) -> String {
    out.notices.iter().map(|n| n.text.clone()).collect::<Vec<_>>().join("\n")
}

/// A config with the npm servers from `bin`.
pub fn config_with(bin: &Path) -> CodeConfig {
    let mut config = CodeConfig::default();
    let ts = bin.join("typescript-language-server").to_string_lossy().into_owned();
    let py = bin.join("pyright-langserver").to_string_lossy().into_owned();
    config.servers.insert("typescript".into(), vec![ts, "--stdio".into()]);
    config.servers.insert("python".into(), vec![py, "--stdio".into()]);
    // The first check of a cold server takes seconds on a slow machine: the test waits for the
    // answer in the edit's own result rather than a later one.
    config.diagnostics_wait_ms = 60_000;
    config.request_timeout_ms = 60_000;
    config
}
