//! The proxy backends: each project gets an MCP client session with an inner hands (a bwrap'd
//! `hands mcp` child, or a remote `hands serve`), and every call is forwarded by tool name. A
//! closed transport is [`ToolError::SandboxGone`]; `get_or_create` then starts a fresh inner
//! (bwrap) or runs the `recreate` hook and reconnects (remote).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hands_core::{BoxFuture, Context, DynTool, Sandbox, SandboxProvider, ToolError, ToolOutput};
use serde_json::Value;

use super::{INNER_ENV, SandboxError};
use crate::client::Background;
use crate::client::link::{self, CallError, Endpoint, Held};

/// In the inner command's arguments, replaced by the project root.
pub(crate) const ROOT: &str = "{root}";

/// How long an inner hands gets to start and answer the handshake.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the remote backend keeps reconnecting after `recreate`.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

/// The host's timeout middleware limits calls (and cancels them); this only stops a lost answer
/// from waiting forever.
const CALL_BACKSTOP: Duration = Duration::from_secs(24 * 3600);

/// Tools that act for the host, not in the project: they run here even with a proxy backend.
fn runs_on_host(name: &str) -> bool {
    name.starts_with("mcp__") || name == "mcp_list" || name == "mcp_call"
}

enum Kind {
    Bwrap { bwrap: PathBuf, inner: Vec<String>, network: bool },
    Remote { url: String, token: Option<String>, recreate: Option<String> },
}

/// A [`SandboxProvider`] that proxies calls to an inner hands over MCP.
pub struct ProxyProvider {
    kind: Kind,
    background: Arc<Background>,
    sandboxes: tokio::sync::Mutex<HashMap<String, Arc<ProxySandbox>>>,
}

impl ProxyProvider {
    /// Run `inner` (its arguments may contain `{root}`) under `bwrap`, one per project; the
    /// project id is the root's path.
    pub fn bwrap(bwrap: PathBuf, inner: Vec<String>, network: bool) -> Result<Self, SandboxError> {
        Self::new(Kind::Bwrap { bwrap, inner, network })
    }

    /// Talk to the `hands serve` at `url`; `recreate` is run with `sh -c` when it is gone.
    pub fn remote(
        url: String,
        token: Option<String>,
        recreate: Option<String>,
    ) -> Result<Self, SandboxError> {
        Self::new(Kind::Remote { url, token, recreate })
    }

    fn new(kind: Kind) -> Result<Self, SandboxError> {
        let background =
            Background::start().map_err(|err| SandboxError::Runtime(err.to_string()))?;
        Ok(Self { kind, background, sandboxes: tokio::sync::Mutex::new(HashMap::new()) })
    }

    /// The pid of the project's bwrap process, if it has one (tests kill it).
    pub async fn pid(&self, project: &str) -> Option<u32> {
        self.sandboxes.lock().await.get(project).and_then(|s| s.held.pid)
    }

    /// The bwrap command line for `root`.
    fn bwrap_endpoint(&self, root: &Path) -> Result<Endpoint, ToolError> {
        let Kind::Bwrap { bwrap, inner, network } = &self.kind else {
            return Err(ToolError::Fatal("not a bwrap provider".into()));
        };
        let root_text = root.display().to_string();
        // /tmp first: a root under /tmp is then bound on top of the private /tmp, not hidden by it.
        let mut args: Vec<String> = [
            "--ro-bind",
            "/",
            "/",
            "--tmpfs",
            "/tmp",
            "--bind",
            &root_text,
            &root_text,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--unshare-pid",
            "--die-with-parent",
            // Own session: no TIOCSTI into the host terminal, and the inner hands leads its own
            // process group (outside it, getpgrp() would name a group the PID namespace cannot see).
            "--new-session",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        if !network {
            args.push("--unshare-net".into());
        }
        args.extend(["--chdir".into(), root_text.clone(), "--".into()]);
        args.extend(inner.iter().map(|a| a.replace(ROOT, &root_text)));
        let env = BTreeMap::from([(INNER_ENV.to_owned(), "1".to_owned())]);
        Ok(Endpoint::Child {
            command: bwrap.display().to_string(),
            args,
            env,
            cwd: Some(root.into()),
        })
    }

    /// Start (bwrap) or reach (remote) the project's sandbox; `fresh` runs the recreate hook first.
    async fn create(&self, project: &str, fresh: bool) -> Result<Arc<ProxySandbox>, ToolError> {
        let (endpoint, retry_for) = match &self.kind {
            Kind::Bwrap { .. } => {
                let root = std::fs::canonicalize(project).map_err(|err| {
                    ToolError::Fatal(format!(
                        "the bwrap sandbox needs the project id to be its root folder; {project}: {err}"
                    ))
                })?;
                (self.bwrap_endpoint(&root)?, Duration::ZERO)
            }
            Kind::Remote { url, token, recreate } => {
                if fresh && let Some(command) = recreate {
                    run_recreate(command, project).await?;
                }
                let endpoint = Endpoint::Http {
                    url: url.clone(),
                    token: token.clone(),
                    headers: BTreeMap::new(),
                };
                (endpoint, if fresh { RECONNECT_FOR } else { Duration::ZERO })
            }
        };
        let id = format!("{} for {project}", endpoint_kind(&self.kind));
        let started = Instant::now();
        let held = loop {
            let attempt = {
                let endpoint = endpoint.clone();
                self.background
                    .run(async move { link::connect(&endpoint, START_TIMEOUT).await })
                    .await
            };
            match attempt {
                Some(Ok(held)) => break held,
                Some(Err(err)) if started.elapsed() >= retry_for => {
                    return Err(ToolError::Fatal(format!(
                        "cannot start the sandbox ({id}): {err}"
                    )));
                }
                None => return Err(ToolError::Fatal("the sandbox client runtime stopped".into())),
                Some(Err(_)) => tokio::time::sleep(Duration::from_millis(250)).await,
            }
        };
        tracing::info!(sandbox = %id, pid = ?held.pid, "sandbox started");
        Ok(Arc::new(ProxySandbox {
            id,
            held,
            background: Arc::clone(&self.background),
            lost: AtomicBool::new(false),
        }))
    }
}

fn endpoint_kind(kind: &Kind) -> &'static str {
    match kind {
        Kind::Bwrap { .. } => "bwrap",
        Kind::Remote { .. } => "remote",
    }
}

