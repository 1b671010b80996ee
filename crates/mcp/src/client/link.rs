//! One connection to an MCP server, stdio child or Streamable HTTP: connect (initialize), list the
//! tools, call one, and say whether a failure means the server is gone. Both the client (other
//! servers' tools) and the sandbox proxies (an inner hands) are built on this. Everything here runs
//! on the [`super::background::Background`] runtime. A call forwards the server's progress to the
//! caller's [`Context`]; a cancelled call sends `notifications/cancelled` and then waits briefly
//! for the partial result that a hands server sends back (see [`super::listener`]).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use hands_core::{CancellationToken, Content, Context, ToolOutput};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    ProgressToken, RequestId, RequestMetaObject, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::runtime::Handle;

use super::listener::{Listener, PARTIAL_META, Routes, ToolList};
use super::remote::{RemoteTool, list_tools};

/// Set in the environment of every MCP server hands starts: how many hands are above it. A hands
/// started by another hands as an MCP server starts no MCP servers of its own, so that a
/// `[mcp_servers]` entry running `hands mcp` with the same user configuration does not start
/// itself without end (its host already talks to every configured server).
pub const DEPTH_ENV: &str = "HANDS_MCP_DEPTH";

/// This process's depth: 0 unless another hands started it as an MCP server.
pub fn depth() -> u32 {
    std::env::var(DEPTH_ENV).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// How long a cancelled call waits for the server's partial result (a hands server stops the
/// tool, gives it its grace period, and sends what it had).
const PARTIAL_WAIT: Duration = Duration::from_secs(5);

/// Where a server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// A child process speaking MCP on stdin/stdout.
    Child {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: BTreeMap<String, String>,
        /// Working directory, if not ours.
        cwd: Option<PathBuf>,
        /// A bwrap sandbox with a network: slirp4netns, attached before the handshake.
        slirp: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The MCP URL.
        url: String,
        /// A bearer token (without `Bearer `).
        token: Option<String>,
        /// Extra headers.
        headers: BTreeMap<String, String>,
    },
}

impl Endpoint {
    /// For messages: the command line or the URL.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Child { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Self::Http { url, .. } => url.clone(),
        }
    }
}

/// A live client session. Dropped inside its runtime, because rmcp's child-process transport
/// spawns the child's reaper when it is dropped.
pub(crate) struct Held {
    service: Option<RunningService<RoleClient, Listener>>,
    handle: Handle,
    routes: Arc<Routes>,
    /// The server's tools as last listed (by [`Held::list_tools`] or after list_changed).
    pub(crate) tools: Arc<ToolList>,
    /// The child's pid, for stdio servers (tests kill it to simulate a crash).
    pub(crate) pid: Option<u32>,
    /// A bwrap sandbox's slirp4netns; it ends with the session.
    net: Option<crate::sandbox::net::Slirp>,
}

impl Held {
    /// What a call needs of the session (cheap to clone).
    pub(crate) fn conn(&self) -> Option<Conn> {
        self.service.as_ref().map(|s| Conn {
            peer: s.peer().clone(),
            routes: Arc::clone(&self.routes),
            pid: self.pid,
        })
    }

