//! The preview's DevTools endpoint for other tools of the same user (the discovery file names it):
//! hands talks to Chromium over a pipe only it holds, and serves the browser's protocol here, on
//! `ws://127.0.0.1:PORT/devtools/browser/SECRET`. SECRET is 32 random bytes made at each launch
//! and written only to the discovery file (0600): a connection to any other path — another local
//! user guessing, a web page — gets 404, and there is no `/json` listing to read it from.
//!
//! Each client's messages go to the browser with ids of hands' own connection (so that clients
//! and hands never mix up answers), and the answers go back with the client's ids. Every event
//! goes to every client; CDP clients keep the events of the sessions they attached and drop the
//! rest, as they do on a shared browser connection.

use std::io::Read as _;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::StatusCode;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_util::sync::CancellationToken;

use crate::cdp::Cdp;

/// Largest message a client may send (a `Page.setDocumentContent` of a large page).
const MAX_MESSAGE: usize = 64 << 20;

/// A running endpoint; stops when dropped.
#[derive(Debug)]
pub struct Endpoint {
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    /// `ws://127.0.0.1:PORT/devtools/browser/SECRET`.
    pub ws_url: String,
    stop: CancellationToken,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Serve `cdp` on a free loopback port until the endpoint is dropped or `cdp` closes.
pub async fn serve(cdp: &Arc<Cdp>) -> std::io::Result<Endpoint> {
    let secret = random_hex()?;
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let path = format!("/devtools/browser/{secret}");
    let ws_url = format!("ws://{addr}{path}");
    let stop = CancellationToken::new();
    let closed = cdp.closed().clone();
    let weak = Arc::downgrade(cdp);
    let accept_stop = stop.clone();
    tokio::spawn(async move {
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(_) => continue,
                },
                () = accept_stop.cancelled() => break,
                () = closed.cancelled() => break,
            };
            tokio::spawn(client(stream, path.clone(), weak.clone(), accept_stop.clone()));
        }
    });
    Ok(Endpoint { addr, ws_url, stop })
}

/// One client: the WebSocket handshake (only on the secret path), then its messages to the
/// browser and the answers and events back.
// The handshake callback's error type is tungstenite's (an HTTP response), not ours to shrink.
#[allow(clippy::result_large_err)]
async fn client(stream: TcpStream, path: String, cdp: Weak<Cdp>, stop: CancellationToken) {
    let check = move |request: &Request, response: Response| {
        if request.uri().path() == path {
            Ok(response)
        } else {
            let mut refused = ErrorResponse::new(Some("not found".into()));
            *refused.status_mut() = StatusCode::NOT_FOUND;
            Err(refused)
        }
    };
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let Ok(socket) =
        tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config)).await
    else {
        return;
    };
    let Some(strong) = cdp.upgrade() else { return };
    let mut events = strong.subscribe_raw();
    let closed = strong.closed().clone();
    drop(strong);
    let (mut sink, mut source) = socket.split();
    let (answers, mut answers_rx) = mpsc::unbounded_channel::<String>();
    let gone = CancellationToken::new();

    let writer_gone = gone.clone();
    let writer = tokio::spawn(async move {
        loop {
            let text: String = tokio::select! {
                answer = answers_rx.recv() => match answer {
                    Some(text) => text,
                    None => break,
                },
                event = events.recv() => match event {
                    Ok(text) => text.to_string(),
                    // A slow client misses events rather than holding the browser back.
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => break,
                },
                () = writer_gone.cancelled() => break,
            };
            if sink.send(Message::Text(text.into())).await.is_err() {
                break;
            }
        }
        let _ = sink.close().await;
    });

    loop {
        let message = tokio::select! {
            message = source.next() => message,
            () = stop.cancelled() => None,
            () = closed.cancelled() => None,
        };
        let text = match message {
            Some(Ok(Message::Text(text))) => text.to_string(),
            Some(Ok(Message::Binary(bytes))) => match String::from_utf8(bytes.to_vec()) {
                Ok(text) => text,
                Err(_) => continue,
            },
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
            Some(Ok(_)) => continue,
        };
        let Ok(value) = serde_json::from_str::<Value>(&text) else { continue };
        if value.get("id").is_none() {
            continue;
        }
        let Some(cdp) = cdp.upgrade() else { break };
        let answers = answers.clone();
        // Calls run side by side, as on a direct connection.
        tokio::spawn(async move {
            if let Some(answer) = cdp.forward(value).await {
                let _ = answers.send(answer.to_string());
            }
        });
    }
    gone.cancel();
    let _ = writer.await;
}

/// 32 random bytes from the kernel, as 64 hex digits.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
