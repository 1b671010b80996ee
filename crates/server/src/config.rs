//! `[server]`: who may talk to `hands serve` (the same keys `/mcp` has always had) and how large a
//! request body the session API reads.

use serde::{Deserialize, Serialize};

/// Default cap on a request body of the session API: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// `[server]` of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Hosts accepted in the `Host` header besides the loopback ones (`localhost`, `127.0.0.1`,
    /// `[::1]`, any port): a name (any port) or `name:port`.
    pub allowed_hosts: Vec<String>,
    /// Origins accepted besides loopback ones, e.g. `https://app.example.com` (exact match).
    pub allowed_origins: Vec<String>,
    /// Bearer token required at `/mcp`, `/v1` and `/vibe` (env `HANDS_SERVER__TOKEN`). Required
    /// whenever the listen address is not loopback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Largest request body `/v1` and `/vibe` read; a larger one gets 413.
    pub max_body_bytes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
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
