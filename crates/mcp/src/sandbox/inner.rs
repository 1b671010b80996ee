//! Whether this hands runs inside a sandbox, as its inner server.

/// Set in the environment of an inner hands (bwrap): it runs its tools locally and connects no MCP
/// servers of its own, whatever the configuration files say.
pub const INNER_ENV: &str = "HANDS_SANDBOX_INNER";

/// True in a hands started as a sandbox's inner server.
pub fn is_inner() -> bool {
    std::env::var_os(INNER_ENV).is_some_and(|v| v == "1")
}
