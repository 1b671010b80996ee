//! Time limit and abort. Each call runs under its own cancellation token (a child of the session's).
//! When the limit passes, the token is fired so that the tool stops and kills its processes; the tool
//! then has `grace_ms` to return what it has, which is kept in the error result. An abort of the
//! session fires the same token and answers with an "aborted" result.

use std::task::Poll;
use std::time::Duration;

use super::{Middleware, Next, Request};
use crate::config::TimeoutConfig;
use crate::{ChainError, Content, ToolOutput};

/// The timeout/abort middleware.
#[derive(Debug, Clone)]
pub struct Timeout {
    config: TimeoutConfig,
}

impl Timeout {
    /// With per-tool limits from `config`.
    pub fn new(config: TimeoutConfig) -> Self {
        Self { config }
    }
}

enum Stop {
    TimedOut(Duration),
    Aborted,
}

impl Middleware for Timeout {
    async fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> Result<ToolOutput, ChainError> {
        let call = req.call;
        let own_limit = req.tool.spec().policy.timeout_ms;
        let token = req.ctx.cancel_token().clone();
        let started = tokio::time::Instant::now();
        let mut work = next.run(req);
        // The work is polled once before any timer exists: a call that finishes at its first
        // poll (a small read) costs neither the timer nor the select. A timer registered into an
        // empty wheel would also wake the runtime's driver through its eventfd (a write and an
        // extra epoll_wait).
        let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
        let tool = call.name.as_str();
        if let Poll::Ready(result) = first {
            // A tool that noticed the abort and returned early still answers "aborted".
            if token.is_cancelled() {
                return Ok(with_partial(
                    format!("{tool} was aborted before it finished."),
                    Some(result),
                ));
            }
            return result;
        }
        let limit = self.config.for_tool(tool, own_limit);
        let stop = tokio::select! {
            biased;
            result = &mut work => {
                if token.is_cancelled() {
                    return Ok(with_partial(format!("{tool} was aborted before it finished."), Some(result)));
                }
                return result;
            }
            () = tokio::time::sleep_until(started + limit) => Stop::TimedOut(limit),
            () = token.cancelled() => Stop::Aborted,
        };
        token.cancel();
        let grace = Duration::from_millis(self.config.grace_ms);
        let partial = tokio::time::timeout(grace, work).await.ok();
        let message = match stop {
            Stop::TimedOut(limit) => format!(
                "{tool} timed out after {} and was stopped. Narrow the request (a smaller path, \
                 a tighter pattern) or raise the limit with `timeouts.tools.{tool}` in the \
                 configuration.",
                human(limit)
            ),
            Stop::Aborted => format!("{tool} was aborted before it finished."),
        };
        Ok(with_partial(message, partial))
    }
}

/// The error result, keeping whatever the tool returned after it was told to stop.
fn with_partial(message: String, partial: Option<Result<ToolOutput, ChainError>>) -> ToolOutput {
    let mut output = ToolOutput::error(message);
    match partial {
        Some(Ok(done)) => {
            output.content.extend(done.content.into_iter().filter(|c| match c {
                Content::Text { text } => !text.is_empty(),
                Content::Image { .. } => true,
            }));
            output.structured = done.structured;
        }
        Some(Err(err)) => output = output.with_text(err.to_string()),
        None => {}
    }
    output
}

fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{ms} ms") }
}