    /// True once the transport has closed (the child died, the session ended).
    pub(crate) fn is_closed(&self) -> bool {
        // rmcp's `is_closed` says only whether the session was cancelled or closed by us: a
        // server that went away (EOF) leaves it false, so its channel and process are asked too.
        self.service.as_ref().is_none_or(|s| {
            s.is_closed() || s.peer().is_transport_closed() || self.pid.is_some_and(|p| !alive(p))
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _enter = self.handle.enter();
        drop(self.service.take());
        drop(self.net.take());
    }
}

/// A session's peer and the routes of its calls' notifications.
#[derive(Clone)]
pub(crate) struct Conn {
    peer: Peer<RoleClient>,
    routes: Arc<Routes>,
    /// A stdio server's pid: a call stops waiting once it has exited.
    pid: Option<u32>,
}

impl Conn {
    /// The server is gone: its session's channel closed, or its process exited (a zombie, or
    /// reaped). Checked while a call waits, so that a request sent just as the server died —
    /// before the session saw its end — does not wait out the call's whole limit.
    fn gone(&self) -> bool {
        self.peer.is_transport_closed() || self.exited()
    }

    /// True once the server's process has ended (a zombie counts).
    fn exited(&self) -> bool {
        self.pid.is_some_and(|pid| !alive(pid))
    }

    /// True when the server is a hands (which answers a cancelled call with its partial result).
    fn is_hands(&self) -> bool {
        self.peer
            .peer_info()
            .is_some_and(|info| info.server_info.as_ref().is_some_and(|s| s.name == "hands"))
    }

    /// List the server's tools and publish them in `tools`.
    pub(crate) async fn list_into(&self, tools: &ToolList) -> Result<Vec<RemoteTool>, String> {
        let listed = list_tools(&self.peer).await?;
        tools.set(listed.clone());
        Ok(listed)
    }
}

/// The process `pid` exists and has not exited (`/proc/PID/stat` is there and not a zombie's).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S …`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_none_or(|(_, rest)| !matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
        // No /proc (not Linux): assume alive, as before this check.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            !std::path::Path::new("/proc/self/stat").exists()
        }
        Err(_) => true,
    }
}

/// How often a waiting call checks that its server is still there.
const GONE_CHECK: Duration = Duration::from_millis(500);

/// How long a call whose server is gone still waits for an answer already on its way.
const GONE_GRACE: Duration = Duration::from_millis(200);

/// Connect and initialize, within `timeout`; the server's tool listings go to `tools`.
pub(crate) async fn connect(
    endpoint: &Endpoint,
    timeout: Duration,
    tools: Arc<ToolList>,
    one_shot: bool,
) -> Result<Held, String> {
    let handle = Handle::current();
    let routes = Arc::new(Routes::default());
    let listener = || Listener { routes: Arc::clone(&routes), tools: Arc::clone(&tools), one_shot };
    let held = |service, pid| Held {
        service: Some(service),
        handle: handle.clone(),
        routes: Arc::clone(&routes),
        tools: Arc::clone(&tools),
        pid,
        net: None,
    };
    let work = async {
        match endpoint {
            Endpoint::Child { command, args, env, cwd, slirp } => {
                let mut cmd = tokio::process::Command::new(command);
                // hands' environment without its credentials, then the server's own variables.
                cmd.args(args)
                    .env_clear()
                    .envs(hands_core::env::ChildEnv::vars())
                    .envs(env)
                    .env(DEPTH_ENV, (depth() + 1).to_string())
                    .kill_on_drop(true);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|err| format!("cannot start `{command}`: {err}"))?;
                let pid = transport.id();
                let service = listener().serve(transport).await.map_err(|err| {
                    format!("`{}` did not complete the MCP handshake: {err}", endpoint.describe())
                })?;
                let mut held = held(service, pid);
                // After the handshake (bwrap has set its namespaces up by then) and before the
                // first call: no tool runs before the sandbox's network is up.
                held.net = match (slirp, pid) {
                    (Some(slirp), Some(pid)) => {
                        Some(crate::sandbox::net::attach(slirp, pid).await?)
                    }
                    (Some(_), None) => return Err("the sandbox ended at start".into()),
                    (None, _) => None,
                };
                Ok(held)
            }
            Endpoint::Http { url, token, headers } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = token {
                    config = config.auth_header(token.clone());
                }
                let mut custom = HashMap::new();
                for (name, value) in headers {
                    let name = http::HeaderName::try_from(name.as_str())
                        .map_err(|err| format!("header name {name:?}: {err}"))?;
                    let value = http::HeaderValue::try_from(value.as_str())
                        .map_err(|err| format!("header {name}: {err}"))?;
                    custom.insert(name, value);
                }
                let config = config.custom_headers(custom);
                let transport = StreamableHttpClientTransport::from_config(config);
                let service = listener()
                    .serve(transport)
                    .await
                    .map_err(|err| format!("{url} did not complete the MCP handshake: {err}"))?;
                Ok(held(service, None))
            }
        }
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "{} did not answer the MCP handshake within {} s",
            endpoint.describe(),
            timeout.as_secs_f64()
        )),
    }
}

