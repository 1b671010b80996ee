//! The accept loop of `hands serve`: HTTP/1.1 (hyper; no protocol upgrades, which no route uses)
//! with a header read timeout — a connection
//! that does not finish a request head in time, idle keep-alive connections included, is closed —
//! and a cap on open connections (at the cap, hands stops accepting until one closes; the kernel's
//! backlog holds the rest). On shutdown it stops accepting, asks every connection to finish its
//! request, and waits for them a bounded time.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// How long open connections get to finish once shutdown starts.
const DRAIN: Duration = Duration::from_secs(5);

/// The limits of one listener.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request head must arrive whole within this time of the connection opening (or of the
    /// previous response, for a kept-alive connection).
    pub header_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
}

/// Serve `app` on `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                // Out of file descriptors and the like: wait a little rather than spin.
                tracing::warn!(error = %err, "cannot accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let service = app
            .clone()
            .map_request(|request: Request<Incoming>| request.map(Body::new))
            .map_err(|never: Infallible| match never {});
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        tracing::warn!("connections still open {DRAIN:?} after shutdown began; leaving them");
    }
}
