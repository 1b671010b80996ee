//! What the session API tests share: a real `hands_server::router` over a real [`Host`] (memory
//! store, the real tools) on a loopback listener, a scripted model [`Provider`], and a small SSE
//! reader.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_agent::host::{Host, HostParts};
use hands_agent::model::{
    Block, Message, ModelRequest, ModelResponse, Provider, ProviderError, Role, StopReason,
    TextSink, Usage,
};
use hands_core::{BoxFuture, CoreConfig, Mode, Registry};
use hands_mcp::ServerFactory;
use hands_server::ServerConfig;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// One scripted model response.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Stream these text deltas, then end the turn.
    Text(Vec<String>),
    /// Ask for one tool call.
    Tool { name: String, input: Value },
    /// Wait until the call is cancelled.
    Hang,
}

impl Reply {
    pub fn text(text: &str) -> Self {
        Self::Text(vec![text.to_owned()])
    }

    pub fn tool(name: &str, input: Value) -> Self {
        Self::Tool { name: name.to_owned(), input }
    }
}

/// A model that answers from a queue (then says "done"), and records what it was sent.
#[derive(Default)]
pub struct Scripted {
    replies: Mutex<VecDeque<Reply>>,
    pub requests: Mutex<Vec<ModelRequest>>,
    calls: std::sync::atomic::AtomicU64,
}

impl Scripted {
    pub fn new(replies: impl IntoIterator<Item = Reply>) -> Arc<Self> {
        Arc::new(Self { replies: Mutex::new(replies.into_iter().collect()), ..Self::default() })
    }

    pub fn push(&self, reply: Reply) {
        self.replies.lock().unwrap().push_back(reply);
    }

    /// The last request's messages.
    pub fn last_messages(&self) -> Vec<Message> {
        self.requests.lock().unwrap().last().map(|r| r.messages.clone()).unwrap_or_default()
    }
}

impl Provider for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-1"
    }

    fn context_window(&self) -> u64 {
        1_000_000
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        on_text: TextSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            self.requests.lock().unwrap().push(request.clone());
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let reply = self.replies.lock().unwrap().pop_front().unwrap_or(Reply::text("done"));
            let usage = Usage { input_tokens: 10, output_tokens: 5 };
            match reply {
                Reply::Text(deltas) => {
                    // Yield after each delta, as a network stream would: the loop then emits
                    // each as its own event instead of joining those that queued up.
                    for delta in &deltas {
                        on_text(delta);
                        tokio::task::yield_now().await;
                    }
                    Ok(ModelResponse {
                        message: Message {
                            role: Role::Assistant,
                            content: vec![Block::Text { text: deltas.concat() }],
                        },
                        stop: StopReason::EndTurn,
                        usage,
                    })
                }
                Reply::Tool { name, input } => Ok(ModelResponse {
                    message: Message {
                        role: Role::Assistant,
                        content: vec![Block::ToolUse { id: format!("call-{n}"), name, input }],
                    },
                    stop: StopReason::ToolUse,
                    usage,
                }),
                Reply::Hang => {
                    cancel.cancelled().await;
                    Err(ProviderError::Cancelled)
                }
            }
        })
    }
}

/// A served router over a fresh host.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub host: Arc<Host>,
    /// A project folder.
    pub root: PathBuf,
    pub client: reqwest::Client,
    /// The router's sign-in codes (a test mints them).
    pub signin: hands_server::SignIn,
    shutdown: CancellationToken,
    _tmp: tempfile::TempDir,
}

impl TestServer {
    pub async fn start(provider: Option<Arc<dyn Provider>>) -> Self {
        Self::start_with(provider, ServerConfig::default()).await
    }

    pub async fn start_with(provider: Option<Arc<dyn Provider>>, config: ServerConfig) -> Self {
        Self::start_full(provider, config, CoreConfig::default()).await
    }

    /// With the registry's core settings (`approval = ask`, …) too.
    pub async fn start_full(
        provider: Option<Arc<dyn Provider>>,
        config: ServerConfig,
        core: CoreConfig,
    ) -> Self {
        Self::start_registry(provider, config, registry(core)).await
    }