/// Why a call did not produce a result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallError {
    /// The transport is closed or cannot send: the server is gone.
    Gone(String),
    /// The server answered with a protocol error (unknown tool, bad arguments, …).
    Remote(String),
    /// No answer within the limit.
    Timeout(Duration),
    /// The caller cancelled the call; the server's partial result, when it sent one.
    Cancelled(Option<Box<ToolOutput>>),
}

/// One call: the tool, its arguments, and what the caller wants to hear of it.
pub(crate) struct Call {
    /// The tool's name on the server.
    pub(crate) name: String,
    /// Its arguments.
    pub(crate) args: Option<Map<String, Value>>,
    /// How long to wait for the answer.
    pub(crate) timeout: Duration,
    /// The caller's context: its progress sink gets the server's progress reports, and its
    /// cancellation token cancels the call.
    pub(crate) ctx: Option<Context>,
}

/// Send `call` and wait for its answer, forwarding progress; when the caller's token fires, send
/// `notifications/cancelled` and wait (at most [`PARTIAL_WAIT`]) for the partial result.
pub(crate) async fn call(conn: &Conn, call: Call) -> Result<ToolOutput, CallError> {
    let Call { name, args, timeout, ctx } = call;
    let mut params = CallToolRequestParams::new(name);
    params.arguments = args;
    let mut meta = RequestMetaObject::new();
    meta.insert(PARTIAL_META.to_owned(), Value::Bool(true));
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let options = PeerRequestOptions::no_options().with_meta(meta);
    let handle = conn.peer.send_request_with_option(request, options).await.map_err(classify)?;
    let (id, token) = (handle.id.clone(), handle.progress_token.clone());
    // The first report of a hands tool comes after 200 ms, long after this registration.
    if let Some(ctx) = ctx.as_ref().filter(|ctx| ctx.wants_progress()) {
        conn.routes.listen_progress(token.clone(), ctx.clone());
    }
    let partial = conn.routes.listen_partial(id.clone());
    let mut pending = Pending { conn: conn.clone(), id, token, open: true };
    let cancel = ctx.as_ref().map_or_else(CancellationToken::new, |ctx| ctx.cancel_token().clone());
    let response = handle.await_response();
    tokio::pin!(response);
    let gone = async {
        loop {
            tokio::time::sleep(GONE_CHECK).await;
            if conn.gone() {
                break;
            }
        }
    };
    let cancelled = tokio::select! {
        result = &mut response => {
            pending.answered();
            return answer_from(conn, result);
        }
        () = tokio::time::sleep(timeout) => false,
        () = cancel.cancelled() => true,
        () = gone => {
            // An answer read just before the end still counts; otherwise the server is gone
            // and the caller may restart it.
            if let Ok(result) = tokio::time::timeout(GONE_GRACE, &mut response).await {
                pending.answered();
                return answer_from(conn, result);
            }
            pending.answered();
            return Err(CallError::Gone(EXITED.into()));
        }
    };
    pending.cancel(if cancelled { "cancelled by the caller" } else { "timed out" }).await;
    if !cancelled {
        return Err(CallError::Timeout(timeout));
    }
    if !conn.is_hands() {
        // Other servers send no partial result: nothing to wait for.
        return Err(CallError::Cancelled(None));
    }
    // The answer may have come before the server heard of the cancellation; otherwise rmcp
    // resolves the request as cancelled and a hands server sends its partial result.
    let waited = tokio::time::timeout(PARTIAL_WAIT, async {
        match (&mut response).await {
            Ok(result) => return Some(answer(Ok(result))),
            Err(ServiceError::Cancelled { .. }) => {}
            Err(_) => return None,
        }
        partial.await.ok().map(|result| Ok(to_output(&result)))
    })
    .await;
    match waited {
        Ok(Some(Ok(output))) => Err(CallError::Cancelled(Some(Box::new(output)))),
        Ok(Some(Err(err))) => Err(err),
        Ok(None) | Err(_) => Err(CallError::Cancelled(None)),
    }
}

