//! `[ask_user]`: the settings of the session tools (the defaults are docs/tools.md's numbers). The binary
//! merges the layers and hands each section over, as for the fs and exec crates.

use serde::{Deserialize, Serialize};

/// How long ask_user waits for an answer unless configured otherwise (`ask_user.timeout_ms`).
pub const DEFAULT_TIMEOUT_MS: u64 = 10 * 60 * 1000;

/// `[ask_user]`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskUserConfig {
    /// How long ask_user waits for the user's answer, in milliseconds.
    pub timeout_ms: u64,
}

impl Default for AskUserConfig {
    fn default() -> Self {
        Self { timeout_ms: DEFAULT_TIMEOUT_MS }
    }
}

/// Everything the agent crate reads.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// `[ask_user]`
    pub ask_user: AskUserConfig,
}
