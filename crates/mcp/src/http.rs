//! `hands serve`: MCP over Streamable HTTP at `/mcp` (rmcp's `StreamableHttpService`, one
//! [`crate::McpServer`] and so one session per MCP session) and `GET /healthz`, in axum. Every
//! request first passes [`guard`]: a Host or Origin that is not loopback or allow-listed gets 403
//! (DNS rebinding), then, when a token is required, a missing or wrong bearer token gets 401.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::gone::ClientGone;
use crate::server::ServerFactory;

/// Largest request body accepted at `/mcp`.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// `[server]`: who may talk to `hands serve`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Hosts accepted in the `Host` header besides the loopback ones (`localhost`, `127.0.0.1`,
    /// `[::1]`, any port): a name (any port) or `name:port`.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides loopback ones, e.g. `https://app.example.com` (exact match).
    pub allowed_origins: Vec<String>,
    /// Bearer token required at `/mcp` (env `HANDS_SERVER__TOKEN`). Required whenever the listen
    /// address is not loopback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Why `hands serve` did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// A non-loopback listen address without a token.
    #[error(
        "listening on {0} (not loopback) needs a bearer token: pass --token or set \
         HANDS_SERVER__TOKEN"
    )]
    TokenRequired(SocketAddr),
    /// Binding or serving failed.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The listen address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
}

/// The request checks of one server.
#[derive(Debug, Clone)]
struct Guard {
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    token: Option<String>,
}

/// The axum app: `/mcp` and `/healthz` behind the Host/Origin/token guard. `shutdown` ends every
/// MCP session when fired.
pub fn router(
    factory: Arc<ServerFactory>,
    config: &ServerConfig,
    shutdown: CancellationToken,
) -> Router {
    router_with(factory, config, shutdown, |mcp| mcp)
}

/// [`router`], with `wrap` applied to the `/mcp` route inside the guard (`hands serve` adds its
/// forwarding to other nodes there, for requests that passed the guard).
pub fn router_with(
    factory: Arc<ServerFactory>,
    config: &ServerConfig,
    shutdown: CancellationToken,
    wrap: impl FnOnce(Router) -> Router,
) -> Router {
    // Host and Origin are checked by the guard, the same way for every route. No SSE priming
    // events (an event id with empty data, SEP-1699): clients of protocol 2025-06-18 and older
    // (Gemini CLI) parse every event's data as JSON and drop the server on them, and hands never
    // closes a stream early, which is all they are for; every message still has its event id.
    let mcp_config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_sse_retry(None)
        .with_cancellation_token(shutdown);
    let factory_pages = factory.secret_pages().clone();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.sse_retry = None;
    let mcp = StreamableHttpService::new(
        move || Ok(factory.connection()),
        Arc::new(sessions),
        mcp_config,
    );
    let pages = factory_pages;
    let app = wrap(Router::new().route_service("/mcp", mcp))
        .route("/healthz", get(|| async { "ok\n" }))
        .merge(pages.routes());
    guarded(app, config)
}

/// Put every route of `router` behind the checks `/mcp` has: a Host or Origin that is not
/// loopback or allow-listed gets 403, a missing or wrong bearer token (when `config` has one) 401
/// (`/healthz` excepted). The session API of `hands serve` is guarded with it too.
pub fn guarded<S>(router: Router<S>, config: &ServerConfig) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    let guard = Guard {
        allowed_hosts: config.allowed_hosts.iter().map(|h| h.to_ascii_lowercase()).collect(),
        allowed_origins: config
            .allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect(),
        token: config.token.clone().filter(|t| !t.is_empty()),
    };
    router.layer(from_fn_with_state(Arc::new(guard), guard_layer))
}

async fn guard_layer(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    if let Err(rejection) = guard.check(request.headers(), request.uri().path()) {
        return rejection.into_response();
    }
    // rmcp does not cancel a session's request when its client goes away; this token fires when
    // the response body is dropped (finished or disconnected), and the handler cancels with it.
    let gone = CancellationToken::new();
    request.extensions_mut().insert(ClientGone(gone.clone()));
    let response = next.run(request).await;
    let guard = gone.drop_guard();
    response.map(|inner| Body::new(GuardedBody { inner, _guard: guard }))
}

/// A response body that fires its [`ClientGone`] token when dropped.
struct GuardedBody {
    inner: Body,
    _guard: tokio_util::sync::DropGuard,
}

impl http_body::Body for GuardedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Why a request was turned away.
#[derive(Debug, PartialEq, Eq)]
enum Rejection {
    /// 400: more than one Host or Origin header (which one a proxy or browser meant is unclear).
    BadRequest(String),
    /// 403: a foreign Host or Origin.
    Forbidden(String),
    /// 401 with `WWW-Authenticate: Bearer`.
    Unauthorized,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        match self {
            Self::BadRequest(message) => {
                (StatusCode::BAD_REQUEST, format!("{message}\n")).into_response()
            }
            Self::Forbidden(message) => {
                (StatusCode::FORBIDDEN, format!("{message}\n")).into_response()
            }
            Self::Unauthorized => {
                let mut response = (StatusCode::UNAUTHORIZED, "a valid bearer token is required\n")
                    .into_response();
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                response
            }
        }
    }
}

