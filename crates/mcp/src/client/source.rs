//! The remote servers' tools as a live [`ToolSource`]: one proxy per tool each server lists now.
//! When a server sends `notifications/tools/list_changed`, the listener lists it again
//! ([`super::listener`]); this source then tells the registry, which rebuilds its list, so the
//! new `mcp__NAME__TOOL`s are callable and listed and the gone ones are not.

use std::sync::{Arc, Mutex, PoisonError};

use hands_core::{Changes, DynTool, RegistryBuilder, ToolSource};

use super::McpClients;
use super::remote::RemoteTool;
use super::tools::{proxy, register_builtins};

/// A proxy made for a server's tool as it was listed.
type Made = (String, RemoteTool, Arc<dyn DynTool>);

/// See the module docs.
pub(crate) struct McpSource {
    clients: McpClients,
    /// The proxies made so far, by server and remote tool: reused while the tool is unchanged,
    /// so that the registry sees the same tools and announces no change.
    made: Mutex<Vec<Made>>,
}

impl McpSource {
    pub(crate) fn new(clients: McpClients) -> Self {
        Self { clients, made: Mutex::new(Vec::new()) }
    }
}

impl ToolSource for McpSource {
    fn name(&self) -> &str {
        "mcp"
    }

    fn tools(&self) -> Vec<Arc<dyn DynTool>> {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        let mut fresh = Vec::new();
        for server in self.clients.servers() {
            for tool in server.tools() {
                let known = made.iter().find(|(s, t, _)| s == server.name() && *t == tool);
                let proxy = match known {
                    Some((_, _, proxy)) => Arc::clone(proxy),
                    None => proxy(&self.clients, server.name(), &tool),
                };
                fresh.push((server.name().to_owned(), tool, proxy));
            }
        }
        let tools = fresh.iter().map(|(_, _, proxy)| Arc::clone(proxy)).collect();
        *made = fresh;
        tools
    }

    fn start(&self, changes: Changes) {
        let mut listed = self.clients.tool_list_changes();
        listed.borrow_and_update();
        self.clients.spawn(async move {
            while listed.changed().await.is_ok() {
                if !changes.changed() {
                    break; // the registry is gone
                }
            }
        });
    }
}

impl McpClients {
    /// Register the servers' tools (`mcp__NAME__TOOL`) and, when any server is configured,
    /// `mcp_list` and `mcp_call`.
    pub fn register(&self, builder: RegistryBuilder) -> RegistryBuilder {
        register(self, builder)
    }
}

/// Register the servers' tools as a live source (see [`McpSource`]), and mcp_list/mcp_call
/// when servers are configured.
fn register(clients: &McpClients, builder: RegistryBuilder) -> RegistryBuilder {
    if clients.is_empty() {
        return builder;
    }
    register_builtins(clients, builder).source(Arc::new(McpSource::new(clients.clone())))
}