    /// Over `registry`.
    pub async fn start_registry(
        provider: Option<Arc<dyn Provider>>,
        config: ServerConfig,
        registry: Registry,
    ) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("hello.txt"), "hello world\n").unwrap();
        let registry = Arc::new(registry);
        let host = Host::open(HostParts {
            store: Arc::new(hands_store::MemoryStore::new()),
            registry: Arc::clone(&registry),
            provider,
            config: Default::default(),
            checkpoints: hands_checkpoint::Settings {
                state_dir: Some(tmp.path().join("state")),
                ..Default::default()
            },
        })
        .await
        .unwrap();
        let factory = ServerFactory::new(registry, &root, Mode::Build);
        let shutdown = CancellationToken::new();
        let signin =
            hands_server::SignIn::new(config.token.clone(), hands_server::signin::LIFETIME);
        let app = hands_server::router_with(
            Arc::clone(&host),
            factory,
            &config,
            shutdown.clone(),
            signin.clone(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await.ok();
        });
        let client = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
        Self { base, host, root, client, signin, shutdown, _tmp: tmp }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        response(self.client.get(self.url(path)).send().await.unwrap()).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        response(self.client.post(self.url(path)).json(&body).send().await.unwrap()).await
    }

    pub async fn post_empty(&self, path: &str) -> (u16, Value) {
        response(self.client.post(self.url(path)).send().await.unwrap()).await
    }

    pub async fn post_raw(&self, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
        let request = self
            .client
            .post(self.url(path))
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body);
        response(request.send().await.unwrap()).await
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        response(self.client.delete(self.url(path)).send().await.unwrap()).await
    }

    /// Create a session on the test root; returns its id.
    pub async fn session(&self, extra: Value) -> String {
        let mut body = json!({"root": self.root});
        for (k, v) in extra.as_object().cloned().unwrap_or_default() {
            body[k] = v;
        }
        let (status, info) = self.post("/v1/sessions", body).await;
        assert_eq!(status, 201, "{info}");
        info["id"].as_str().unwrap().to_owned()
    }

    /// Events of `session` after `after`, until one satisfies `until` (included).
    pub async fn events_until(
        &self,
        session: &str,
        after: u64,
        until: impl Fn(&SseMessage) -> bool,
    ) -> Vec<SseMessage> {
        let mut stream = SseStream::open(self, session, Some(after)).await;
        let mut seen = Vec::new();
        loop {
            let message = stream.next().await.expect("the stream ended early");
            let done = until(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    /// Wait for the session's turn to end; returns its `turn_ended` event data.
    pub async fn turn_end(&self, session: &str) -> Value {
        let events = self.events_until(session, 0, |m| m.event == "turn_ended").await;
        events.last().unwrap().data.clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

pub async fn response(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    (status, value)
}

/// Every tool of this build that a session host runs.
pub fn registry(core: CoreConfig) -> Registry {
    registry_builder(core).build()
}

/// [`registry`], to add to.
pub fn registry_builder(core: CoreConfig) -> hands_core::RegistryBuilder {
    let builder = Registry::builder(core);
    let builder = hands_fs::register(builder, &Default::default());
    let builder = hands_exec::register(builder, &Default::default());
    hands_agent::register(builder)
}

/// One SSE message.
#[derive(Debug, Clone, PartialEq)]
pub struct SseMessage {
    pub id: Option<u64>,
    pub event: String,
    pub data: Value,
}

/// An open SSE response read message by message (comments skipped).
pub struct SseStream {
    response: reqwest::Response,
    buffer: Vec<u8>,
}

impl SseStream {
    pub async fn open(server: &TestServer, session: &str, last_event_id: Option<u64>) -> Self {
        let mut request = server.client.get(server.url(&format!("/v1/sessions/{session}/events")));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        Self::from_response(request.send().await.unwrap())
    }

    /// Read `response`, which must be an event stream.
    pub fn from_response(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self { response, buffer: Vec::new() }
    }

    /// The next message; `None` at the end of the stream.
    pub async fn next(&mut self) -> Option<SseMessage> {
        loop {
            if let Some(end) = find(&self.buffer, b"\n\n") {
                let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                let text = String::from_utf8(block).unwrap();
                if let Some(message) = parse(&text) {
                    return Some(message);
                }
                continue;
            }
            let chunk = self.response.chunk().await.ok()??;
            self.buffer.extend_from_slice(&chunk);
        }
    }

    /// The next message, or `None` when none comes within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<SseMessage> {
        tokio::time::timeout(wait, self.next()).await.ok().flatten()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse(block: &str) -> Option<SseMessage> {
    let (mut id, mut event, mut data) = (None, String::from("message"), String::new());
    let mut any = false;
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "" => continue, // a comment (keep-alive)
            "id" => id = Some(value.parse().unwrap()),
            "event" => event = value.to_owned(),
            "data" => {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            _ => {}
        }
        any = true;
    }
    any.then(|| SseMessage { id, event, data: serde_json::from_str(&data).unwrap() })
}

/// Pids of live processes whose environment has `NAME=value` starting with `prefix`, read from
/// /proc independently of hands' own code.
pub fn live_with_env(prefix: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')));
        if !zombie && env.split(|b| *b == 0).any(|var| var.starts_with(prefix.as_bytes())) {
            found.push(pid);
        }
    }
    found
}
