//! The MCP client: brings the tools of configured MCP servers (`[mcp_servers.NAME]`) in as hands
//! tools. At start every server is connected in parallel (10 s each) and its tools listed; a server
//! that fails is reported (warning, `hands tools`) and left out, never fatal. Calls go through the
//! server's live session; when a server has died, the call restarts it once and retries.

mod background;
mod config;
pub(crate) mod link;
mod tools;

use std::sync::Arc;
use std::time::Duration;

use hands_core::{RegistryBuilder, ToolError, ToolOutput};
use serde_json::{Map, Value};

pub(crate) use background::Background;
pub use config::{McpServerConfig, McpServersConfig};
use link::{CallError, Endpoint, Held, RemoteTool};
pub use tools::tool_name;

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
}

/// One configured server.
pub(crate) struct Server {
    name: String,
    endpoint: Result<Endpoint, String>,
    /// The tools it listed at start (empty when it failed).
    tools: Vec<RemoteTool>,
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
        Self { shared: Arc::new(Shared { background, servers, call_timeout }) }
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
                tools: s.tools.iter().map(|t| t.name.clone()).collect(),
                error: s.error.clone(),
            })
            .collect()
    }

    /// The pid of a stdio server's current process (for tests that simulate a crash).
    pub async fn pid(&self, server: &str) -> Option<u32> {
        let server = self.server(server)?;
        server.session.lock().await.as_ref().and_then(|held| held.pid)
    }

    /// Register the servers' tools (`mcp__NAME__TOOL`) and, when any server is configured,
    /// `mcp_list` and `mcp_call`.
    pub fn register(&self, builder: RegistryBuilder) -> RegistryBuilder {
        tools::register(self, builder)
    }

    pub(crate) fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.shared.servers.iter().find(|s| s.name == name)
    }

    pub(crate) fn servers(&self) -> &[Arc<Server>] {
        &self.shared.servers
    }

    /// Call `tool` on `server`, aborting when `cancel` fires.
    pub(crate) async fn call(
        &self,
        server: &str,
        tool: &str,
        args: Option<Map<String, Value>>,
        cancel: &hands_core::CancellationToken,
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
        let work = background.run(async move { found.call(&tool, args, timeout).await });
        tokio::select! {
            result = work => result.unwrap_or_else(|| {
                Err(ToolError::Fatal("the MCP client's runtime stopped".into()))
            }),
            () = cancel.cancelled() => Ok(ToolOutput::error(format!(
                "The call to MCP server `{server}` was aborted."
            ))),
        }
    }
}

impl Server {
    fn failed(name: &str, error: String) -> Self {
        Self {
            name: name.to_owned(),
            endpoint: Err(error.clone()),
            tools: Vec::new(),
            error: Some(error),
            session: tokio::sync::Mutex::new(None),
        }
    }

    async fn start(name: String, config: McpServerConfig) -> Self {
        let endpoint = config.endpoint();
        let connected = match &endpoint {
            Err(err) => Err(format!("invalid configuration: {err}")),
            Ok(endpoint) => match link::connect(endpoint, CONNECT_TIMEOUT).await {
                Err(err) => Err(err),
                Ok(held) => match held.peer() {
                    None => Err("the session closed during the handshake".to_owned()),
                    Some(peer) => link::list_tools(&peer).await.map(|tools| (held, tools)),
                },
            },
        };
        match connected {
            Ok((held, tools)) => Self {
                name,
                endpoint,
                tools,
                error: None,
                session: tokio::sync::Mutex::new(Some(held)),
            },
            Err(error) => Self {
                name,
                endpoint,
                tools: Vec::new(),
                error: Some(error),
                session: tokio::sync::Mutex::new(None),
            },
        }
    }

    /// The name in the configuration.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The tools listed at start.
    pub(crate) fn tools(&self) -> &[RemoteTool] {
        &self.tools
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
    ) -> Result<ToolOutput, ToolError> {
        let endpoint = self.endpoint.as_ref().map_err(|err| {
            ToolError::model(format!("MCP server `{}` is not usable: {err}", self.name))
        })?;
        let mut restarted = false;
        loop {
            let peer = {
                let mut session = self.session.lock().await;
                if session.as_ref().is_none_or(Held::is_closed) {
                    if session.is_some() {
                        tracing::warn!(server = %self.name, "MCP server gone; restarting it");
                    }
                    *session = None;
                    restarted = true;
                    *session =
                        Some(link::connect(endpoint, CONNECT_TIMEOUT).await.map_err(|err| {
                            ToolError::model(format!(
                                "MCP server `{}` is not available: {err}",
                                self.name
                            ))
                        })?);
                }
                session.as_ref().and_then(Held::peer)
            };
            let Some(peer) = peer else {
                return Err(ToolError::model(format!(
                    "MCP server `{}` closed its session.",
                    self.name
                )));
            };
            match link::call(&peer, tool, args.clone(), timeout).await {
                Ok(output) => return Ok(output),
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
}
