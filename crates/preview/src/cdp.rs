//! A small Chrome DevTools Protocol client over one connection to the browser (flat sessions for
//! pages): the pipe hands launches Chromium with (`--remote-debugging-pipe`: NUL-terminated JSON
//! on two FIFOs, see [`Cdp::over_pipe`]), or a WebSocket ([`Cdp::connect`], what other tools use
//! through the preview's DevTools endpoint).
//!
//! Flow: `connect` opens the socket (or `over_pipe` takes the pipe) and starts two tasks. The writer sends what `call` queues; the
//! reader routes each message: a response (it has an `id`) completes the matching call, an event
//! (a `method`) goes to the event channel the caller got from `connect`. When the socket ends
//! (Chromium exited or crashed) every pending call fails with [`CdpError::Closed`] and the
//! `closed` token fires. Messages stay `serde_json::Value`: the preview reads a dozen fields of a
//! handful of events, and a typed protocol pinned to one Chromium revision would break (and
//! has broken, in other clients) on the fields and enum values newer Chromiums add.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::net::unix::pipe;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_util::sync::CancellationToken;

/// How long one call waits for its response.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest message accepted (a full-page screenshot of a long page is tens of MB of base64).
const MAX_MESSAGE: usize = 512 << 20;

/// A protocol event.
#[derive(Debug, Clone)]
pub struct Event {
    /// E.g. `Runtime.exceptionThrown`.
    pub method: String,
    /// Its parameters.
    pub params: Value,
    /// The flat session it belongs to (a page), if any.
    pub session_id: Option<String>,
}

/// Why a call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CdpError {
    /// The socket could not be opened.
    #[error("cannot connect to the DevTools endpoint {url}: {reason}")]
    Connect {
        /// The endpoint.
        url: String,
        /// Why.
        reason: String,
    },
    /// The browser is gone (the socket ended).
    #[error("the browser's DevTools connection is closed")]
    Closed,
    /// No response in time.
    #[error("{0} got no answer from the browser within {1:?}")]
    Timeout(String, Duration),
    /// The browser answered with an error.
    #[error("{method} failed: {message}")]
    Protocol {
        /// The method called.
        method: String,
        /// The browser's message.
        message: String,
    },
}

/// Who waits for the response of an id.
#[derive(Debug)]
enum Waiter {
    /// [`Cdp::call`]: the result, or the error's message.
    Call(oneshot::Sender<Result<Value, CdpError>>),
    /// [`Cdp::forward`]: the whole response message.
    Raw(oneshot::Sender<Value>),
}

type Pending = Arc<Mutex<HashMap<u64, Waiter>>>;

/// Raw event messages for [`Cdp::subscribe_raw`] (the DevTools endpoint's clients).
const RAW_EVENTS: usize = 1024;

/// One DevTools connection.
#[derive(Debug)]
pub struct Cdp {
    out: mpsc::UnboundedSender<String>,
    pending: Pending,
    next: AtomicU64,
    closed: CancellationToken,
    raw_events: broadcast::Sender<Arc<str>>,
}

/// The shared half of a connection: what the reader task needs.
struct Reader {
    pending: Pending,
    events: mpsc::UnboundedSender<Event>,
    raw_events: broadcast::Sender<Arc<str>>,
    closed: CancellationToken,
}

impl Reader {
    /// Route one message; a message that is not JSON is skipped.
    fn message(&self, text: &str) {
        let Ok(mut value) = serde_json::from_str::<Value>(text) else { return };
        if value.get("id").is_none() && self.raw_events.receiver_count() > 0 {
            let _ = self.raw_events.send(Arc::from(text));
        }
        route(&mut value, &self.pending, &self.events);
    }

    /// The connection ended: every waiting call fails.
    fn end(&self) {
        self.closed.cancel();
        let waiting: Vec<_> =
            self.pending.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        for (_, waiter) in waiting {
            if let Waiter::Call(tx) = waiter {
                let _ = tx.send(Err(CdpError::Closed));
            }
        }
    }
}

