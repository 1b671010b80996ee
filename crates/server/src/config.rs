//! `[server]`: who may talk to `hands serve` (the same keys `/mcp` has always had) and how large a
//! request body the session API reads.

use serde::{Deserialize, Serialize};

/// Default cap on a request body of the session API: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Default time a client has to send a whole request head: 10 s.
pub const DEFAULT_HEADER_TIMEOUT_MS: u64 = 10_000;

/// Default cap on connections open at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// `[server]` of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Hosts accepted in the `Host` header besides the loopback ones (`localhost`, `127.0.0.1`,
    /// `[::1]`, any port): a name (any port) or `name:port`.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides loopback ones, e.g. `https://app.example.com` (exact match).
    pub allowed_origins: Vec<String>,
    /// Bearer token required at `/mcp`, `/v1` and `/vibe` (env `HANDS_SERVER__TOKEN`). `hands
    /// serve` always requires one: without this setting it makes one at first start and keeps it
    /// in `server-token` (0600) in the state folder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Largest request body `/v1` and `/vibe` read; a larger one gets 413.
    pub max_body_bytes: usize,
    /// Milliseconds a client has to send a whole request head (from the connection opening, or
    /// from the previous response on a kept-alive connection); then the connection is closed.
    pub header_timeout_ms: u64,
    /// Connections open at once; at the cap, new ones wait in the kernel's queue.
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            header_timeout_ms: DEFAULT_HEADER_TIMEOUT_MS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

impl ServerConfig {
    /// The part `/mcp` and the request guard read.
    pub fn mcp(&self) -> hands_mcp::ServerConfig {
        hands_mcp::ServerConfig {
            allowed_hosts: self.allowed_hosts.clone(),
            allowed_origins: self.allowed_origins.clone(),
            token: self.token.clone().filter(|t| !t.is_empty()),
        }
    }
}
