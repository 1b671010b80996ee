//! `hands mcp`: one MCP connection over stdin/stdout. The connection ends on stdin EOF, on
//! SIGINT or SIGTERM; either way the session is closed (every process it started is stopped)
//! before this returns. Nothing but protocol messages goes to stdout.

use std::sync::Arc;

use rmcp::service::serve_server_with_ct;
use tokio_util::sync::CancellationToken;

use crate::server::ServerFactory;

/// Why the stdio server stopped early.
#[derive(Debug, thiserror::Error)]
pub enum StdioError {
    /// The handshake failed (the client closed stdin first, or sent no `initialize`).
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
}

/// Serve one connection on stdin/stdout until it ends, then close its session.
pub async fn serve_stdio(factory: Arc<ServerFactory>) -> Result<(), StdioError> {
    let server = factory.connection();
    let session = server.session().clone();
    let ct = CancellationToken::new();
    let stop = ct.clone();
    let signals = tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("signal received: stopping the MCP server");
        stop.cancel();
    });
    let served = match pipes() {
        Some(pipes) => serve_server_with_ct(server, pipes, ct.clone()).await,
        None => serve_server_with_ct(server, rmcp::transport::stdio(), ct.clone()).await,
    };
    let result = match served {
        Ok(running) => {
            let quit = running.waiting().await;
            tracing::debug!(?quit, "MCP connection ended");
            Ok(())
        }
        Err(err) if ct.is_cancelled() => {
            tracing::debug!(%err, "stopped before the handshake");
            Ok(())
        }
        Err(err) => Err(StdioError::Handshake(err.to_string())),
    };
    signals.abort();
    session.close().await;
    result
}

/// stdin and stdout as non-blocking pipes driven by the runtime's reactor, when both are pipes
/// (as they are under a client that spawned hands). tokio's own stdin/stdout go through the
/// blocking thread pool, a thread hand-off per message each way; this saves both on every round
/// trip. Anything else (a terminal, a socket pair) keeps tokio's stdio.
fn pipes() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::fd::AsFd;
    let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    let receiver = tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(input)).ok()?;
    let sender = tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(output)).ok()?;
    Some((receiver, sender))
}

/// SIGINT or SIGTERM (never fires where the handlers cannot be installed).
pub async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) =
        (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
    else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}
