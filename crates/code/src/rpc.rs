//! JSON-RPC 2.0 with LSP's `Content-Length` framing, over the two pipes of one language server.
//!
//! Our own small module rather than async-lsp or tower-lsp's client side: a client of a server
//! needs only requests with ids, notifications both ways and a handful of server-to-client
//! requests answered with defaults — about two hundred lines — while those crates bring their own
//! main loop and service stack around the transport. The protocol's types all come from
//! `lsp-types`. Flow: [`Rpc::start`] spawns the reader, which resolves pending requests by id,
//! answers the server's own requests, and hands notifications to a callback; a message over
//! [`MAX_MESSAGE`] ends the connection (a server cannot make hands buffer without bound).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use lsp_types::notification::Notification;
use lsp_types::request::Request;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// The largest message read from a server (a workspace's symbols fit many times over).
pub const MAX_MESSAGE: usize = 64 << 20;

/// What can go wrong talking to a server.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    /// The connection is gone (the server exited or broke the framing).
    #[error("the language server's connection closed{}", .0.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Closed(Option<String>),
    /// The server answered with an error.
    #[error("the language server answered {method} with error {code}: {message}")]
    Server {
        /// The request's method.
        method: &'static str,
        /// The JSON-RPC error code.
        code: i64,
        /// Its message.
        message: String,
    },
    /// The answer did not have the shape of the method's result.
    #[error("the language server's answer to {method} did not parse: {reason}")]
    Shape {
        /// The request's method.
        method: &'static str,
        /// Why.
        reason: String,
    },
}

type Pending = Mutex<HashMap<i64, oneshot::Sender<Result<Value, (i64, String)>>>>;
type Writer = tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>;

/// The callback notifications from the server go to: method and params.
pub type OnNotification = Box<dyn Fn(&str, Value) + Send + Sync>;

/// One connection to a language server.
pub struct Rpc {
    writer: Writer,
    pending: Arc<Pending>,
    next_id: AtomicI64,
    closed: CancellationToken,
    reason: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for Rpc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rpc").field("closed", &self.closed.is_cancelled()).finish_non_exhaustive()
    }
}

impl Rpc {
    /// Talk over `reader`/`writer`; notifications go to `on_notification`. Must be called within
    /// a tokio runtime.
    pub fn start(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
        on_notification: OnNotification,
    ) -> Arc<Self> {
        let rpc = Arc::new(Self {
            writer: tokio::sync::Mutex::new(Box::new(writer)),
            pending: Arc::new(Mutex::new(HashMap::new())),
            next_id: AtomicI64::new(1),
            closed: CancellationToken::new(),
            reason: Arc::new(Mutex::new(None)),
        });
        let weak = Arc::downgrade(&rpc);
        let (closed, pending, reason) =
            (rpc.closed.clone(), Arc::clone(&rpc.pending), Arc::clone(&rpc.reason));
        tokio::spawn(async move {
            let mut reader = BufReader::new(reader);
            let why = loop {
                let message = tokio::select! {
                    m = read_message(&mut reader) => m,
                    () = closed.cancelled() => break None,
                };
                let message = match message {
                    Ok(m) => m,
                    Err(why) => break Some(why),
                };
                if let Some(reply) = dispatch(message, &pending, &on_notification)
                    && let Some(rpc) = weak.upgrade()
                {
                    let _ = rpc.send(&reply).await;
                }
            };
            *reason.lock().unwrap_or_else(PoisonError::into_inner) = why;
            closed.cancel();
            pending.lock().unwrap_or_else(PoisonError::into_inner).clear();
        });
        rpc
    }

    /// True once the connection ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// End the connection (the reader stops; pending requests fail).
    pub fn close(&self) {
        self.closed.cancel();
    }

    fn closed_error(&self) -> RpcError {
        RpcError::Closed(self.reason.lock().unwrap_or_else(PoisonError::into_inner).clone())
    }

    async fn send(&self, message: &Value) -> Result<(), RpcError> {
        let body = message.to_string();
        let mut writer = self.writer.lock().await;
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let written = async {
            writer.write_all(frame.as_bytes()).await?;
            writer.flush().await
        };
        tokio::select! {
            r = written => r.map_err(|err| RpcError::Closed(Some(err.to_string()))),
            () = self.closed.cancelled() => Err(self.closed_error()),
        }
    }