impl Cdp {
    /// Connect to `url` (`ws://127.0.0.1:PORT/devtools/browser/ID`). Events arrive on the
    /// receiver, in order.
    pub async fn connect(
        url: &str,
    ) -> Result<(Arc<Self>, mpsc::UnboundedReceiver<Event>), CdpError> {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (socket, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
            .await
            .map_err(|err| CdpError::Connect { url: url.to_owned(), reason: err.to_string() })?;
        let (mut sink, mut stream) = socket.split();
        let (cdp, mut out_rx, reader, events_rx) = Self::parts();

        let writer_closed = cdp.closed.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    message = out_rx.recv() => {
                        let Some(text) = message else { break };
                        if sink.send(Message::Text(text.into())).await.is_err() {
                            break;
                        }
                    }
                    () = writer_closed.cancelled() => break,
                }
            }
            let _ = sink.close().await;
            writer_closed.cancel();
        });

        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    message = stream.next() => message,
                    () = reader.closed.cancelled() => None,
                };
                let text = match message {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Binary(bytes))) => match String::from_utf8(bytes.to_vec()) {
                        Ok(text) => text.into(),
                        Err(_) => continue,
                    },
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                reader.message(&text);
            }
            reader.end();
        });

        Ok((cdp, events_rx))
    }

    /// Talk to a browser started with `--remote-debugging-pipe`: `to_browser` is its fd 3 (hands
    /// writes), `from_browser` its fd 4 (hands reads); each message is JSON followed by a NUL.
    /// Only the hands process holds these ends, so no other user (or process) can reach the
    /// browser except through hands.
    pub fn over_pipe(
        mut to_browser: pipe::Sender,
        from_browser: pipe::Receiver,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<Event>) {
        let (cdp, mut out_rx, reader, events_rx) = Self::parts();

        let writer_closed = cdp.closed.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    message = out_rx.recv() => {
                        let Some(text) = message else { break };
                        let mut bytes = text.into_bytes();
                        bytes.push(0);
                        if to_browser.write_all(&bytes).await.is_err() {
                            break;
                        }
                    }
                    () = writer_closed.cancelled() => break,
                }
            }
            writer_closed.cancel();
        });

        tokio::spawn(async move {
            let mut from_browser = tokio::io::BufReader::with_capacity(1 << 16, from_browser);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                let read = tokio::select! {
                    read = from_browser.read_until(0, &mut buf) => read,
                    () = reader.closed.cancelled() => break,
                };
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                } else {
                    break; // the browser ended in the middle of a message
                }
                if buf.len() > MAX_MESSAGE {
                    continue;
                }
                if let Ok(text) = std::str::from_utf8(&buf) {
                    reader.message(text);
                }
            }
            reader.end();
        });

        (cdp, events_rx)
    }

    /// A connection with nothing behind it yet: the caller starts the tasks.
    #[allow(clippy::type_complexity)]
    fn parts()
    -> (Arc<Self>, mpsc::UnboundedReceiver<String>, Reader, mpsc::UnboundedReceiver<Event>) {
        let (out, out_rx) = mpsc::unbounded_channel::<String>();
        let (events, events_rx) = mpsc::unbounded_channel();
        let pending: Pending = Arc::default();
        let closed = CancellationToken::new();
        let (raw_events, _) = broadcast::channel(RAW_EVENTS);
        let reader = Reader {
            pending: Arc::clone(&pending),
            events,
            raw_events: raw_events.clone(),
            closed: closed.clone(),
        };
        let cdp = Arc::new(Self { out, pending, next: AtomicU64::new(1), closed, raw_events });
        (cdp, out_rx, reader, events_rx)
    }

    /// Send a message another client wrote (its `id` replaced by one of this connection, then
    /// put back): the whole response, `result` or `error`, as the browser sent it. `None` when
    /// the connection closed or no answer came in time.
    pub async fn forward(&self, mut message: Value) -> Option<Value> {
        if self.closed.is_cancelled() {
            return None;
        }
        let their_id = message.get("id").cloned()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        message["id"] = json!(id);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id, Waiter::Raw(tx));
        if self.out.send(message.to_string()).is_err() {
            self.forget(id);
            return None;
        }
        match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(mut response)) => {
                response["id"] = their_id;
                Some(response)
            }
            Ok(Err(_)) => None,
            Err(_) => {
                self.forget(id);
                None
            }
        }
    }

    /// Every event message from now on, as the browser sent it (for the DevTools endpoint's
    /// clients, which filter by `sessionId` themselves).
    pub fn subscribe_raw(&self) -> broadcast::Receiver<Arc<str>> {
        self.raw_events.subscribe()
    }

    /// Call `method` with `params`, in the page session `session` when given.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, CdpError> {
        if self.closed.is_cancelled() {
            return Err(CdpError::Closed);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = Value::String(session.to_owned());
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).insert(id, Waiter::Call(tx));
        if self.out.send(message.to_string()).is_err() {
            self.forget(id);
            return Err(CdpError::Closed);
        }
        match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(result)) => result.map_err(|err| match err {
                CdpError::Protocol { message, .. } => {
                    CdpError::Protocol { method: method.to_owned(), message }
                }
                other => other,
            }),
            Ok(Err(_)) => Err(CdpError::Closed),
            Err(_) => {
                self.forget(id);
                Err(CdpError::Timeout(method.to_owned(), CALL_TIMEOUT))
            }
        }
    }

    fn forget(&self, id: u64) {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id);
    }

    /// True once the socket ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Fired when the socket ends.
    pub fn closed(&self) -> &CancellationToken {
        &self.closed
    }

    /// Close the socket (the browser keeps running).
    pub fn close(&self) {
        self.closed.cancel();
    }
}

