//! What the provider tests share: a fake model server (a bare HTTP/1.1 listener that records each
//! request and answers the Nth with the Nth scripted [`Reply`]), the checked-in fixtures, and a
//! helper that runs one call while collecting the text deltas.

#![allow(dead_code)] // each test file uses a different part

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_agent::model::{ModelRequest, ModelResponse, Provider, ProviderError};
use hands_agent::provider::{ProviderKind, ProviderOptions, RetryPolicy};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A checked-in fixture, `tests/agent/fixtures/<provider>/<name>`.
pub fn fixture(provider: &str, name: &str) -> String {
    let path =
        format!("{}/../../tests/agent/fixtures/{provider}/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// How the fake server answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 `text/event-stream`, the body written one event at a time with `pause` between.
    Stream { body: String, pause: Duration },
    /// Any status with a JSON (or other) body.
    Status { status: u16, headers: Vec<(String, String)>, body: String },
    /// 200, then `: ping` comments forever.
    Hang,
    /// 200, `body`, then the connection is closed in the middle of the chunked body.
    Cut { body: String },
}

impl Reply {
    /// A fixture streamed.
    pub fn fixture(provider: &str, name: &str) -> Self {
        Self::Stream { body: fixture(provider, name), pause: Duration::ZERO }
    }

    /// An error status with a body.
    pub fn status(status: u16, body: &str) -> Self {
        Self::Status { status, headers: Vec::new(), body: body.to_owned() }
    }

    /// The same with one more response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Self::Status { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Lower-cased names.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

/// The fake server; stops accepting when dropped.
pub struct Server {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Listen on a free local port; the Nth request gets `replies[N]` (past the end: 500).
    pub async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(replies);
        let count = Arc::new(AtomicUsize::new(0));
        let log = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (log, replies, count) = (log.clone(), replies.clone(), count.clone());
                tokio::spawn(async move {
                    let _ = serve(socket, &log, &replies, &count).await;
                });
            }
        });
        Self { url, received, task }
    }

    /// The requests so far.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    log: &Mutex<Vec<Received>>,
    replies: &[Reply],
    count: &AtomicUsize,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let head_end = loop {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers.get("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push(Received { method, path, headers, body });
    let n = count.fetch_add(1, Ordering::SeqCst);
    let reply = replies.get(n).cloned().unwrap_or_else(|| {
        Reply::status(500, &format!("{{\"error\": \"the test scripted no reply {n}\"}}"))
    });
    match reply {
        Reply::Status { status, headers, body } => {
            let mut out = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
            out.push_str("\r\n");
            out.push_str(&body);
            socket.write_all(out.as_bytes()).await?;
        }
        Reply::Stream { body, pause } => {
            start_stream(&mut socket).await?;
            for event in body.split_inclusive("\n\n") {
                write_chunk(&mut socket, event.as_bytes()).await?;
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
            }
            socket.write_all(b"0\r\n\r\n").await?;
        }
        Reply::Hang => {
            start_stream(&mut socket).await?;
            loop {
                write_chunk(&mut socket, b": ping\n\n").await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Reply::Cut { body } => {
            start_stream(&mut socket).await?;
            write_chunk(&mut socket, body.as_bytes()).await?;
            socket.flush().await?;
            // Dropping the socket without the final `0` chunk cuts the body short.
        }
    }
    socket.shutdown().await
}

async fn start_stream(socket: &mut TcpStream) -> std::io::Result<()> {
    socket
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        )
        .await
}

async fn write_chunk(socket: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    socket.write_all(format!("{:x}\r\n", data.len()).as_bytes()).await?;
    socket.write_all(data).await?;
    socket.write_all(b"\r\n").await?;
    socket.flush().await
}

/// Options for a provider at `url` with quick retries (10 ms backoff, 2 retries).
pub fn options(kind: ProviderKind, url: &str) -> ProviderOptions {
    ProviderOptions {
        base_url: url.to_owned(),
        api_key: Some("test-key".into()),
        api_key_env: "TEST_API_KEY".into(),
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
            max_retry_after: Duration::from_secs(5),
        },
        request_timeout: Duration::from_secs(10),
        ..ProviderOptions::new(kind, "test-model")
    }
}

/// One call; returns its result and the text deltas in the order `on_text` got them.
pub async fn run(
    provider: &dyn Provider,
    request: &ModelRequest,
) -> (Result<ModelResponse, ProviderError>, Vec<String>) {
    let deltas = Mutex::new(Vec::new());
    let sink = |t: &str| deltas.lock().unwrap().push(t.to_owned());
    let cancel = CancellationToken::new();
    let result = provider.complete(request, &sink, &cancel).await;
    (result, deltas.into_inner().unwrap())
}

/// A request with one user message.
pub fn hello() -> ModelRequest {
    ModelRequest {
        messages: vec![hands_agent::model::Message::user("hi")],
        max_tokens: 100,
        ..ModelRequest::default()
    }
}
