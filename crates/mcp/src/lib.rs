//! MCP for hands: the server that exposes a [`hands_core::Registry`] over stdio and Streamable
//! HTTP, the client that brings other MCP servers' tools in as hands tools, and the sandbox
//! proxies (bwrap, remote) that run tools in an inner hands and recover when it is gone.

mod approve;
mod ask;
mod gone;
mod http;
mod node;
mod output;
mod progress;
mod rounds;
mod secret_page;
mod server;
mod stdio;
mod tasks;

pub use http::{HttpError, MAX_BODY_BYTES, ServerConfig, guarded, router, router_with};
pub use node::{node_of, tagged as tagged_with_node};
pub use secret_page::{PAGE_PREFIX as SECRET_PAGE_PREFIX, SecretPages};
pub use server::{McpServer, PAGE_SIZE, ServerFactory, SessionHook};
pub use stdio::{StdioError, serve_stdio, shutdown_signal};

mod client;
pub use client::tools::tool_name;
pub use client::{
    CONNECT_TIMEOUT, DEFAULT_CALL_TIMEOUT_MS, DEPTH_ENV, McpClients, McpServerConfig,
    McpServersConfig, ServerStatus, depth as client_depth,
};

pub mod sandbox;