/// Send a response to its caller, or an event to the event channel.
fn route(value: &mut Value, pending: &Pending, events: &mpsc::UnboundedSender<Event>) {
    if let Some(id) = value.get("id").and_then(Value::as_u64) {
        let Some(waiter) = pending.lock().unwrap_or_else(PoisonError::into_inner).remove(&id)
        else {
            return;
        };
        let tx = match waiter {
            Waiter::Call(tx) => tx,
            Waiter::Raw(tx) => {
                let _ = tx.send(value.take());
                return;
            }
        };
        let result = match value.get_mut("error") {
            Some(error) => Err(CdpError::Protocol {
                method: String::new(),
                message: error["message"].as_str().unwrap_or("unknown error").to_owned(),
            }),
            None => Ok(value.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
        };
        let _ = tx.send(result);
        return;
    }
    let Some(method) = value.get("method").and_then(Value::as_str) else { return };
    let event = Event {
        method: method.to_owned(),
        session_id: value.get("sessionId").and_then(Value::as_str).map(str::to_owned),
        params: value.get_mut("params").map(Value::take).unwrap_or(Value::Null),
    };
    let _ = events.send(event);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_go_to_their_caller_and_events_to_the_channel() {
        let pending: Pending = Arc::default();
        let (tx, mut rx) = oneshot::channel();
        pending.lock().unwrap().insert(7, Waiter::Call(tx));
        let (events, mut events_rx) = mpsc::unbounded_channel();
        route(&mut json!({"id": 7, "result": {"ok": true}}), &pending, &events);
        assert_eq!(rx.try_recv().unwrap(), Ok(json!({"ok": true})));
        route(
            &mut json!({"method": "Runtime.exceptionThrown", "params": {"x": 1}, "sessionId": "S"}),
            &pending,
            &events,
        );
        let event = events_rx.try_recv().unwrap();
        assert_eq!(
            (event.method.as_str(), event.params, event.session_id.as_deref()),
            ("Runtime.exceptionThrown", json!({"x": 1}), Some("S"))
        );
        let (tx, mut rx) = oneshot::channel();
        pending.lock().unwrap().insert(8, Waiter::Call(tx));
        route(
            &mut json!({"id": 8, "error": {"code": -32000, "message": "No target"}}),
            &pending,
            &events,
        );
        assert!(
            matches!(rx.try_recv().unwrap(), Err(CdpError::Protocol { message, .. }) if message == "No target")
        );
    }
}
