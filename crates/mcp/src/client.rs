//! The MCP client: brings the tools of configured MCP servers (`[mcp_servers.NAME]`) in as hands
//! tools. At start every server is connected in parallel (10 s each) and its tools listed; a server
//! that fails is reported (warning, `hands tools`) and left out, never fatal. Calls go through the
//! server's live session; when a server has died, the call restarts it once and retries. Progress
//! and cancellation pass through to the server; a server that says its tool list changed is
//! listed again (see [`McpClients::tool_list_changes`]).

mod background;
mod config;
pub(crate) mod link;
pub(crate) mod listener;
pub(crate) mod remote;
mod source;
pub(crate) mod tools;

use std::sync::Arc;
use std::time::Duration;

use hands_core::{Context, ToolError, ToolOutput};
use serde_json::{Map, Value};
use tokio::sync::watch;

pub(crate) use background::Background;
pub use config::{McpServerConfig, McpServersConfig};
use link::{CallError, Endpoint, Held};
pub use link::{DEPTH_ENV, depth};
use listener::ToolList;
use remote::RemoteTool;

/// How long a server gets to start and answer the handshake.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The default limit of one remote call (`mcp_call_timeout_ms`).
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 120_000;

/// The configured MCP servers and their live sessions. Cheap to clone.
#[derive(Clone)]
pub struct McpClients {
    shared: Arc<Shared>,
}

struct Shared {
    /// None only when the runtime could not start (every server is then reported failed).
    background: Option<Arc<Background>>,
    servers: Vec<Arc<Server>>,
    call_timeout: Duration,
    /// Ticks when any server's tool list changed after the start.
    changes: watch::Sender<u64>,
}

/// One configured server.
pub(crate) struct Server {
    name: String,
    endpoint: Result<Endpoint, String>,
    /// Its tools as last listed (empty when it failed at start).
    tools: Arc<ToolList>,
    /// Why it is not available, if it is not.
    error: Option<String>,
    session: tokio::sync::Mutex<Option<Held>>,
}

/// A server as `mcp_list` and `hands tools` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Its name in the configuration.
    pub name: String,
    /// Its tools' remote names.
    pub tools: Vec<String>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

impl McpClients {
    /// Connect every server of `config` in parallel (each within [`CONNECT_TIMEOUT`]) and list its
    /// tools. Blocks the calling thread; works inside or outside a tokio runtime.
    pub fn connect_blocking(config: &McpServersConfig, call_timeout_ms: u64) -> Self {
        // No server, nothing to reach: no runtime thread (and its malloc arena) at start-up.
        if config.0.is_empty() {
            return Self::from_parts(None, Vec::new(), call_timeout_ms);
        }
        let background = match Background::start() {
            Ok(background) => background,
            Err(err) => {
                // Without a runtime no server can be reached; report every one as failed.
                let servers = config
                    .0
                    .keys()
                    .map(|name| {
                        Arc::new(Server::failed(name, format!("cannot start the runtime: {err}")))
                    })
                    .collect();
                return Self::from_parts(None, servers, call_timeout_ms);
            }
        };
        let entries: Vec<(String, McpServerConfig)> =
            config.0.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let servers = background
            .block(async move {
                let tasks: Vec<_> = entries
                    .into_iter()
                    .map(|(name, entry)| tokio::spawn(Server::start(name, entry)))
                    .collect();
                let mut servers = Vec::new();
                for task in tasks {
                    if let Ok(server) = task.await {
                        servers.push(Arc::new(server));
                    }
                }
                servers
            })
            .unwrap_or_default();
        for server in &servers {
            if let Some(error) = &server.error {
                tracing::warn!(server = %server.name, error = %error, "MCP server unavailable");
            }
        }
        Self::from_parts(Some(background), servers, call_timeout_ms)
    }

