//! The core's settings: approval policy, output cap, timeouts, sandbox recovery. Each crate owns the
//! section it reads; the binary merges the layers (defaults, files, environment, flags).

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
    /// Per-tool limits in milliseconds, by canonical name.
    pub tools: BTreeMap<String, u64>,
    /// How long a cancelled tool gets to clean up and return what it has, in milliseconds.
    pub grace_ms: u64,
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        let tools = [
            ("read_file", 30_000),
            ("write_file", 30_000),
            ("edit_file", 30_000),
            ("list_files", 30_000),
            ("glob", 60_000),
            ("grep", 120_000),
            // bash enforces its own `timeout` (at most 600 s); this is only the backstop.
            ("bash", 610_000),
            ("spawn_process", 60_000),
            ("stop_process", 30_000),
            // ask_user waits up to its own `ask_user.timeout_ms` (10 min) for the user; this is
            // the backstop, with a margin so that ask_user's clearer message comes first.
            ("ask_user", 610_000),
            // A sub-agent runs up to `[agent] subagent_max_steps` model calls and their tools.
            ("spawn_subagent", 900_000),
        ];
        Self {
            default_ms: 120_000,
            tools: tools.into_iter().map(|(k, v)| (k.to_owned(), v)).collect(),
            grace_ms: 3_000,
        }
    }
}

impl TimeoutConfig {
    /// The limit for `tool`.
    pub fn for_tool(&self, tool: &str) -> Duration {
        Duration::from_millis(self.tools.get(tool).copied().unwrap_or(self.default_ms))
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
