//! Opening and rebuilding the preview.
//!
//! `open`: reuse a healthy preview; otherwise tear down what is left of an earlier one and go
//! through the stages — typechecking, building, starting_server, launching_browser, attaching,
//! ready — stopping at `error` with the message in `lastError` and nothing left running. When
//! the agent already runs the project's dev server (attach.rs), the preview attaches to it
//! instead: no typecheck, build or server of its own, starting_server waits for that process's
//! URL. After attach the page is navigated (errors of the very first load are caught), the
//! discovery file is written, a monitor watches the browser, follow.rs watches the server, and
//! the watcher starts for build-based previews. `rebuild` (the watcher's) reruns the typecheck
//! and build and reloads the page.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use hands_exec::Proc;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cdp::{Cdp, CdpError, Event};
use crate::collector::{ErrorKind, Occurrence};
use crate::detect::{self, Plan};
use crate::egress::{self, Egress};
use crate::launch::BrowserOptions;
use crate::launch::{self, Launch, LaunchError, describe, with_env};
use crate::preview::{Preview, Running, ServerHandle, Stage, State, label};
use crate::steps::{self, StepError};
use crate::{attach, devtools, events, follow, watch};

/// How long `open` waits for the first page's `load` event before calling it ready anyway (a page
/// may hold a request open forever).
const LOAD_WAIT: Duration = Duration::from_secs(15);

/// How an open ended well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opened {
    /// A running preview was reused.
    Reused,
    /// Started now.
    Started,
    /// Started now, on the agent's dev server: `p1 (`npm run dev`)`.
    Attached(String),
}

impl From<StepError> for LaunchError {
    fn from(err: StepError) -> Self {
        match err {
            StepError::Failed(message) => Self::Failed(message),
            StepError::Cancelled => Self::Cancelled,
        }
    }
}

fn cdp_failed(err: CdpError) -> LaunchError {
    LaunchError::Failed(format!("Attaching to Chromium failed: {err}."))
}

/// `WIDTH,HEIGHT` (or `WIDTHxHEIGHT`) as numbers.
fn viewport(size: &str) -> Option<(u32, u32)> {
    let (w, h) = size.split_once([',', 'x'])?;
    Some((w.trim().parse().ok()?, h.trim().parse().ok()?)).filter(|(w, h)| *w > 0 && *h > 0)
}

/// A token fired when either `a` or `b` fires.
fn either(a: &CancellationToken, b: &CancellationToken) -> CancellationToken {
    let both = CancellationToken::new();
    let (a, b, out) = (a.clone(), b.clone(), both.clone());
    tokio::spawn(async move {
        tokio::select! {
            () = a.cancelled() => {}
            () = b.cancelled() => {}
            () = out.cancelled() => {}
        }
        out.cancel();
    });
    both
}

impl Preview {
    /// Open the preview (or reuse the running one). `cancel` is the call's token.
    pub async fn open(self: &Arc<Self>, cancel: &CancellationToken) -> Result<Opened, String> {
        let _op = self.op.lock().await;
        let healthy = self.running().as_ref().is_some_and(Running::is_healthy);
        if healthy && self.state().stage == Stage::Ready {
            return Ok(Opened::Reused);
        }
        self.restarts.store(0, std::sync::atomic::Ordering::SeqCst);
        self.restart(cancel, "restarting the preview").await
    }

    /// Tear down what runs and start again (the caller holds the `op` lock).
    pub(crate) async fn restart(
        self: &Arc<Self>,
        cancel: &CancellationToken,
        reason: &str,
    ) -> Result<Opened, String> {
        self.teardown(reason).await;
        let kind = self.state().kind;
        *self.state() = State { kind, started_at: Some(SystemTime::now()), ..State::default() };
        let began = Instant::now();
        match self.start(cancel).await {
            Ok(()) => {
                let mut state = self.state();
                state.open_ms = Some(began.elapsed().as_millis() as u64);
                Ok(match &state.attached {
                    Some((_, label)) => Opened::Attached(label.clone()),
                    None => Opened::Started,
                })
            }
            Err(err) => {
                self.teardown("preview failed").await;
                let message = match err {
                    LaunchError::Failed(message) => message,
                    LaunchError::Cancelled => "preview_open was cancelled (aborted, or over its \
                        time limit); what it had started was stopped. Call preview_open again."
                        .to_owned(),
                };
                self.fail(message.clone());
                Err(message)
            }
        }
    }

