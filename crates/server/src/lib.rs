//! The HTTP front end of hands: MCP at `/mcp`, the session API under `/v1/` (sessions, messages,
//! an SSE event stream that resumes with `Last-Event-ID`, direct tool calls, answers, approvals,
//! aborts, processes), the compatibility routes `POST /vibe/answer` and
//! `POST /vibe/abort/{projectId}`, and the OpenAPI document at `/v1/openapi.json`.
//!
//! A request passes, outermost first: the egress pass (every body the server sends is redacted
//! as it leaves, the UI's own assets and images aside), the JSON error layer (every error of `/v1` and `/vibe` is
//! `{"error": {"code", "message"}}`), the guard of hands-mcp (Host/Origin → 403, bearer token →
//! 401; `/healthz` is open), a panic catcher (500 rather than a dropped connection), the body
//! limit (413), then a handler in [`routes`] that calls one [`Host`] method. `POST /v1/signin`
//! alone passes the guard without the token: it trades a one-time code of [`signin`] for it.
//!
//! ```no_run
//! # async fn run(host: std::sync::Arc<hands_agent::host::Host>,
//! #              factory: std::sync::Arc<hands_mcp::ServerFactory>) {
//! let config = hands_server::ServerConfig::default();
//! let addr = "127.0.0.1:7777".parse().unwrap();
//! hands_server::serve(host, factory, addr, &config).await.unwrap();
//! # }
//! ```

#![deny(missing_docs)]

mod body;
mod checkpoints;
mod config;
pub mod docs;
mod egress;
mod error;
mod events;
pub mod forward;
mod forward_mcp;
mod health;
pub mod listener;
pub mod metrics;
pub mod openapi;
mod operation;
mod preview;
pub mod routes;
pub mod schemas;
mod secrets;
mod sessions;
pub mod signin;
mod signin_route;
mod state;
pub mod token;
pub mod ui;
mod vibe;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::Request;
use hands_agent::host::Host;
use hands_mcp::{HttpError, ServerFactory};
use tokio_util::sync::CancellationToken;
use tower_http::catch_panic::CatchPanicLayer;

pub use config::{
    DEFAULT_HEADER_TIMEOUT_MS, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, ServerConfig,
};
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use events::KEEP_ALIVE;
pub use signin::SignIn;

/// The whole app: `/mcp` and `/healthz` from hands-mcp, `/v1` and `/vibe` over `host`, all
/// behind the same request guard. `shutdown` ends every MCP session and event stream when fired
/// (an open stream would otherwise hold a graceful shutdown forever). Its sign-in codes are its
/// own; [`router_with`] takes them from the caller, who mints the links.
pub fn router(
    host: Arc<Host>,
    mcp_factory: Arc<ServerFactory>,
    config: &ServerConfig,
    shutdown: CancellationToken,
) -> Router {
    let signin = SignIn::new(config.mcp().token, signin::LIFETIME);
    router_with(host, mcp_factory, config, shutdown, signin)
}

/// [`router`] whose `POST /v1/signin` trades the codes of `signin`.
pub fn router_with(
    host: Arc<Host>,
    mcp_factory: Arc<ServerFactory>,
    config: &ServerConfig,
    shutdown: CancellationToken,
    signin: SignIn,
) -> Router {
    let guard = config.mcp();
    let (node, clustered) = host.node_id();
    if clustered {
        // The handles 2026-07-28 clients get name this node, so that any node sends them here.
        mcp_factory.set_node(node);
    }
    let forwarder = forward::Forwarder::new(Arc::clone(&host), config.max_body_bytes);
    let mcp_forwarder = forwarder.clone();
    let forwarded = Arc::clone(&forwarder.forwarded);
    // Relative to where hands runs, a root means nothing to a client: it gets it absolute.
    let root = std::fs::canonicalize(mcp_factory.root())
        .or_else(|_| std::path::absolute(mcp_factory.root()))
        .ok()
        .map(Arc::from);
    let serving = routes::Serving {
        max_body_bytes: config.max_body_bytes,
        shutdown: shutdown.clone(),
        root,
        signin,
    };
    let routes::Api { guarded, open } = routes::api(Arc::clone(&host), serving);
    let api = guarded
        .layer(axum::middleware::from_fn_with_state(forwarder, forward::layer))
        .merge(metrics::routes(Arc::clone(&host), forwarded))
        .layer(CatchPanicLayer::custom(error::panic_response));
    let api = hands_mcp::guarded(api, &guard).layer(axum::middleware::from_fn(error::json_errors));
    // The page must load without the token (it asks for it), and the sign-in exchange is how it
    // gets one; the Host/Origin checks still apply to both.
    let tokenless = hands_mcp::ServerConfig { token: None, ..guard.clone() };
    let open =
        hands_mcp::guarded(open.layer(CatchPanicLayer::custom(error::panic_response)), &tokenless)
            .layer(axum::middleware::from_fn(error::json_errors));
    let ui = hands_mcp::guarded(ui::routes(), &tokenless);
    let health = hands_mcp::guarded(health::routes(host), &guard);
    let forward_mcp = |mcp: Router| {
        mcp.layer(axum::middleware::from_fn_with_state(mcp_forwarder, forward_mcp::layer))
    };
    hands_mcp::router_with(mcp_factory, &guard, shutdown, forward_mcp)
        .merge(api)
        .merge(open)
        .merge(ui)
        .merge(health)
        .fallback(no_route)
        .layer(axum::middleware::from_fn(egress::redact))
}

