//! One connection to an MCP server, stdio child or Streamable HTTP: connect (initialize), list the
//! tools, call one, and say whether a failure means the server is gone. Both the client (other
//! servers' tools) and the sandbox proxies (an inner hands) are built on this. Everything here runs
//! on the [`super::background::Background`] runtime.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use hands_core::{Content, ToolOutput};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio::runtime::Handle;

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
    service: Option<RunningService<RoleClient, ()>>,
    handle: Handle,
    /// The child's pid, for stdio servers (tests kill it to simulate a crash).
    pub(crate) pid: Option<u32>,
}

impl Held {
    /// The peer to send requests through (cheap to clone).
    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.service.as_ref().map(|s| s.peer().clone())
    }

    /// True once the transport has closed (the child died, the session ended).
    pub(crate) fn is_closed(&self) -> bool {
        self.service.as_ref().is_none_or(RunningService::is_closed)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _enter = self.handle.enter();
        drop(self.service.take());
    }
}

/// Connect and initialize, within `timeout`.
pub(crate) async fn connect(endpoint: &Endpoint, timeout: Duration) -> Result<Held, String> {
    let handle = Handle::current();
    let work = async {
        match endpoint {
            Endpoint::Child { command, args, env, cwd } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env).kill_on_drop(true);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                let (transport, _) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::inherit())
                    .spawn()
                    .map_err(|err| format!("cannot start `{command}`: {err}"))?;
                let pid = transport.id();
                let service = ().serve(transport).await.map_err(|err| {
                    format!("`{}` did not complete the MCP handshake: {err}", endpoint.describe())
                })?;
                Ok(Held { service: Some(service), handle: handle.clone(), pid })
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
                let service = ()
                    .serve(transport)
                    .await
                    .map_err(|err| format!("{url} did not complete the MCP handshake: {err}"))?;
                Ok(Held { service: Some(service), handle: handle.clone(), pid: None })
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

/// A remote tool as listed by its server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteTool {
    /// Its name on the server.
    pub(crate) name: String,
    /// Its description.
    pub(crate) description: String,
    /// Its input schema.
    pub(crate) input_schema: Value,
}

/// Every tool the server lists.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, String> {
    let tools = peer.list_all_tools().await.map_err(|err| format!("tools/list failed: {err}"))?;
    Ok(tools
        .into_iter()
        .map(|tool| RemoteTool {
            name: tool.name.to_string(),
            description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
            input_schema: Value::Object((*tool.input_schema).clone()),
        })
        .collect())
}

/// Why a call did not produce a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallError {
    /// The transport is closed or cannot send: the server is gone.
    Gone(String),
    /// The server answered with a protocol error (unknown tool, bad arguments, …).
    Remote(String),
    /// No answer within the limit.
    Timeout(Duration),
}

/// Call `name` with `args` and wait up to `timeout`.
pub(crate) async fn call(
    peer: &Peer<RoleClient>,
    name: &str,
    args: Option<Map<String, Value>>,
    timeout: Duration,
) -> Result<ToolOutput, CallError> {
    let mut params = CallToolRequestParams::new(name.to_owned());
    params.arguments = args;
    match tokio::time::timeout(timeout, peer.call_tool(params)).await {
        Err(_) => Err(CallError::Timeout(timeout)),
        Ok(Err(err)) => Err(classify(err)),
        Ok(Ok(result)) => {
            let value = serde_json::to_value(&result)
                .map_err(|err| CallError::Remote(format!("unreadable result: {err}")))?;
            Ok(to_output(&value))
        }
    }
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
