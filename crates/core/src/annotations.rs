//! MCP's tool annotations: what a tool says about itself to clients, and where the defaults of
//! its [`Policy`](crate::Policy) come from.

use serde::Serialize;

/// MCP's tool annotations: hints for the client about what a tool does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Annotations {
    /// Changes nothing (served from the dedup cache within a turn; offered in plan mode).
    pub read_only: bool,
    /// May destroy or overwrite the user's data.
    pub destructive: bool,
    /// Calling twice with the same arguments has no further effect.
    pub idempotent: bool,
    /// Reaches outside the project (network, arbitrary programs).
    pub open_world: bool,
}

impl Annotations {
    /// A read-only, idempotent, closed-world tool (read_file, grep, …).
    pub const READ_ONLY: Self =
        Self { read_only: true, destructive: false, idempotent: true, open_world: false };
}
