//! Forwarding to the node that runs a session. With several nodes on one database, a session's
//! turns, questions, approvals, aborts, direct calls and processes live on the node holding its
//! lease; a request about the session that reaches another node is sent on to that node (body
//! and headers as received, `x-hands-forwarded-by` added so that it is never sent on twice) and
//! its answer relayed. When the owner does not answer, it is taken for dead: the request waits
//! for its lease to expire and is then handled here (which takes the lease over and ends the
//! dead node's turn first). Event streams and transcripts are read from the store on any node
//! and are not forwarded.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hands_agent::host::{Host, Route};

use crate::error::ApiError;

/// The header a forwarded request carries (the sending node's id).
pub const FORWARDED_BY: &str = "x-hands-forwarded-by";

/// Tries before a request is given up (a lease that moved twice meanwhile).
const TRIES: usize = 6;

/// What the layer needs.
#[derive(Clone)]
pub struct Forwarder {
    pub(crate) host: Arc<Host>,
    client: reqwest::Client,
    max_body_bytes: usize,
    /// Requests sent on to another node.
    pub forwarded: Arc<AtomicU64>,
}

impl Forwarder {
    /// A forwarder for `host`'s sessions.
    pub fn new(host: Arc<Host>, max_body_bytes: usize) -> Self {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Self { host, client, max_body_bytes, forwarded: Arc::new(AtomicU64::new(0)) }
    }
}

/// The session a request is about, when it is one to forward.
fn session_of<'a>(method: &Method, path: &'a str) -> Option<&'a str> {
    let rest = path.strip_prefix("/v1/sessions/")?;
    let (id, tail) = rest.split_once('/').unwrap_or((rest, ""));
    if id.is_empty() {
        return None;
    }
    let read_anywhere = *method == Method::GET && (tail == "events" || tail == "messages");
    (!read_anywhere).then_some(id)
}

/// The middleware.
pub async fn layer(State(forwarder): State<Forwarder>, request: Request, next: Next) -> Response {
    let (_, clustered) = forwarder.host.node_id();
    let path = request.uri().path().to_owned();
    let session = match session_of(request.method(), &path) {
        Some(session) if clustered && !request.headers().contains_key(FORWARDED_BY) => {
            session.to_owned()
        }
        _ => return next.run(request).await,
    };
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, forwarder.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(_) => {
            return ApiError {
                status: StatusCode::PAYLOAD_TOO_LARGE,
                code: "payload_too_large",
                message: format!("the body is over {} bytes", forwarder.max_body_bytes),
            }
            .into_response();
        }
    };
    for _ in 0..TRIES {
        let route = match forwarder.host.route(&session).await {
            Ok(route) => route,
            Err(err) => return ApiError::from(err).into_response(),
        };
        match route {
            Route::Local => {
                let request = Request::from_parts(parts.clone(), Body::from(bytes.clone()));
                let response = next.clone().run(request).await;
                if response.status() != StatusCode::MISDIRECTED_REQUEST {
                    return response;
                }
                // The lease moved meanwhile: ask again where the session is run now.
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            Route::Forward { node_id, url, expires_in_ms } => {
                // The request carries the client's token: never over plain HTTP off this host.
                if let Err(why) = forwarder.host.may_forward_to(&url) {
                    tracing::error!(node = %node_id, %why, "not forwarding");
                    return ApiError {
                        status: StatusCode::SERVICE_UNAVAILABLE,
                        code: "unavailable",
                        message: format!(
                            "session {session} runs on node {node_id}, which this node does not \
                             forward to: {why}"
                        ),
                    }
                    .into_response();
                }
                match send(&forwarder, &url, &parts, bytes.clone()).await {
                    // The lease moved on from that node too: ask again.
                    Ok(response) if response.status() == StatusCode::MISDIRECTED_REQUEST => {
                        tokio::time::sleep(Duration::from_millis(150)).await;
                    }
                    Ok(response) => {
                        forwarder.forwarded.fetch_add(1, Ordering::Relaxed);
                        return response;
                    }
                    // Sent, and the answer lost (the node died while handling it): the request
                    // may have taken effect, so it is not sent again.
                    Err(err) if !err.is_connect() => {
                        tracing::warn!(node = %node_id, %err, "the session's node died answering");
                        return ApiError {
                            status: StatusCode::BAD_GATEWAY,
                            code: "unavailable",
                            message: format!(
                                "the node running session {session} stopped while answering: \
                                 look at the session (GET it, or its events) before sending again"
                            ),
                        }
                        .into_response();
                    }
                    Err(err) => {
                        tracing::warn!(node = %node_id, %err, "the session's node does not answer");
                        // Dead, probably: its lease runs out, then the session is taken over.
                        let wait = u64::try_from(expires_in_ms.max(0)).unwrap_or(0);
                        let cap = forwarder.host.lease_time() + Duration::from_millis(250);
                        tokio::time::sleep(Duration::from_millis(wait + 100).min(cap)).await;
                    }
                }
            }
        }
    }
    ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        code: "unavailable",
        message: format!("the node running session {session} could not be reached; send it again"),
    }
    .into_response()
}

pub(crate) async fn send(
    forwarder: &Forwarder,
    base: &str,
    parts: &axum::http::request::Parts,
    body: Bytes,
) -> Result<Response, reqwest::Error> {
    let target = format!(
        "{}{}",
        base.trim_end_matches('/'),
        parts.uri.path_and_query().map_or("/", |p| p.as_str())
    );
    let mut request = forwarder.client.request(parts.method.clone(), target).body(body);
    for (name, value) in &parts.headers {
        if !hop_by_hop(name) {
            request = request.header(name, value);
        }
    }
    let (node, _) = forwarder.host.node_id();
    let answer = request.header(FORWARDED_BY, node).send().await?;
    let status = answer.status();
    let headers = answer.headers().clone();
    let bytes = answer.bytes().await?;
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    for (name, value) in &headers {
        if !hop_by_hop(name) && name != "content-length" {
            response.headers_mut().append(name, value.clone());
        }
    }
    Ok(response)
}

fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "proxy-connection"
            | "content-length"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requests_about_one_session_are_forwarded_and_not_its_stream() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(session_of(&post, "/v1/sessions/s1/messages"), Some("s1"));
        assert_eq!(session_of(&get, "/v1/sessions/s1"), Some("s1"));
        assert_eq!(session_of(&post, "/v1/sessions/s1/approvals/a1"), Some("s1"));
        assert_eq!(session_of(&get, "/v1/sessions/s1/events"), None);
        assert_eq!(session_of(&get, "/v1/sessions/s1/messages"), None);
        assert_eq!(session_of(&get, "/v1/sessions"), None);
        assert_eq!(session_of(&post, "/v1/sessions/"), None);
        assert_eq!(session_of(&get, "/healthz"), None);
    }
}
