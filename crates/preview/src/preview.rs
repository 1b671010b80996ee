//! The preview of one session: its stage, what runs (server, browser, DevTools connection), the
//! error collector, and how it all stops.
//!
//! One [`Preview`] per session lives in a session extension, created on first use; creating it
//! registers a closer (the session's end stops the preview and removes the discovery file) and a
//! notice source (other tools' results carry one line when new errors arrived). Opening, closing
//! and rebuilding take the `op` lock, so they never interleave. Long-lived tasks (the event loop,
//! the process monitors, the watcher) hold only a weak reference and stop with the running
//! preview's token.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, SystemTime};

use hands_core::Session;
use hands_exec::{ExecConfig, Proc, Status, Supervisor};
use schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::PreviewConfig;
use crate::cdp::Cdp;
use crate::collector::Collector;
use crate::detect::{Plan, ProjectKind};
use crate::discovery;
use crate::sourcemap::Mapper;
use crate::static_server::StaticServer;

/// What the tools share: the preview's and the process tools' settings.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `[preview]`
    pub preview: PreviewConfig,
    /// `[bash]`, `[processes]`: the supervisor's settings.
    pub exec: ExecConfig,
    /// `[net]`: the rule of the page's requests outside its origin (the egress proxy's).
    pub net: hands_net::NetConfig,
}

pub use hands_core::preview::Stage;

/// What the status shows, kept as the preview goes.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    pub stage: Stage,
    pub last_error: Option<String>,
    pub kind: Option<ProjectKind>,
    pub port: Option<u16>,
    pub preview_url: Option<String>,
    pub cdp_port: Option<u16>,
    pub ws_endpoint: Option<String>,
    pub target_id: Option<String>,
    pub started_at: Option<SystemTime>,
    pub server_pid: Option<u32>,
    pub browser_pid: Option<u32>,
    pub open_ms: Option<u64>,
    /// The agent's process the preview attached to: its id and label (`p1 (`npm run dev`)`).
    pub attached: Option<(String, String)>,
}

/// What serves the app.
#[derive(Debug)]
pub(crate) enum ServerHandle {
    /// A supervised process the preview started.
    Process(Arc<Proc>),
    /// The built-in static server.
    Builtin(StaticServer),
    /// A background process of the agent's (its dev server): used, never stopped, by the preview.
    Attached(Arc<Proc>),
}

impl ServerHandle {
    pub fn is_alive(&self) -> bool {
        match self {
            Self::Process(proc) | Self::Attached(proc) => proc.status() == Status::Running,
            Self::Builtin(server) => server.is_running(),
        }
    }
}

/// What runs while the preview is open. Filled in stage by stage.
#[derive(Debug)]
pub(crate) struct Running {
    pub plan: Plan,
    pub url: String,
    pub server: Option<ServerHandle>,
    pub browser: Option<Arc<Proc>>,
    pub profile: Option<tempfile::TempDir>,
    pub cdp: Option<Arc<Cdp>>,
    /// The DevTools endpoint other tools reach the browser through (stops when dropped).
    pub devtools: Option<crate::devtools::Endpoint>,
    /// The page's flat session id.
    pub page: Option<String>,
    /// The proxy every request of the page but those to its origin goes through.
    pub egress: Option<crate::egress::Egress>,
    /// Fired at teardown: ends the event loop, the monitors and the watcher.
    pub stop: CancellationToken,
}

impl Running {
    pub fn new(plan: Plan) -> Self {
        Self {
            plan,
            url: String::new(),
            server: None,
            browser: None,
            profile: None,
            cdp: None,
            devtools: None,
            page: None,
            egress: None,
            stop: CancellationToken::new(),
        }
    }

