//! The last pass before a response leaves: stored secrets and key shapes in every body of the
//! session API (JSON, text and the SSE stream) become `[secret:NAME]` / `[redacted:RULE]`, so that a
//! surface that forgot its own pass (a title, a diff, an error that quotes its input) still shows
//! no value. The per-surface passes stay where they keep a value from being stored at all.
//!
//! Images are left as they are (a screenshot is not text). An event stream is redacted event by
//! event as it is sent — each frame is a whole event, so a value cannot be split across two —
//! and nothing is held back, so an event is never delayed. Every other body is read whole (the
//! API's bodies are bounded JSON) and redacted at once.

use axum::body::Body;
use axum::body::Bytes;
use axum::extract::Request;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;

/// Marks a response the pass leaves as it is: the sign-in exchange's, whose body is the bearer
/// token the client asked for (one of the user's choosing may look like a key).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unredacted;

/// The middleware: redact the body of `next`'s response.
pub(crate) async fn redact(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if response.extensions().get::<Unredacted>().is_some() {
        return response;
    }
    let kind = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    // Not text a value could be in: screenshots, and the web UI's own scripts, styles and fonts
    // (built into the binary).
    let untouched = ["image/", "font/", "text/css", "text/javascript", "application/javascript"];
    if untouched.iter().any(|prefix| kind.starts_with(prefix)) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    if kind.starts_with("text/event-stream") {
        parts.headers.remove(CONTENT_LENGTH);
        let frames = body.into_data_stream().map(|frame| {
            frame.map(|bytes| match hands_core::redact::bytes(&bytes) {
                std::borrow::Cow::Borrowed(_) => bytes,
                std::borrow::Cow::Owned(clean) => Bytes::from(clean),
            })
        });
        return Response::from_parts(parts, Body::from_stream(frames));
    }
    let whole = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(whole) => whole,
        Err(err) => {
            tracing::warn!(%err, "a response body could not be read for redaction");
            let error = crate::error::ApiError {
                status: axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                code: "internal",
                message: "the response could not be read to check it for secrets".to_owned(),
            };
            return error.into_response();
        }
    };
    let clean = match hands_core::redact::bytes(&whole) {
        std::borrow::Cow::Borrowed(_) => whole,
        std::borrow::Cow::Owned(clean) => {
            parts.headers.remove(CONTENT_LENGTH);
            Bytes::from(clean)
        }
    };
    Response::from_parts(parts, Body::from(clean))
}
