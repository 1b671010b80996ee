//! The middleware every tool call passes through, in the style of axum's `from_fn`/`Next`.
//!
//! The order is written here, once. Outermost first:
//!
//! 0. [`approve::Approve`] — under `approval = "ask"`, tools that change things wait for the user's
//!    yes (outside the timeout, so a slow answer does not time the tool out).
//! 1. [`timeout::Timeout`] — per-tool limit and abort; a timeout fires the call's token so that tools
//!    kill their processes, then gives them a grace period to return what they have.
//! 2. [`dedup::Dedup`] — identical read-only calls within one turn are served from a per-session cache;
//!    any mutating call clears it.
//! 3. [`truncate::Truncate`] — caps the model-facing text (head + tail + marker) and spills the full
//!    text to `.hands/outputs/<call-id>.txt`.
//! 4. [`recover::Recover`] — on `SandboxGone`: log, wait, get or create a fresh sandbox, retry once;
//!    at most `max_per_project` recoveries per project.
//!
//! Then the call runs in the project's sandbox. Hand-written rather than tower layers: a failed call
//! must still give the model a result, and the chain is plain data that a front end can inspect.

pub mod approve;
pub mod dedup;
pub mod recover;
pub mod timeout;
pub mod truncate;

use std::sync::Arc;

use crate::{
    BoxFuture, Context, CoreConfig, DynTool, SandboxProvider, ToolCall, ToolError, ToolOutput,
};

/// One call on its way through the chain.
#[derive(Clone)]
pub struct Request<'a> {
    /// The call's context (its cancellation token may be narrowed by middleware).
    pub ctx: Context,
    /// The call, with its name made canonical.
    pub call: &'a ToolCall,
    /// The tool it resolved to.
    pub tool: &'a dyn DynTool,
}

/// A step of the chain.
pub trait Middleware: Send + Sync {
    /// Handle `req`, usually by calling `next.run(req)` once (or more, to retry).
    fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// What runs a call at the end of the chain.
pub trait Endpoint: Send + Sync {
    /// Run the call.
    fn invoke<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// The rest of the chain after the current middleware. `Copy`, so that a middleware can retry.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    rest: &'a [Arc<dyn Middleware>],
    endpoint: &'a dyn Endpoint,
}

impl<'a> Next<'a> {
    /// The whole chain `chain`, ending in `endpoint`.
    pub fn new(chain: &'a [Arc<dyn Middleware>], endpoint: &'a dyn Endpoint) -> Self {
        Self { rest: chain, endpoint }
    }

    /// Pass `req` on.
    pub fn run(self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match self.rest.split_first() {
            Some((first, rest)) => first.handle(req, Next { rest, endpoint: self.endpoint }),
            None => self.endpoint.invoke(req),
        }
    }
}

/// The standard chain, in the order documented above.
pub fn standard(
    config: &CoreConfig,
    provider: Arc<dyn SandboxProvider>,
) -> Vec<Arc<dyn Middleware>> {
    let mut chain: Vec<Arc<dyn Middleware>> = vec![
        Arc::new(approve::Approve::new(config.approval)),
        Arc::new(timeout::Timeout::new(config.timeouts.clone())),
    ];
    if config.dedup {
        chain.push(Arc::new(dedup::Dedup));
    }
    chain.push(Arc::new(truncate::Truncate::new(config.output.max_bytes)));
    chain.push(Arc::new(recover::Recover::new(config.recovery.clone(), provider)));
    chain
}
