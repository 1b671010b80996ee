//! One model call over HTTP, shared by both providers: POST the request, feed the event stream to
//! the provider's decoder, and retry what is worth retrying while no text has been passed on.
//! Everything that waits (connecting, reading, backing off) races the call's cancel token.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap};
use tokio_util::sync::CancellationToken;

use super::retry::{self, RetryPolicy};
use super::sse::{SseEvent, SseParser};
use crate::model::{ModelResponse, ProviderError, TextSink};

/// Most of an error body we read (the message is at the start; a proxy's HTML page can be long).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Where and how a provider sends its requests.
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    /// The HTTP client (timeouts set).
    pub client: reqwest::Client,
    /// The full URL of the streaming endpoint.
    pub url: String,
    /// Auth, version and the configured extra headers.
    pub headers: HeaderMap,
    /// Retries.
    pub retry: RetryPolicy,
}

/// What went wrong in one attempt, and whether another attempt may go better.
#[derive(Debug)]
pub(crate) struct Failure {
    pub error: ProviderError,
    pub retryable: bool,
    /// What the provider asked us to wait.
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// Another attempt will not help (a malformed stream, a bad request).
    pub fn fatal(error: ProviderError) -> Self {
        Self { error, retryable: false, retry_after: None }
    }

    /// A dropped or refused connection, a timeout, a cut-off stream.
    pub fn transport(message: impl Into<String>) -> Self {
        Self { error: ProviderError::Transport(message.into()), retryable: true, retry_after: None }
    }
}

impl From<ProviderError> for Failure {
    fn from(error: ProviderError) -> Self {
        Self::fatal(error)
    }
}

/// Whether the stream goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    /// The provider's end-of-response marker arrived.
    Done,
}

/// Turns one response's events into a [`ModelResponse`].
pub(crate) trait Decoder: Send {
    /// One event; text deltas go to `text` in order.
    fn event(&mut self, event: SseEvent, text: &mut Text<'_>) -> Result<Flow, Failure>;
    /// The response as assembled; `done` says whether the end marker arrived or the body just ended.
    fn finish(self, done: bool) -> Result<ModelResponse, Failure>;
}

/// The wire format of one provider.
pub(crate) trait Dialect: Sync {
    /// Its stream decoder.
    type Decoder: Decoder;
    /// A decoder for a new response.
    fn decoder(&self) -> Self::Decoder;
    /// What a non-2xx answer means.
    fn http_error(&self, status: u16, headers: &HeaderMap, body: &str) -> Failure;
}

/// The text sink as decoders see it: it remembers whether anything was passed on, after which
/// a failed call must not be retried (the user has seen part of an answer).
pub(crate) struct Text<'a> {
    sink: TextSink<'a>,
    delivered: bool,
}

impl Text<'_> {
    /// Pass one delta on (empty ones are dropped).
    pub fn push(&mut self, delta: &str) {
        if !delta.is_empty() {
            self.delivered = true;
            (self.sink)(delta);
        }
    }
}

/// Run one model call: attempts, retries, cancellation.
pub(crate) async fn call<D: Dialect>(
    endpoint: &Endpoint,
    dialect: &D,
    body: Vec<u8>,
    on_text: TextSink<'_>,
    cancel: &CancellationToken,
) -> Result<ModelResponse, ProviderError> {
    // The last pass before a request leaves: whatever reached the request (an instruction file,
    // a skill's description, the user's own words, a tool result a surface forgot to redact)
    // goes to the provider with stored values and key shapes replaced.
    let body = match hands_core::redact::bytes(&body) {
        std::borrow::Cow::Borrowed(_) => body,
        std::borrow::Cow::Owned(clean) => clean,
    };
    let mut text = Text { sink: on_text, delivered: false };
    let mut retries = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let result = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ProviderError::Cancelled),
            result = attempt(endpoint, dialect, &body, &mut text) => result,
        };
        let failure = match result {
            Ok(response) => return Ok(response),
            Err(failure) => failure,
        };
        if !failure.retryable || text.delivered || retries >= endpoint.retry.max_retries {
            return Err(failure.error);
        }
        retries += 1;
        let Some(wait) = endpoint.retry.delay(retries, failure.retry_after) else {
            return Err(failure.error);
        };
        tracing::warn!(
            url = %endpoint.url,
            retry = retries,
            wait_ms = wait.as_millis() as u64,
            error = %failure.error,
            "model call failed; retrying"
        );
        retry::wait(wait, cancel).await?;
    }
}

async fn attempt<D: Dialect>(
    endpoint: &Endpoint,
    dialect: &D,
    body: &[u8],
    text: &mut Text<'_>,
) -> Result<ModelResponse, Failure> {
    let mut response = endpoint
        .client
        .post(&endpoint.url)
        .headers(endpoint.headers.clone())
        .body(body.to_vec())
        .send()
        .await
        .map_err(|e| Failure::transport(describe(&e)))?;
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        let body = read_capped(&mut response).await;
        return Err(dialect.http_error(status.as_u16(), &headers, &body));
    }
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.starts_with("application/json") {
        // A server that ignored `stream: true`, or a proxy's error page.
        let body = read_capped(&mut response).await;
        return Err(Failure::fatal(ProviderError::Protocol(format!(
            "expected an event stream from {}, got JSON: {}",
            endpoint.url,
            snippet(&body)
        ))));
    }
    let mut decoder = dialect.decoder();
    let mut parser = SseParser::default();
    loop {
        let chunk = response.chunk().await.map_err(|e| {
            Failure::transport(format!("the response stream broke off: {}", describe(&e)))
        })?;
        let Some(chunk) = chunk else { break };
        for event in parser.push(&chunk)? {
            if decoder.event(event, text)? == Flow::Done {
                return decoder.finish(true);
            }
        }
    }
    if let Some(event) = parser.finish()?
        && decoder.event(event, text)? == Flow::Done
    {
        return decoder.finish(true);
    }
    decoder.finish(false)
}

/// The body of an error response, at most [`MAX_ERROR_BODY`] bytes, lossily decoded.
async fn read_capped(response: &mut reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        bytes.extend_from_slice(&chunk);
        if bytes.len() >= MAX_ERROR_BODY {
            bytes.truncate(MAX_ERROR_BODY);
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The first 300 characters of `body`, for messages.
pub(crate) fn snippet(body: &str) -> String {
    let body = body.trim();
    match body.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &body[..cut]),
        None => body.to_owned(),
    }
}

/// reqwest's error with its causes ("error sending request" alone does not say "connection
/// refused").
pub(crate) fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    if error.is_timeout() && !text.contains("timed out") {
        text.push_str(" (timed out)");
    }
    text
}