/// Run the `recreate` hook; it must leave a sandbox starting at the configured URL.
async fn run_recreate(command: &str, project: &str) -> Result<(), ToolError> {
    tracing::warn!(command, project, "running sandbox.recreate");
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("HANDS_PROJECT", project)
        .stdin(std::process::Stdio::null())
        .status()
        .await
        .map_err(|err| ToolError::Fatal(format!("cannot run sandbox.recreate: {err}")))?;
    if !status.success() {
        return Err(ToolError::Fatal(format!("sandbox.recreate `{command}` failed: {status}")));
    }
    Ok(())
}

impl SandboxProvider for ProxyProvider {
    fn get<'a>(&'a self, project: &'a str) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        Box::pin(async move {
            let mut sandboxes = self.sandboxes.lock().await;
            if let Some(sandbox) = sandboxes.get(project) {
                // Even a dead one: the call then reports SandboxGone and recovery takes over.
                return Ok(Arc::clone(sandbox) as Arc<dyn Sandbox>);
            }
            let sandbox = self.create(project, false).await?;
            sandboxes.insert(project.to_owned(), Arc::clone(&sandbox));
            Ok(sandbox as Arc<dyn Sandbox>)
        })
    }

    fn get_or_create<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        Box::pin(async move {
            let mut sandboxes = self.sandboxes.lock().await;
            // Replace only a sandbox that a call saw lost (or whose session closed): when two
            // calls lose the same one, the second finds the first's replacement and keeps it.
            if let Some(sandbox) = sandboxes.get(project)
                && !sandbox.lost.load(Ordering::Relaxed)
                && !sandbox.held.is_closed()
            {
                return Ok(Arc::clone(sandbox) as Arc<dyn Sandbox>);
            }
            // Drop the lost one first (kills a bwrap that is still half alive).
            sandboxes.remove(project);
            let sandbox = self.create(project, true).await?;
            sandboxes.insert(project.to_owned(), Arc::clone(&sandbox));
            Ok(sandbox as Arc<dyn Sandbox>)
        })
    }
}

/// One live inner hands.
struct ProxySandbox {
    id: String,
    held: Held,
    background: Arc<Background>,
    /// Set when a call found the session gone.
    lost: AtomicBool,
}

impl Sandbox for ProxySandbox {
    fn id(&self) -> String {
        self.id.clone()
    }

    fn run<'a>(
        &'a self,
        tool: &'a dyn DynTool,
        ctx: Context,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let name = tool.spec().name.clone();
            if runs_on_host(&name) {
                return tool.call_json(ctx, args).await;
            }
            let gone = || {
                self.lost.store(true, Ordering::Relaxed);
                ToolError::SandboxGone(format!("{} is gone (its MCP session closed)", self.id))
            };
            if self.held.is_closed() {
                return Err(gone());
            }
            let peer = self.held.peer().ok_or_else(gone)?;
            let args = match args {
                Value::Null => None,
                Value::Object(map) => Some(map),
                other => {
                    return Err(ToolError::model(format!(
                        "{name}: the arguments must be a JSON object, not {other}"
                    )));
                }
            };
            let called = name.clone();
            let work = self
                .background
                .run(async move { link::call(&peer, &called, args, CALL_BACKSTOP).await });
            let result = tokio::select! {
                result = work => result,
                () = ctx.cancel_token().cancelled() => {
                    // Dropping `work` sends notifications/cancelled: the inner hands stops the tool.
                    return Ok(ToolOutput::error(format!("{name} was aborted.")));
                }
            };
            match result {
                None => Err(ToolError::Fatal("the sandbox client runtime stopped".into())),
                Some(Ok(output)) => Ok(output),
                Some(Err(CallError::Gone(reason))) => {
                    self.lost.store(true, Ordering::Relaxed);
                    Err(ToolError::SandboxGone(format!("{}: {reason}", self.id)))
                }
                Some(Err(CallError::Remote(message))) => Err(ToolError::model(message)),
                Some(Err(CallError::Timeout(limit))) => Err(ToolError::model(format!(
                    "{name} got no answer from the sandbox within {} s",
                    limit.as_secs()
                ))),
            }
        })
    }
}
