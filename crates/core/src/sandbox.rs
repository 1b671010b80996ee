//! Where tools run. The local backend runs them in this process; other backends (bwrap, remote)
//! proxy calls to an inner `hands`, and report [`crate::ToolError::SandboxGone`] when it dies.

use std::sync::Arc;

use serde_json::Value;

use crate::{BoxFuture, Context, DynTool, Prepared, ToolError, ToolOutput};

/// One live sandbox.
pub trait Sandbox: Send + Sync {
    /// An id for logs.
    fn id(&self) -> String;

    /// Run the prepared call of `tool` inside this sandbox: in this process with the parsed
    /// arguments, or sent on as the raw `args` to the hands inside (which runs the tool and
    /// nothing else of the chain).
    fn run<'a>(
        &'a self,
        tool: &'a dyn DynTool,
        ctx: Context,
        args: &'a Value,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// Hands out sandboxes per project.
pub trait SandboxProvider: Send + Sync {
    /// The project's sandbox, created if there is none yet.
    fn get<'a>(&'a self, project: &'a str) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>>;

    /// Called after a call reported [`ToolError::SandboxGone`]: return a working sandbox for the
    /// project, replacing the lost one if it is really gone.
    fn get_or_create<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>>;

    /// Whether its sandboxes can be lost ([`ToolError::SandboxGone`]): when not, the registry's
    /// recovery step is skipped. Default: they can.
    fn can_lose(&self) -> bool {
        true
    }
}

/// Tools run in this process, confined to the root by the tools themselves.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalProvider;

struct LocalSandbox;

impl Sandbox for LocalSandbox {
    fn id(&self) -> String {
        "local".into()
    }

    fn run<'a>(
        &'a self,
        tool: &'a dyn DynTool,
        ctx: Context,
        args: &'a Value,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        tool.run(ctx, args, prepared)
    }
}

impl SandboxProvider for LocalProvider {
    fn get<'a>(&'a self, _project: &'a str) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        // One sandbox for the process: no allocation per call.
        static LOCAL: std::sync::LazyLock<Arc<dyn Sandbox>> =
            std::sync::LazyLock::new(|| Arc::new(LocalSandbox));
        let sandbox = Arc::clone(&LOCAL);
        Box::pin(async move { Ok(sandbox) })
    }

    fn get_or_create<'a>(
        &'a self,
        project: &'a str,
    ) -> BoxFuture<'a, Result<Arc<dyn Sandbox>, ToolError>> {
        self.get(project)
    }

    fn can_lose(&self) -> bool {
        false
    }
}
