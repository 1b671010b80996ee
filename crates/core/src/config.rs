//! The core's settings: approval policy, output cap, timeouts, sandbox recovery. Each crate owns the
//! section it reads; the binary merges the layers (defaults, files, environment, flags).

/// The configuration sections only the host reads, the one list every part that crosses into
/// a child or a sandbox consults: no child gets their `HANDS_*` variables, no `-c` flag of theirs
/// is passed to the hands inside a sandbox, and the copy of the user's file given to it leaves
/// them out. Each configures the host and may hold tokens, keys, headers or connection strings:
/// `server` (how `hands serve` is reached, its token), `sandbox` (the isolation itself, and
/// `recreate`'s command), `model` (the provider, the variable holding its key), `mcp_servers`
/// (commands hands starts, their headers), `store` (every session's transcript, a PostgreSQL URL),
/// `cluster` (which node runs a session's turns, and where the others reach it).
pub const HOST_ONLY_SECTIONS: &[&str] =
    &["server", "sandbox", "model", "mcp_servers", "store", "cluster"];

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Whether tools that change things need the user's yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approval {
    /// Ask the host before write_file, edit_file, bash, …
    Ask,
    /// Run without asking.
    #[default]
    Auto,
}

/// Top-level keys of the configuration that the core reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoreConfig {
    /// `ask` or `auto` (env `HANDS_APPROVAL`).
    pub approval: Approval,
    /// Model-facing output.
    pub output: OutputConfig,
    /// Per-call time limits.
    pub timeouts: TimeoutConfig,
    /// Sandbox recovery.
    pub recovery: RecoveryConfig,
    /// Per-turn de-duplication of read-only calls.
    pub dedup: bool,
}

impl Default for CoreConfig {
    fn default() -> Self {
        Self {
            approval: Approval::Auto,
            output: OutputConfig::default(),
            timeouts: TimeoutConfig::default(),
            recovery: RecoveryConfig::default(),
            dedup: true,
        }
    }
}

/// `[output]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    /// Text bytes per result the model sees; the rest is spilled to `.hands/outputs/`.
    pub max_bytes: usize,
}

impl Default for OutputConfig {
    fn default() -> Self {
        Self { max_bytes: 32 * 1024 }
    }
}

/// `[timeouts]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TimeoutConfig {
    /// Limit for a tool without its own entry, in milliseconds.
    pub default_ms: u64,
    /// Per-tool limits in milliseconds, by canonical name (over each tool's own default).
    pub tools: BTreeMap<String, u64>,
    /// How long a cancelled tool gets to clean up and return what it has, in milliseconds.
    pub grace_ms: u64,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        // Per-tool defaults are the tools' own (`Policy::timeout_ms`); `tools` holds what the
        // configuration says.
        Self { default_ms: 120_000, tools: BTreeMap::new(), grace_ms: 3_000 }
    }
}

impl TimeoutConfig {
    /// The limit for `tool`: the configuration's, else the tool's own (`own_ms`), else
    /// `default_ms`.
    pub fn for_tool(&self, tool: &str, own_ms: Option<u64>) -> Duration {
        Duration::from_millis(self.tools.get(tool).copied().or(own_ms).unwrap_or(self.default_ms))
    }
}

/// `[recovery]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecoveryConfig {
    /// Pause before getting a fresh sandbox, in milliseconds.
    pub wait_ms: u64,
    /// Recoveries allowed per project; the next one fails hard.
    pub max_per_project: u32,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        Self { wait_ms: 1_500, max_per_project: 3 }
    }
}