    /// Server and browser up, page attached.
    pub fn is_healthy(&self) -> bool {
        self.server.as_ref().is_some_and(ServerHandle::is_alive)
            && self.browser.as_ref().is_some_and(|b| b.status() == Status::Running)
            && self.cdp.as_ref().is_some_and(|c| !c.is_closed())
            && self.page.is_some()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The session's slot for its preview.
#[derive(Default)]
struct Slot(OnceLock<Arc<Preview>>);

/// The preview of one session.
pub struct Preview {
    pub(crate) settings: Arc<Settings>,
    pub(crate) root: PathBuf,
    pub(crate) supervisor: Arc<Supervisor>,
    /// Serialises open, close and rebuild.
    pub(crate) op: tokio::sync::Mutex<()>,
    state: Mutex<State>,
    running: Mutex<Option<Running>>,
    /// What the page throws.
    pub errors: Collector,
    /// Every console message of the page.
    pub(crate) console: crate::console::ConsoleLog,
    /// The page's requests.
    pub(crate) network: crate::network::NetworkLog,
    /// The latest snapshot: the baseline of deltas and of refs.
    pub(crate) outline: Mutex<Option<crate::baseline::Baseline>>,
    /// The page's URL now and its main frame's id (route changes included).
    pub(crate) location: Mutex<(String, String)>,
    /// Where preview_network's and preview_console's last reads stopped.
    pub(crate) network_read: std::sync::atomic::AtomicU64,
    pub(crate) console_read: std::sync::atomic::AtomicU64,
    pub(crate) mapper: Mapper,
    /// The number of the last page load whose `load` event fired.
    pub(crate) loaded: watch::Sender<u64>,
    /// Written, so that a session end removes it.
    discovery_written: Mutex<Option<String>>,
    /// Restarts of the preview's own server after crashes in a row (see follow.rs).
    pub(crate) restarts: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for Preview {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Preview")
            .field("root", &self.root)
            .field("stage", &self.state().stage)
            .finish_non_exhaustive()
    }
}

impl Preview {
    /// The session's preview, created on first use.
    pub fn of(session: &Session, settings: &Arc<Settings>) -> Arc<Preview> {
        let slot = session.extension::<Slot>();
        let mut created = false;
        let preview = slot.0.get_or_init(|| {
            created = true;
            Arc::new(Preview {
                settings: Arc::clone(settings),
                root: session.root().to_path_buf(),
                // Created first, so that its closer (stop every process) runs after ours.
                supervisor: Supervisor::of(session, &settings.exec),
                op: tokio::sync::Mutex::new(()),
                state: Mutex::new(State::default()),
                running: Mutex::new(None),
                errors: Collector::new(settings.preview.max_errors),
                console: crate::console::ConsoleLog::default(),
                network: crate::network::NetworkLog::default(),
                outline: Mutex::new(None),
                location: Mutex::new((String::new(), String::new())),
                network_read: Default::default(),
                console_read: Default::default(),
                mapper: Mapper::default(),
                loaded: watch::Sender::new(0),
                discovery_written: Mutex::new(None),
                restarts: Default::default(),
            })
        });
        if created {
            let closing = Arc::clone(preview);
            session.on_close(Box::new(move || {
                Box::pin(async move {
                    closing.close("session ended").await;
                })
            }));
            let weak = Arc::downgrade(preview);
            session.add_notice_source(Box::new(move || {
                let text = weak.upgrade()?.errors.notice()?;
                Some(hands_core::Notice::new(hands_core::NoticeKind::RuntimeErrors, text))
            }));
        }
        Arc::clone(preview)
    }

    /// The session's preview if it was ever used.
    pub fn existing(session: &Session) -> Option<Arc<Preview>> {
        session.get_extension::<Slot>().and_then(|slot| slot.0.get().cloned())
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn running(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn set_stage(&self, stage: Stage) {
        let mut state = self.state();
        state.stage = stage;
        if stage != Stage::Error {
            state.last_error = None;
        }
    }

    /// Mark the preview failed with `message`.
    pub(crate) fn fail(&self, message: impl Into<String>) {
        let mut state = self.state();
        state.stage = Stage::Error;
        state.last_error = Some(message.into());
    }

    /// The project root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The DevTools connection and page session, when attached.
    pub(crate) fn page(&self) -> Option<(Arc<Cdp>, String)> {
        let running = self.running();
        let running = running.as_ref()?;
        let cdp = running.cdp.clone().filter(|c| !c.is_closed())?;
        Some((cdp, running.page.clone()?))
    }

    /// The page's URL now (after route changes too).
    pub fn location(&self) -> String {
        self.location.lock().unwrap_or_else(PoisonError::into_inner).0.clone()
    }

    /// What the egress proxy refused so far.
    pub(crate) fn refused(&self) -> Vec<crate::egress::Refusal> {
        self.running()
            .as_ref()
            .and_then(|r| r.egress.as_ref())
            .map(|e| e.refused())
            .unwrap_or_default()
    }

    /// The status now.
    pub fn status(&self) -> PreviewStatus {
        let (healthy, attached, alive_note) = {
            let running = self.running();
            match running.as_ref() {
                Some(r) => (
                    r.is_healthy(),
                    r.cdp.as_ref().is_some_and(|c| !c.is_closed()) && r.page.is_some(),
                    true,
                ),
                None => (false, false, false),
            }
        };
        let state = self.state().clone();
        PreviewStatus {
            running: healthy,
            port: state.port.filter(|_| alive_note),
            stage: state.stage,
            preview_url: state.preview_url.clone(),
            attached,
            last_error: state.last_error.clone(),
            cdp_port: state.cdp_port,
            ws_endpoint: state.ws_endpoint.clone(),
            started_at: state.started_at.map(discovery::rfc3339),
            kind: state.kind.map(|k| k.word().to_owned()),
            target_id: state.target_id.clone(),
            server_pid: state.server_pid,
            browser_pid: state.browser_pid,
            page_loads: self.errors.current_load(),
            unread_errors: self.errors.unread(),
            open_ms: state.open_ms,
            server_process: state.attached.as_ref().map(|(id, _)| id.clone()),
            attached_to: state.attached.as_ref().map(|(_, label)| label.clone()),
            discovery_file: self
                .discovery_written
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }

    /// Write the discovery file for the running preview.
    pub(crate) fn write_discovery(&self) -> std::io::Result<()> {
        let rel = self.settings.preview.discovery_path().to_owned();
        let state = self.state().clone();
        let record = discovery::Discovery {
            version: discovery::VERSION,
            pid: std::process::id(),
            browser_pid: state.browser_pid.unwrap_or(0),
            cdp_port: state.cdp_port.unwrap_or(0),
            browser_ws_endpoint: state.ws_endpoint.unwrap_or_default(),
            target_id: state.target_id.unwrap_or_default(),
            preview_url: state.preview_url.unwrap_or_default(),
            stage: state.stage.word().to_owned(),
            started_at: state.started_at.map(discovery::rfc3339).unwrap_or_default(),
        };
        discovery::write(&self.root, &rel, &record)?;
        *self.discovery_written.lock().unwrap_or_else(PoisonError::into_inner) = Some(rel);
        Ok(())
    }

    fn remove_discovery(&self) {
        let written = self.discovery_written.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(rel) = written
            && let Err(err) = discovery::remove(&self.root, &rel)
        {
            tracing::warn!(%err, file = rel, "could not remove the preview's discovery file");
        }
    }

    /// Stop what runs, under the `op` lock.
    pub async fn close(&self, reason: &str) -> CloseReport {
        if let Some(running) = self.running().as_ref() {
            // The watcher may hold the lock for a rebuild: its token stops it first.
            running.stop.cancel();
        }
        let _op = self.op.lock().await;
        let report = self.teardown(reason).await;
        let mut state = self.state();
        *state = State { kind: state.kind, ..State::default() };
        report
    }

    /// Stop the browser, then the server; remove the profile and the discovery file. The caller
    /// holds the `op` lock.
    pub(crate) async fn teardown(&self, reason: &str) -> CloseReport {
        let Some(running) = self.running().take() else {
            self.remove_discovery();
            return CloseReport::default();
        };
        running.stop.cancel();
        let grace = Duration::from_millis(self.settings.exec.processes.stop_grace_ms);
        let mut report = CloseReport { was_running: true, ..CloseReport::default() };
        let mut running = running;
        running.devtools = None;
        if let Some(cdp) = &running.cdp {
            cdp.close();
        }
        if let Some(browser) = &running.browser {
            let stopped = browser.stop(reason, grace).await;
            report.survivors += stopped.survivors;
            report.browser_stopped = true;
            self.supervisor.forget(&browser.id);
        }
        match &running.server {
            Some(ServerHandle::Process(server)) => {
                let stopped = server.stop(reason, grace).await;
                report.survivors += stopped.survivors;
                report.server_stopped = true;
                self.supervisor.forget(&server.id);
            }
            Some(ServerHandle::Builtin(server)) => {
                server.stop();
                report.server_stopped = true;
            }
            // The agent's process: it started it, it stops it (stop_process).
            Some(ServerHandle::Attached(server)) if server.status() == Status::Running => {
                report.kept = Some(label(server));
            }
            Some(ServerHandle::Attached(_)) | None => {}
        }
        self.remove_discovery();
        self.mapper.clear();
        if let Some(profile) = running.profile.take() {
            remove_profile(profile).await;
        }
        report
    }
}

/// Remove the browser's profile folder. The browser is stopped, but a helper process may have
/// been writing into it a moment ago, so a failed removal is tried again.
async fn remove_profile(profile: tempfile::TempDir) {
    let path = profile.keep();
    let removed = tokio::task::spawn_blocking(move || {
        for _ in 0..5 {
            match std::fs::remove_dir_all(&path) {
                Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                _ => return Ok(()),
            }
        }
        std::fs::remove_dir_all(&path).map_err(|err| (path, err))
    })
    .await;
    if let Ok(Err((path, err))) = removed {
        tracing::warn!(%err, path = %path.display(), "could not remove the browser profile");
    }
}

impl Drop for Preview {
    /// A session dropped without closing: the processes go with the supervisor; the discovery
    /// file must not outlive the preview either.
    fn drop(&mut self) {
        self.remove_discovery();
    }
}

/// What preview_close did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloseReport {
    /// Something was running.
    pub was_running: bool,
    /// The browser was stopped.
    pub browser_stopped: bool,
    /// The server was stopped.
    pub server_stopped: bool,
    /// Processes still alive after the stop (should be 0).
    pub survivors: usize,
    /// The agent's dev server the preview was attached to, left running (`p1 (`npm run dev`)`).
    pub kept: Option<String>,
}

/// The structured result of preview_status (and of preview_open).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewStatus {
    /// Server and browser are up and the page is attached.
    pub running: bool,
    /// The server's port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Where the preview is: stopped, typechecking, building, starting_server,
    /// launching_browser, attaching, ready, error.
    pub stage: Stage,
    /// The page's URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_url: Option<String>,
    /// The DevTools connection to the page is open.
    pub attached: bool,
    /// What went wrong last, when the stage is `error` (or a rebuild failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The browser's DevTools port on 127.0.0.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdp_port: Option<u16>,
    /// The browser's DevTools WebSocket endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_endpoint: Option<String>,
    /// When the preview was opened (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// vite, bun, static or configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The page's DevTools target id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_id: Option<String>,
    /// Pid of the server process (none for the built-in static server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    /// Pid of the browser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_pid: Option<u32>,
    /// Page loads so far (reloads and navigations count).
    pub page_loads: u64,
    /// Errors and warnings read_runtime_errors has not returned yet.
    pub unread_errors: usize,
    /// How long the last preview_open took to reach `ready`, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_ms: Option<u64>,
    /// The agent's background process that serves the page (its id), when the preview attached
    /// to it instead of starting a server; preview_close leaves it running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_process: Option<String>,
    /// That process as results name it.
    #[serde(skip)]
    pub attached_to: Option<String>,
    /// The discovery file, relative to the root, while it exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_file: Option<String>,
}

impl PreviewStatus {
    /// The status as text for the model.
    pub fn text(&self) -> String {
        let mut lines = vec![format!(
            "Preview: {}{}.",
            self.stage.word(),
            if self.running { ", running" } else { "" }
        )];
        if let Some(url) = &self.preview_url {
            lines.push(format!(
                "URL: {url}{}",
                self.port.map_or(String::new(), |p| format!(" (port {p})"))
            ));
        }
        if let Some(kind) = &self.kind {
            lines.push(format!("Project: {kind}"));
        }
        if let Some(server) = &self.attached_to {
            lines.push(format!(
                "Server: the agent's process {server}, attached (preview_close leaves it running)"
            ));
        }
        if let Some(error) = &self.last_error {
            lines.push(format!("Last error: {error}"));
        }
        if self.stage != Stage::Stopped {
            lines.push(format!(
                "Browser: {}{}",
                if self.attached { "attached" } else { "not attached" },
                match (self.browser_pid, self.cdp_port) {
                    (Some(pid), Some(port)) =>
                        format!(" (pid {pid}, DevTools on 127.0.0.1:{port})"),
                    (Some(pid), None) => format!(" (pid {pid})"),
                    _ => String::new(),
                }
            ));
            lines.push(format!(
                "Page loads: {}; unread errors: {}{}",
                self.page_loads,
                self.unread_errors,
                if self.unread_errors > 0 { " (read_runtime_errors)" } else { "" }
            ));
        }
        if let Some(file) = &self.discovery_file {
            lines.push(format!("Discovery file: {file}"));
        }
        lines.join("\n")
    }
}

/// "p1 (`npm run dev`)": how results name a process of the agent's.
pub(crate) fn label(proc: &Proc) -> String {
    format!("{} (`{}`)", proc.id, proc.command)
}

/// A weak handle for long-lived tasks.
pub(crate) type WeakPreview = Weak<Preview>;
