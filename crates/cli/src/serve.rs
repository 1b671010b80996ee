//! `hands mcp` and `hands serve`: run the MCP front ends of hands-mcp on a multi-threaded runtime,
//! and shut it down without waiting for a tool that ignored its cancellation.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use hands_core::{Mode, Registry};
use hands_mcp::{ServerConfig, ServerFactory};

/// MCP over stdin/stdout until stdin closes or a signal arrives.
pub fn stdio(registry: Registry, root: &Path, mode: Mode) -> Result<ExitCode> {
    let factory = ServerFactory::new(Arc::new(registry), root, mode);
    run(async move { hands_mcp::serve_stdio(factory).await.map_err(anyhow::Error::from) })
}

/// MCP over Streamable HTTP at `listen` until a signal arrives.
pub fn http(
    registry: Registry,
    root: &Path,
    mode: Mode,
    listen: SocketAddr,
    config: &ServerConfig,
) -> Result<ExitCode> {
    let factory = ServerFactory::new(Arc::new(registry), root, mode);
    let config = config.clone();
    run(async move {
        hands_mcp::serve_http(factory, listen, &config).await.map_err(anyhow::Error::from)
    })
}

fn run(work: impl std::future::Future<Output = Result<()>>) -> Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(work);
    // The stdin reader may still block on a thread: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(500));
    result.map(|()| ExitCode::SUCCESS)
}