    async fn start(self: &Arc<Self>, call: &CancellationToken) -> Result<(), LaunchError> {
        let config = &self.settings.preview;
        let grace = Duration::from_millis(self.settings.exec.processes.stop_grace_ms);
        let plan = detect::plan(&self.root, config).map_err(LaunchError::Failed)?;
        self.state().kind = Some(plan.kind);
        let running = Running::new(plan.clone());
        let stop = running.stop.clone();
        *self.running() = Some(running);
        let cancel = either(call, &stop);
        let launch =
            Launch { supervisor: &self.supervisor, root: &self.root, grace, cancel: &cancel };
        let ready_timeout = Duration::from_millis(config.ready_timeout_ms);

        let (started, watching) = match self.agent_server(&plan, ready_timeout, &cancel).await? {
            // Nothing of the plan runs: the agent's server serves what it serves.
            Some(started) => (started, None),
            None => {
                for (program, hint) in &plan.needs {
                    if detect::find_program(&self.root, program).is_none() {
                        return Err(LaunchError::Failed(hint.clone()));
                    }
                }
                // Taken before the build, so that a change made while it runs rebuilds
                // afterwards.
                let watching = if config.rebuild_on_change && plan.watches() {
                    let watched = watch::Watched::new(&self.root, config, &plan);
                    watch::fingerprint(&watched).await.map(|baseline| (watched, baseline))
                } else {
                    None
                };
                self.steps(&plan, &cancel).await?;
                self.set_stage(Stage::StartingServer);
                let started =
                    launch::start_server(launch, &plan.server, plan.port, &plan.url, ready_timeout)
                        .await?;
                (started, watching)
            }
        };
        {
            let mut state = self.state();
            state.port = Some(started.port);
            state.preview_url = Some(started.url.clone());
            state.server_pid = match &started.handle {
                ServerHandle::Process(proc) | ServerHandle::Attached(proc) => Some(proc.pid),
                ServerHandle::Builtin(_) => None,
            };
            state.attached = match &started.handle {
                ServerHandle::Attached(proc) => Some((proc.id.clone(), label(proc))),
                _ => None,
            };
        }
        match &started.handle {
            ServerHandle::Process(proc) => follow::spawn(self, Arc::clone(proc), false, &stop),
            ServerHandle::Attached(proc) => follow::spawn(self, Arc::clone(proc), true, &stop),
            ServerHandle::Builtin(_) => {}
        }
        let url = started.url.clone();
        if let Some(running) = self.running().as_mut() {
            running.server = Some(started.handle);
            running.url = url.clone();
        }

        self.set_stage(Stage::LaunchingBrowser);
        // Every request of the page but those to the preview's origin goes through the egress
        // proxy (see egress.rs).
        let egress = Egress::start(self.settings.net.clone()).await.map_err(|err| {
            LaunchError::Failed(format!("Cannot start the preview's egress proxy: {err}."))
        })?;
        let origin = url::Url::parse(&url).map_err(|err| {
            LaunchError::Failed(format!("The preview URL {url} is not valid: {err}."))
        })?;
        let flags = egress::flags(egress.addr, &origin);
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let options = BrowserOptions {
            offline: false,
            flags: &flags,
            preferences: Some(egress::PREFERENCES),
        };
        let (browser, _) = launch::start_browser_with(
            launch,
            &config.chromium,
            &config.window_size,
            Duration::from_millis(config.browser_timeout_ms),
            options,
        )
        .await?;
        if let Some(running) = self.running().as_mut() {
            running.egress = Some(egress);
        }
        let launch::Browser { proc, profile, cdp, events } = browser;
        self.monitor(Arc::clone(&proc), "Chromium", stop.clone());
        let endpoint = devtools::serve(&cdp).await;
        {
            let mut state = self.state();
            if let Ok(endpoint) = &endpoint {
                state.cdp_port = Some(endpoint.addr.port());
                state.ws_endpoint = Some(endpoint.ws_url.clone());
            }
            state.browser_pid = Some(proc.pid);
        }
        if let Some(running) = self.running().as_mut() {
            running.browser = Some(proc);
            running.profile = Some(profile);
            running.cdp = Some(Arc::clone(&cdp));
        }
        let endpoint = endpoint.map_err(|err| {
            LaunchError::Failed(format!(
                "Cannot serve the preview's DevTools endpoint on 127.0.0.1: {err}."
            ))
        })?;
        if let Some(running) = self.running().as_mut() {
            running.devtools = Some(endpoint);
        }

        self.set_stage(Stage::Attaching);
        let attach = self.attach(&url, cdp, events, &stop);
        let timeout = Duration::from_millis(config.browser_timeout_ms);
        tokio::select! {
            attached = tokio::time::timeout(timeout, attach) => match attached {
                Ok(result) => result?,
                Err(_) => return Err(LaunchError::Failed(format!(
                    "Attaching to Chromium and loading {url} took over {} s \
                     (preview.browser_timeout_ms).",
                    timeout.as_secs_f32()
                ))),
            },
            () = cancel.cancelled() => return Err(LaunchError::Cancelled),
        }

        self.set_stage(Stage::Ready);
        if let Err(err) = self.write_discovery() {
            tracing::warn!(%err, "could not write the preview's discovery file");
            self.errors.record_build(
                ErrorKind::BrowserWarning,
                Occurrence {
                    message: format!(
                        "The discovery file {} could not be written: {err}",
                        config.discovery_path()
                    ),
                    location: None,
                    stack: Vec::new(),
                },
            );
        }
        if let Some((watched, baseline)) = watching {
            watch::spawn(Arc::downgrade(self), watched, baseline, config, stop);
        }
        Ok(())
    }

