//! The chain's parts: a [`Request`] on its way in, the typed [`Middleware`] trait that a step
//! implements with an `async fn`, its object-safe form [`DynMiddleware`] that the chain stores
//! (every `Middleware` is one), and [`Next`], the rest of the chain ending in an [`Endpoint`].

use std::future::Future;
use std::sync::Arc;

use crate::{BoxFuture, Context, DynTool, ToolCall, ToolError, ToolOutput};

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

/// A step of the chain. Implement it with an `async fn`:
///
/// ```
/// use hands_core::middleware::{Middleware, Next, Request};
/// use hands_core::{ToolError, ToolOutput};
///
/// struct Log;
///
/// impl Middleware for Log {
///     async fn handle<'a>(
///         &'a self,
///         req: Request<'a>,
///         next: Next<'a>,
///     ) -> Result<ToolOutput, ToolError> {
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
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send + 'a;
}

/// The object-safe form of [`Middleware`] that the chain stores. Every `Middleware` is one; write
/// a `Middleware`, not this.
pub trait DynMiddleware: Send + Sync {
    /// [`Middleware::handle`], boxed.
    fn handle_dyn<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

impl<M: Middleware> DynMiddleware for M {
    fn handle_dyn<'a>(
        &'a self,
        req: Request<'a>,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.handle(req, next))
    }
}

/// What runs a call at the end of the chain.
pub trait Endpoint: Send + Sync {
    /// Run the call.
    fn invoke<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
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

    /// Pass `req` on.
    pub fn run(self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        match self.rest.split_first() {
            Some((first, rest)) => first.handle_dyn(req, Next { rest, endpoint: self.endpoint }),
            None => self.endpoint.invoke(req),
        }
    }
}
