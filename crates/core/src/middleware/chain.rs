//! The chain's parts: a [`Request`] on its way in, the typed [`Middleware`] trait that a step
//! implements with an `async fn`, its object-safe form [`DynMiddleware`] that the chain stores
//! (every `Middleware` is one), and [`Next`], the rest of the chain ending in an [`Endpoint`].

use std::future::Future;
use std::sync::Arc;

use crate::{BoxFuture, CallPolicy, ChainError, Context, DynTool, Prepared, ToolCall, ToolOutput};

/// One call on its way through the chain.
#[derive(Clone)]
pub struct Request<'a> {
    /// The call's context (its cancellation token may be narrowed by middleware).
    pub ctx: Context,
    /// The call, with its name made canonical.
    pub call: &'a ToolCall,
    /// The tool it resolved to.
    pub tool: &'a dyn DynTool,
    /// The call with its arguments parsed, and what the tool says of it.
    pub prepared: &'a Prepared,
}

impl Request<'_> {
    /// What the tool says of this call: whether it asks, changes things, may be cached.
    pub fn policy(&self) -> CallPolicy {
        self.prepared.policy()
    }
}

/// A step of the chain. Implement it with an `async fn`. A failure the model can act on is a
/// result (`is_error`) by the time a step sees it; only [`ChainError`]s travel as errors.
///
///
/// ```
/// use hands_core::middleware::{Middleware, Next, Request};
/// use hands_core::{ChainError, ToolOutput};
///
/// struct Log;
///
/// impl Middleware for Log {
///     async fn handle<'a>(
///         &'a self,
///         req: Request<'a>,
///         next: Next<'a>,
///     ) -> Result<ToolOutput, ChainError> {
///         let name = req.call.name.clone();
///         let result = next.run(req).await;
///         tracing::info!(tool = %name, ok = result.is_ok(), "call done");
///         result
///     }
/// }
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Handle `req`, usually by calling `next.run(req)` once (or more, to retry).
    fn handle<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> impl Future<Output = Result<ToolOutput, ChainError>> + Send + 'a;

    /// Whether this step has anything to do for `req`; when it has not, the chain passes the call
    /// straight to the next step (no future of this step is made). Default: always. Approval
    /// under `auto`, de-duplication outside a turn and recovery with a sandbox that cannot be
    /// lost say no, which keeps the hot path of a small read short.
    fn applies(&self, req: &Request<'_>) -> bool {
        let _ = req;
        true
    }
}

/// The object-safe form of [`Middleware`] that the chain stores. Every `Middleware` is one; write
/// a `Middleware`, not this.
pub trait DynMiddleware: Send + Sync {
    /// [`Middleware::handle`], boxed.
    fn handle_dyn<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ChainError>>;

    /// [`Middleware::applies`].
    fn applies_dyn(&self, req: &Request<'_>) -> bool;
}

impl<M: Middleware> DynMiddleware for M {
    fn handle_dyn<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ChainError>> {
        Box::pin(self.handle(req, next))
    }

    fn applies_dyn(&self, req: &Request<'_>) -> bool {
        self.applies(req)
    }
}

/// What runs a call at the end of the chain.
pub trait Endpoint: Send + Sync {
    /// Run the call.
    fn invoke<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ChainError>>;
}

/// The rest of the chain after the current middleware. `Copy`, so that a middleware can retry.
#[derive(Clone, Copy)]
pub struct Next<'a> {
    rest: &'a [Arc<dyn DynMiddleware>],
    endpoint: &'a dyn Endpoint,
}

impl<'a> Next<'a> {
    /// The whole chain `chain`, ending in `endpoint`.
    pub fn new(chain: &'a [Arc<dyn DynMiddleware>], endpoint: &'a dyn Endpoint) -> Self {
        Self { rest: chain, endpoint }
    }

    /// Pass `req` on, to the first of the remaining steps that applies to it.
    pub fn run(self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ChainError>> {
        let mut rest = self.rest;
        while let Some((first, after)) = rest.split_first() {
            if first.applies_dyn(&req) {
                return first.handle_dyn(req, Next { rest: after, endpoint: self.endpoint });
            }
            rest = after;
        }
        self.endpoint.invoke(req)
    }
}