    /// The agent's running dev server for `plan` (attach.rs) once its URL answers; `None` when
    /// there is none, or it ended while the preview waited for its URL.
    async fn agent_server(
        &self,
        plan: &Plan,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Option<launch::Started>, LaunchError> {
        let Some(proc) = attach::find(&self.supervisor, &self.root, plan, &[]) else {
            return Ok(None);
        };
        self.set_stage(Stage::StartingServer);
        let configured_url = !self.settings.preview.url.trim().is_empty();
        match attach::wait_url(&proc, plan, configured_url, timeout, cancel).await {
            Ok(url) => {
                let port = url::Url::parse(&url).ok().and_then(|u| u.port_or_known_default());
                let port = port.unwrap_or_default();
                Ok(Some(launch::Started { handle: ServerHandle::Attached(proc), port, url }))
            }
            Err(attach::Wait::Exited) => Ok(None),
            Err(attach::Wait::Cancelled) => Err(LaunchError::Cancelled),
            Err(attach::Wait::Timeout) => Err(LaunchError::Failed(format!(
                "The agent's process {} runs this project's dev server, but no URL of it answered \
                 within {} s (preview.ready_timeout_ms), so the preview did not start a second \
                 server.{} Stop that process for preview_open to start the preview's own \
                 server, or raise preview.ready_timeout_ms for a slow start.",
                label(&proc),
                timeout.as_secs_f32(),
                proc.log_path().map_or(String::new(), |log| format!(" What it printed: {log}."))
            ))),
        }
    }

    /// Run the typecheck and build steps of `plan`.
    async fn steps(&self, plan: &Plan, cancel: &CancellationToken) -> Result<(), LaunchError> {
        let config = &self.settings.preview;
        let grace = Duration::from_millis(self.settings.exec.processes.stop_grace_ms);
        let limit = Duration::from_millis(config.build_timeout_ms);
        let steps = [
            (Stage::Typechecking, ErrorKind::Typecheck, &plan.typecheck),
            (Stage::Building, ErrorKind::Build, &plan.build),
        ];
        for (stage, kind, command) in steps {
            let Some(command) = command else { continue };
            self.set_stage(stage);
            let launch = Launch { supervisor: &self.supervisor, root: &self.root, grace, cancel };
            let wrapped = with_env(&self.root, command, None);
            steps::run(launch, kind, command, wrapped, limit, &self.errors).await?;
        }
        Ok(())
    }

    /// Connect to the browser, attach to its page, enable the domains the collector reads, and
    /// load `url`.
    async fn attach(
        self: &Arc<Self>,
        url: &str,
        cdp: Arc<Cdp>,
        events: mpsc::UnboundedReceiver<Event>,
        stop: &CancellationToken,
    ) -> Result<(), LaunchError> {
        let targets = cdp.call("Target.getTargets", json!({}), None).await.map_err(cdp_failed)?;
        let existing = targets["targetInfos"].as_array().and_then(|targets| {
            targets
                .iter()
                .find(|t| t["type"] == "page")
                .and_then(|t| t["targetId"].as_str())
                .map(str::to_owned)
        });
        let target = match existing {
            Some(id) => id,
            None => cdp
                .call("Target.createTarget", json!({"url": "about:blank"}), None)
                .await
                .map_err(cdp_failed)?["targetId"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        };
        let attached = cdp
            .call("Target.attachToTarget", json!({"targetId": target, "flatten": true}), None)
            .await
            .map_err(cdp_failed)?;
        let Some(page) = attached["sessionId"].as_str().map(str::to_owned) else {
            return Err(LaunchError::Failed("Chromium attached no session to the page.".into()));
        };
        events::spawn(Arc::downgrade(self), Arc::clone(&cdp), page.clone(), events, stop.clone());
        for method in ["Page.enable", "Runtime.enable", "Log.enable", "Network.enable"] {
            cdp.call(method, json!({}), Some(&page)).await.map_err(cdp_failed)?;
        }
        // Page crashes; older Chromiums lack the domain on page targets, which is no reason to fail.
        let _ = cdp.call("Inspector.enable", json!({}), Some(&page)).await;
        // The viewport is exactly the configured size (the window's own frame would take some).
        if let Some((width, height)) = viewport(&self.settings.preview.window_size) {
            let metrics =
                json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false});
            cdp.call("Emulation.setDeviceMetricsOverride", metrics, Some(&page))
                .await
                .map_err(cdp_failed)?;
        }
        self.state().target_id = Some(target);
        if let Some(running) = self.running().as_mut() {
            running.page = Some(page.clone());
        }
        let mut loaded = self.loaded.subscribe();
        let before = self.errors.current_load();
        let navigated = cdp
            .call("Page.navigate", json!({"url": url}), Some(&page))
            .await
            .map_err(cdp_failed)?;
        if let Some(error) = navigated["errorText"].as_str().filter(|e| !e.is_empty()) {
            return Err(LaunchError::Failed(format!(
                "Chromium could not load {url}: {error}. Check preview.url and that the server \
                 serves it."
            )));
        }
        let _ = tokio::time::timeout(LOAD_WAIT, loaded.wait_for(|n| *n > before)).await;
        Ok(())
    }