    /// Send request `R` and wait for its answer (the caller bounds the wait).
    pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id, tx);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": R::METHOD, "params": params});
        if let Err(err) = self.send(&message).await {
            self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
            return Err(err);
        }
        // Biased: an answer that arrived just before the connection closed still counts.
        let answer = tokio::select! {
            biased;
            a = rx => a.map_err(|_| self.closed_error())?,
            () = self.closed.cancelled() => return Err(self.closed_error()),
        };
        let value = answer.map_err(|(code, message)| RpcError::Server {
            method: R::METHOD,
            code,
            message,
        })?;
        serde_json::from_value(value)
            .map_err(|err| RpcError::Shape { method: R::METHOD, reason: err.to_string() })
    }

    /// Send notification `N`.
    pub async fn notify<N: Notification>(&self, params: N::Params) -> Result<(), RpcError> {
        self.send(&json!({"jsonrpc": "2.0", "method": N::METHOD, "params": params})).await
    }
}

impl Drop for Rpc {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

/// Route one message: a response resolves its request; a request of the server gets the reply
/// returned; a notification goes to the callback.
fn dispatch(message: Value, pending: &Pending, on_notification: &OnNotification) -> Option<Value> {
    let id = message.get("id").cloned();
    match (message.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Some(answer_server_request(method, &message, id)),
        (Some(method), None) => {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            on_notification(method, params);
            None
        }
        (None, Some(id)) => {
            let id = id.as_i64()?;
            let waiter = pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id)?;
            let result = match message.get("error") {
                Some(error) => Err((
                    error.get("code").and_then(Value::as_i64).unwrap_or(0),
                    error.get("message").and_then(Value::as_str).unwrap_or("").to_owned(),
                )),
                None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
            };
            let _ = waiter.send(result);
            None
        }
        (None, None) => None,
    }
}

/// The server asks something of the client: configuration (none: each item null), progress
/// tokens and capability registrations (accepted), anything else (null).
fn answer_server_request(method: &str, message: &Value, id: Value) -> Value {
    let result = match method {
        "workspace/configuration" => {
            let items =
                message.pointer("/params/items").and_then(Value::as_array).map_or(0, Vec::len);
            Value::Array(vec![Value::Null; items])
        }
        _ => Value::Null,
    };
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Read one framed message; an error says why the connection ends.
async fn read_message<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Result<Value, String> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader.read_line(&mut line).await.map_err(|err| err.to_string())?;
        if n == 0 {
            return Err("end of output".to_owned());
        }
        if line.len() > 1024 {
            return Err("a header line over 1 KiB".to_owned());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok();
        }
    }
    let length = length.ok_or("a message without Content-Length")?;
    if length > MAX_MESSAGE {
        return Err(format!("a message of {length} bytes, over the {MAX_MESSAGE} read"));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.map_err(|err| err.to_string())?;
    serde_json::from_slice(&body).map_err(|err| format!("a message that is not JSON: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_get_their_answers_and_server_requests_get_defaults() {
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (client_read, client_write) = tokio::io::split(client_end);
        let (server_read, mut server_write) = tokio::io::split(server_end);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let rpc = Rpc::start(
            client_read,
            client_write,
            Box::new(move |method, _| log.lock().unwrap().push(method.to_owned())),
        );
        let server = tokio::spawn(async move {
            let mut reader = BufReader::new(server_read);
            let request = read_message(&mut reader).await.unwrap();
            assert_eq!(request["method"], "shutdown");
            for message in [
                json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {}}),
                json!({"jsonrpc": "2.0", "id": "s1", "method": "workspace/configuration",
                       "params": {"items": [{}, {}]}}),
                json!({"jsonrpc": "2.0", "id": request["id"], "result": null}),
            ] {
                let body = message.to_string();
                let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
                server_write.write_all(frame.as_bytes()).await.unwrap();
            }
            read_message(&mut reader).await.unwrap()
        });
        rpc.request::<lsp_types::request::Shutdown>(()).await.unwrap();
        let reply = server.await.unwrap();
        assert_eq!(reply, json!({"jsonrpc": "2.0", "id": "s1", "result": [null, null]}));
        assert_eq!(*seen.lock().unwrap(), vec!["window/logMessage"]);
    }

    #[tokio::test]
    async fn an_oversized_message_ends_the_connection() {
        let (client_end, server_end) = tokio::io::duplex(1 << 10);
        let (client_read, client_write) = tokio::io::split(client_end);
        let (_server_read, mut server_write) = tokio::io::split(server_end);
        let rpc = Rpc::start(client_read, client_write, Box::new(|_, _| {}));
        let frame = format!("Content-Length: {}\r\n\r\n", MAX_MESSAGE + 1);
        server_write.write_all(frame.as_bytes()).await.unwrap();
        let err = rpc.request::<lsp_types::request::Shutdown>(()).await.unwrap_err();
        assert!(err.to_string().contains("over the"), "{err}");
    }
}