async fn no_route(request: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route {} {}: the API is described at /v1/openapi.json",
        request.method(),
        request.uri().path()
    ))
}

/// Why `hands serve` did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Binding or serving failed.
    #[error(transparent)]
    Http(#[from] HttpError),
    /// No token was configured and the generated one could not be kept.
    #[error(transparent)]
    Token(#[from] token::TokenError),
    /// This node could not register with the others.
    #[error("cannot register this node in the session store: {0}")]
    Join(hands_agent::host::HostError),
    /// Other nodes could not forward to this one without sending tokens in clear.
    #[error("this node cannot join the cluster: {0}")]
    Forwarding(String),
}

/// Serve [`router`] on `listen` until SIGINT/SIGTERM, then end the MCP sessions (their processes
/// stop) and close the host's sessions. A bearer token is always required, loopback included:
/// without one in `config`, the one kept in the state folder is used (made at first start), and
/// stderr says where it is (never what it is). A listen address that is not loopback needs a
/// configured token.
pub async fn serve(
    host: Arc<Host>,
    mcp_factory: Arc<ServerFactory>,
    listen: SocketAddr,
    config: &ServerConfig,
) -> Result<(), ServeError> {
    serve_with(host, mcp_factory, listen, config, |_: Ready| {}).await
}

/// What [`serve_with`]'s `on_ready` gets once the listener accepts.
pub struct Ready {
    /// Where the web UI is (on loopback when listening on every address).
    pub addr: SocketAddr,
    /// The server's sign-in codes: [`SignIn::link`] makes a one-time link for a browser.
    pub signin: SignIn,
}

/// [`serve`], calling `on_ready` once the listener accepts (`hands serve --open` opens the
/// browser there, with a one-time sign-in link).
pub async fn serve_with(
    host: Arc<Host>,
    mcp_factory: Arc<ServerFactory>,
    listen: SocketAddr,
    config: &ServerConfig,
    on_ready: impl FnOnce(Ready),
) -> Result<(), ServeError> {
    let mut config = config.clone();
    config.token = config.token.filter(|t| !t.is_empty());
    // Open to other machines, the token must be one the user chose and handed out on purpose.
    if !listen.ip().is_loopback() && config.token.is_none() {
        return Err(HttpError::TokenRequired(listen).into());
    }
    let stored = match config.token {
        Some(_) => None,
        None => {
            let dir = token::state_dir().ok_or(token::TokenError::NoStateDir)?;
            let stored = token::load_or_create(&dir)?;
            config.token = Some(stored.value.clone());
            Some(stored)
        }
    };
    let shutdown = CancellationToken::new();
    let signin = SignIn::new(config.token.clone(), signin::LIFETIME);
    let app = router_with(
        Arc::clone(&host),
        Arc::clone(&mcp_factory),
        &config,
        shutdown.clone(),
        signin.clone(),
    );
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|source| HttpError::Io { addr: listen, source })?;
    let local = listener.local_addr().unwrap_or(listen);
    // The secrets tool's pages, for MCP clients that declare URL elicitation: reachable on
    // loopback even when listening on every address.
    let page_host = if local.ip().is_unspecified() {
        SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), local.port())
    } else {
        local
    };
    mcp_factory.secret_pages().set_base(&format!("http://{page_host}"));
    // Scripts and tests read this line to learn the port (with --listen 127.0.0.1:0).
    eprintln!(
        "hands: serving MCP at http://{local}/mcp, the session API at http://{local}/v1 and the \
         web UI at http://{page_host}/"
    );
    if let Some(stored) = &stored {
        eprintln!("{}", token::usage_hint(stored, &format!("http://{local}")));
    }
    // Other nodes forward requests about the sessions this one runs to this address.
    let (_, clustered) = host.node_id();
    if clustered {
        let url = host.advertise_url().unwrap_or_else(|| format!("http://{page_host}"));
        host.may_forward_to(&url).map_err(ServeError::Forwarding)?;
        host.join(&url).await.map_err(ServeError::Join)?;
    }
    on_ready(Ready { addr: page_host, signin });
    let stop = shutdown.clone();
    let draining = Arc::clone(&host);
    tokio::spawn(async move {
        hands_mcp::shutdown_signal().await;
        // Readiness fails at once; running turns get the grace to end, streams go on meanwhile.
        draining.drain(draining.drain_grace()).await;
        stop.cancel();
    });
    let limits = listener::Limits {
        header_timeout: std::time::Duration::from_millis(config.header_timeout_ms.max(1)),
        max_connections: config.max_connections,
    };
    listener::serve(listener, app, limits, shutdown.clone()).await;
    shutdown.cancel();
    mcp_factory.close_all().await;
    host.close().await;
    Ok(())
}