/// A call in flight: forgets its routes when dropped, and then tells the server the call was
/// abandoned if it was neither answered nor cancelled (the caller gave up on it).
struct Pending {
    conn: Conn,
    id: RequestId,
    token: ProgressToken,
    open: bool,
}

impl Pending {
    fn answered(&mut self) {
        self.open = false;
    }

    async fn cancel(&mut self, reason: &str) {
        self.open = false;
        let params = CancelledNotificationParam::new(Some(self.id.clone()), Some(reason.into()));
        let _ = self.conn.peer.notify_cancelled(params).await;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.conn.routes.forget(&self.token, &self.id);
        if self.open
            && let Ok(handle) = Handle::try_current()
        {
            let peer = self.conn.peer.clone();
            let params = CancelledNotificationParam::new(
                Some(self.id.clone()),
                Some("abandoned by the caller".into()),
            );
            handle.spawn(async move { peer.notify_cancelled(params).await });
        }
    }
}

/// What a call that lost its server says when the server's process ended.
const EXITED: &str = "the server exited before it answered";

/// [`answer`], except that a closed transport whose server process has ended says so: which of
/// the two a dying server shows first is a race, and the caller's words should not depend on it.
fn answer_from(
    conn: &Conn,
    result: Result<ServerResult, ServiceError>,
) -> Result<ToolOutput, CallError> {
    match answer(result) {
        Err(CallError::Gone(_)) if conn.exited() => Err(CallError::Gone(EXITED.into())),
        other => other,
    }
}

/// A `tools/call` answer in hands' shape.
fn answer(result: Result<ServerResult, ServiceError>) -> Result<ToolOutput, CallError> {
    let value = match result.map_err(classify)? {
        ServerResult::CallToolResult(result) => serde_json::to_value(result),
        other => serde_json::to_value(other),
    }
    .map_err(|err| CallError::Remote(format!("unreadable result: {err}")))?;
    Ok(to_output(&value))
}

fn classify(err: ServiceError) -> CallError {
    match err {
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            CallError::Gone(err.to_string())
        }
        ServiceError::McpError(data) => CallError::Remote(data.message.into_owned()),
        ServiceError::Timeout { timeout } => CallError::Timeout(timeout),
        other => CallError::Remote(other.to_string()),
    }
}

/// A `CallToolResult` (as JSON) in hands' shape: text and image blocks kept, other blocks
/// (audio, resources, links) rendered as their JSON so the model still sees them.
pub(crate) fn to_output(result: &Value) -> ToolOutput {
    use base64::Engine as _;
    let mut output = ToolOutput::default();
    for block in result.get("content").and_then(Value::as_array).into_iter().flatten() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or_default();
        let content = match kind {
            "text" => Content::Text {
                text: block.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
            },
            "image" => {
                let data = block.get("data").and_then(Value::as_str).unwrap_or_default();
                let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("image/png");
                match base64::engine::general_purpose::STANDARD.decode(data) {
                    Ok(bytes) => Content::Image { data: bytes, mime_type: mime.to_owned() },
                    Err(_) => Content::Text { text: block.to_string() },
                }
            }
            _ => Content::Text { text: block.to_string() },
        };
        output.content.push(content);
    }
    output.structured = result.get("structuredContent").cloned();
    output.is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    output
}