impl Guard {
    fn check(&self, headers: &HeaderMap, path: &str) -> Result<(), Rejection> {
        for name in [header::HOST, header::ORIGIN] {
            if headers.get_all(&name).iter().nth(1).is_some() {
                return Err(Rejection::BadRequest(format!(
                    "more than one {name} header: send exactly one"
                )));
            }
        }
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
        if !self.host_allowed(host) {
            return Err(Rejection::Forbidden(format!("Host {host:?} is not allowed")));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                return Err(Rejection::Forbidden(format!("Origin {origin:?} is not allowed")));
            }
        }
        // A secret page's URL is its own capability (a browser has no bearer token).
        if path != "/healthz"
            && path != "/readyz"
            && !crate::secret_page::is_page(path)
            && let Some(token) = &self.token
        {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
                .map(str::trim);
            if !given.is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes())) {
                return Err(Rejection::Unauthorized);
            }
        }
        Ok(())
    }

    fn host_allowed(&self, authority: &str) -> bool {
        let authority = authority.trim().to_ascii_lowercase();
        let Some(host) = host_of(&authority) else { return false };
        is_loopback_name(host)
            || self.allowed_hosts.iter().any(|allowed| *allowed == authority || allowed == host)
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        if self.allowed_origins.contains(&origin) {
            return true;
        }
        let Some(rest) = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"))
        else {
            return false;
        };
        host_of(rest).is_some_and(is_loopback_name)
    }
}

/// The host of `host[:port]` or `[v6][:port]`; `None` when malformed.
fn host_of(authority: &str) -> Option<&str> {
    if authority.is_empty() || authority.contains(['/', '@', ' ']) {
        return None;
    }
    if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        return Some(v6);
    }
    match authority.split_once(':') {
        None => Some(authority),
        Some((host, port)) if is_port(port) && !host.is_empty() => Some(host),
        Some(_) => None,
    }
}

fn is_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

fn is_loopback_name(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(hosts: &[&str], origins: &[&str], token: Option<&str>) -> Guard {
        Guard {
            allowed_hosts: hosts.iter().map(|s| (*s).to_owned()).collect(),
            allowed_origins: origins.iter().map(|s| (*s).to_owned()).collect(),
            token: token.map(str::to_owned),
        }
    }

    #[test]
    fn loopback_hosts_pass_with_any_port_and_others_do_not() {
        let g = guard(&[], &[], None);
        for ok in ["localhost", "localhost:7777", "127.0.0.1:1", "[::1]:7777", "[::1]", "LOCALHOST"]
        {
            assert!(g.host_allowed(ok), "{ok}");
        }
        for bad in ["evil.com", "127.0.0.1.evil.com", "localhost:x", "", "[::1]x", "a@localhost"] {
            assert!(!g.host_allowed(bad), "{bad}");
        }
        let g = guard(&["example.com", "api.example.com:8080"], &[], None);
        assert!(g.host_allowed("example.com:443"));
        assert!(g.host_allowed("api.example.com:8080"));
        assert!(!g.host_allowed("api.example.com:9090"));
    }

    #[test]
    fn origins_must_be_loopback_or_listed() {
        let g = guard(&[], &["https://app.example.com"], None);
        assert!(g.origin_allowed("http://localhost:3000"));
        assert!(g.origin_allowed("http://[::1]:3000"));
        assert!(g.origin_allowed("https://app.example.com"));
        assert!(!g.origin_allowed("https://evil.example.com"));
        assert!(!g.origin_allowed("null"));
        assert!(!g.origin_allowed("http://localhost.evil.com"));
    }

    #[test]
    fn token_is_checked_except_at_healthz() {
        let g = guard(&[], &[], Some("s3cret"));
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("localhost:1"));
        let err = g.check(&headers, "/mcp").unwrap_err().into_response();
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(err.headers()[header::WWW_AUTHENTICATE], "Bearer");
        assert!(g.check(&headers, "/healthz").is_ok());
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer wrong"));
        assert!(g.check(&headers, "/mcp").is_err());
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer s3cret"));
        assert!(g.check(&headers, "/mcp").is_ok());
    }

    #[test]
    fn a_second_host_or_origin_is_a_bad_request() {
        let g = guard(&[], &[], None);
        for name in [header::HOST, header::ORIGIN] {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, HeaderValue::from_static("localhost:1"));
            headers.insert(header::ORIGIN, HeaderValue::from_static("http://localhost:1"));
            headers.append(name.clone(), HeaderValue::from_static("localhost:1"));
            let err = g.check(&headers, "/healthz").unwrap_err().into_response();
            assert_eq!(err.status(), StatusCode::BAD_REQUEST, "{name}");
        }
    }
}