    fn from_parts(
        background: Option<Arc<Background>>,
        servers: Vec<Arc<Server>>,
        call_timeout_ms: u64,
    ) -> Self {
        let call_timeout = Duration::from_millis(call_timeout_ms);
        let changes = watch::Sender::new(0);
        if let Some(background) = &background {
            // Merge the servers' list changes into one signal, from now on.
            for server in &servers {
                let mut listed = server.tools.changes();
                listed.borrow_and_update();
                let changes = changes.clone();
                background.spawn(async move {
                    while listed.changed().await.is_ok() {
                        changes.send_modify(|n| *n += 1);
                    }
                });
            }
        }
        Self { shared: Arc::new(Shared { background, servers, call_timeout, changes }) }
    }

    /// Ticks whenever a server sent `notifications/tools/list_changed` and was listed again (its
    /// new tools are in [`McpClients::status`] and `mcp_list`, and callable through `mcp_call`).
    /// The hook for front ends that announce their own tool-list changes.
    pub fn tool_list_changes(&self) -> watch::Receiver<u64> {
        self.shared.changes.subscribe()
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.shared.servers.is_empty()
    }

    /// Every configured server: its tools, or why it failed.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.shared
            .servers
            .iter()
            .map(|s| ServerStatus {
                name: s.name.clone(),
                tools: s.tools.get().into_iter().map(|t| t.name).collect(),
                error: s.error.clone(),
            })
            .collect()
    }

    /// The pid of a stdio server's current process (for tests that simulate a crash).
    pub async fn pid(&self, server: &str) -> Option<u32> {
        let server = self.server(server)?;
        server.session.lock().await.as_ref().and_then(|held| held.pid)
    }

    pub(crate) fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.shared.servers.iter().find(|s| s.name == name)
    }

    pub(crate) fn servers(&self) -> &[Arc<Server>] {
        &self.shared.servers
    }

    /// Run `work` on the client's runtime, in the background (nothing when it could not start).
    pub(crate) fn spawn(&self, work: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Some(background) = &self.shared.background {
            background.spawn(work);
        }
    }

    /// Call `tool` on `server` for the call `ctx`: its progress sink gets the server's reports,
    /// and its token cancels the call.
    pub(crate) async fn call(
        &self,
        server: &str,
        tool: &str,
        args: Option<Map<String, Value>>,
        ctx: &Context,
    ) -> Result<ToolOutput, ToolError> {
        let Some(found) = self.server(server) else {
            let names: Vec<&str> = self.servers().iter().map(|s| s.name.as_str()).collect();
            return Err(ToolError::model(format!(
                "No MCP server named `{server}`. Configured servers: {}.",
                names.join(", ")
            )));
        };
        let found = Arc::clone(found);
        let tool = tool.to_owned();
        let timeout = self.shared.call_timeout;
        let Some(background) = &self.shared.background else {
            return Err(ToolError::model(format!("MCP server `{server}` is not available.")));
        };
        let ctx = ctx.clone();
        // The call watches the token itself, so that it can tell the server and collect what it
        // had; dropping this future (the caller gave up) tells the server too.
        background
            .run(async move { found.call(&tool, args, timeout, ctx).await })
            .await
            .unwrap_or_else(|| Err(ToolError::Fatal("the MCP client's runtime stopped".into())))
    }
}

impl Server {
    fn failed(name: &str, error: String) -> Self {
        Self {
            name: name.to_owned(),
            endpoint: Err(error.clone()),
            tools: ToolList::new(),
            error: Some(error),
            session: tokio::sync::Mutex::new(None),
        }
    }

    async fn start(name: String, config: McpServerConfig) -> Self {
        let endpoint = config.endpoint();
        let tools = ToolList::new();
        let connected = match &endpoint {
            Err(err) => Err(format!("invalid configuration: {err}")),
            Ok(endpoint) => {
                match link::connect(endpoint, CONNECT_TIMEOUT, Arc::clone(&tools), false).await {
                    Err(err) => Err(err),
                    Ok(held) => match held.conn() {
                        None => Err("the session closed during the handshake".to_owned()),
                        Some(conn) => conn.list_into(&tools).await.map(|_| held),
                    },
                }
            }
        };
        let (held, error) = match connected {
            Ok(held) => (Some(held), None),
            Err(error) => (None, Some(error)),
        };
        Self { name, endpoint, tools, error, session: tokio::sync::Mutex::new(held) }
    }