    /// Watch `proc`: if it ends while the preview runs, the preview is in error.
    fn monitor(self: &Arc<Self>, proc: Arc<Proc>, what: &'static str, stop: CancellationToken) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::select! {
                status = proc.wait_exit() => {
                    if stop.is_cancelled() {
                        return;
                    }
                    let Some(preview) = weak.upgrade() else { return };
                    let message = format!(
                        "{what} {} while the preview was running; the preview is down. Call \
                         preview_open to start it again.{}",
                        describe(&status),
                        proc.log_path().map_or(String::new(), |l| format!(" Its output: {l}."))
                    );
                    preview.errors.record(
                        ErrorKind::Crash,
                        Occurrence { message: message.clone(), location: None, stack: Vec::new() },
                    );
                    preview.fail(message);
                }
                () = stop.cancelled() => {}
            }
        });
    }

    /// Rerun the typecheck and build after a change and reload the page (the watcher calls this).
    pub(crate) async fn rebuild(self: &Arc<Self>, stop: &CancellationToken) {
        let _op = self.op.lock().await;
        if stop.is_cancelled() {
            return;
        }
        let Some(plan) = self.running().as_ref().map(|r| r.plan.clone()) else { return };
        match self.steps(&plan, stop).await {
            Ok(()) => {}
            Err(LaunchError::Failed(message)) => {
                self.fail(message);
                let _ = self.write_discovery();
                return;
            }
            Err(LaunchError::Cancelled) => return,
        }
        self.set_stage(Stage::Ready);
        let _ = self.write_discovery();
        if let Some((cdp, page)) = self.page() {
            self.mapper.clear();
            let _ = cdp.call("Page.reload", json!({"ignoreCache": true}), Some(&page)).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewport_sizes_are_read() {
        assert_eq!(viewport("1280,800"), Some((1280, 800)));
        assert_eq!(viewport("375x667"), Some((375, 667)));
        assert_eq!(viewport("wide"), None);
        assert_eq!(viewport("0,10"), None);
    }
}
