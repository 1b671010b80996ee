//! A third floor of the MCP round-trip benchmark (see `bench/mcp.sh`): the least an rmcp server
//! can do. A hand-written rmcp `ServerHandler` whose `tools/call` answers at once with a fixed
//! text, served exactly as `hands mcp` serves (a current-thread runtime, stdin and stdout as
//! reactor-driven pipes) — no registry, no middleware, no file. hands' round trip minus this one is
//! what hands itself adds; this one minus `mcp_floor`'s is what the protocol library and the async
//! runtime cost.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};

struct Fixed;

impl ServerHandler for Fixed {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rmcp-floor", "0.1.0"))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(
            "     1\thello from a small file",
        )])))
    }
}

fn main() {
    use std::os::fd::AsFd;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let input = std::io::stdin().as_fd().try_clone_to_owned().unwrap();
        let output = std::io::stdout().as_fd().try_clone_to_owned().unwrap();
        let receiver =
            tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(input)).unwrap();
        let sender =
            tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(output)).unwrap();
        let running = Fixed.serve((receiver, sender)).await.unwrap();
        let _ = running.waiting().await;
    });
}