    /// The name in the configuration.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Its tools as last listed.
    pub(crate) fn tools(&self) -> Vec<RemoteTool> {
        self.tools.get()
    }

    /// False when its last listing does not have `tool` (it changed its list since the start).
    pub(crate) fn offers(&self, tool: &str) -> bool {
        !self.tools.is_listed() || self.tools.offers(tool)
    }

    /// Why it failed at start.
    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// One call; a server found dead (closed transport) is restarted once and the call retried.
    async fn call(
        &self,
        tool: &str,
        args: Option<Map<String, Value>>,
        timeout: Duration,
        ctx: Context,
    ) -> Result<ToolOutput, ToolError> {
        let endpoint = self.endpoint.as_ref().map_err(|err| {
            ToolError::model(format!("MCP server `{}` is not usable: {err}", self.name))
        })?;
        let aborted = || {
            Ok(ToolOutput::error(format!("The call to MCP server `{}` was aborted.", self.name)))
        };
        let mut restarted = false;
        loop {
            let conn = {
                let mut session = self.session.lock().await;
                if session.as_ref().is_none_or(Held::is_closed) {
                    if session.is_some() {
                        tracing::warn!(server = %self.name, "MCP server gone; restarting it");
                    }
                    *session = None;
                    restarted = true;
                    let connect = self.reconnect(endpoint);
                    let held = tokio::select! {
                        held = connect => held?,
                        () = ctx.cancel_token().cancelled() => return aborted(),
                    };
                    *session = Some(held);
                }
                session.as_ref().and_then(Held::conn)
            };
            let Some(conn) = conn else {
                return Err(ToolError::model(format!(
                    "MCP server `{}` closed its session.",
                    self.name
                )));
            };
            let call = link::Call {
                name: tool.to_owned(),
                args: args.clone(),
                timeout,
                ctx: Some(ctx.clone()),
            };
            match link::call(&conn, call).await {
                Ok(output) => return Ok(output),
                Err(CallError::Cancelled(Some(partial))) => return Ok(*partial),
                Err(CallError::Cancelled(None)) => return aborted(),
                Err(CallError::Gone(reason)) if !restarted => {
                    tracing::warn!(server = %self.name, reason = %reason, "MCP server gone during a call; restarting it");
                    *self.session.lock().await = None;
                    restarted = true;
                }
                Err(CallError::Gone(reason)) => {
                    return Err(ToolError::model(format!(
                        "MCP server `{}` stopped answering ({reason}), also after a restart.",
                        self.name
                    )));
                }
                Err(CallError::Remote(message)) => {
                    return Err(ToolError::model(format!(
                        "MCP server `{}` refused the call to `{tool}`: {message}",
                        self.name
                    )));
                }
                Err(CallError::Timeout(limit)) => {
                    return Err(ToolError::model(format!(
                        "MCP server `{}` did not answer `{tool}` within {} s \
                         (setting mcp_call_timeout_ms).",
                        self.name,
                        limit.as_secs()
                    )));
                }
            }
        }
    }

    /// A fresh session, with its tools listed again (a restarted server may offer others).
    async fn reconnect(&self, endpoint: &Endpoint) -> Result<Held, ToolError> {
        let unavailable = |err: String| {
            ToolError::model(format!("MCP server `{}` is not available: {err}", self.name))
        };
        let held = link::connect(endpoint, CONNECT_TIMEOUT, Arc::clone(&self.tools), false)
            .await
            .map_err(unavailable)?;
        if let Some(conn) = held.conn()
            && let Err(err) = conn.list_into(&self.tools).await
        {
            tracing::warn!(server = %self.name, %err, "restarted MCP server did not list its tools");
        }
        Ok(held)
    }
}
