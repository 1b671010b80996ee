//! `[bash]`, `[processes]` and `background_processes`: the limits of the process tools; `[exec]`:
//! what their environment leaves out.

use serde::{Deserialize, Serialize};

/// `[bash]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BashConfig {
    /// Time limit when the call gives none, in milliseconds.
    pub default_timeout_ms: u64,
    /// Largest `timeout` a call may ask for, in milliseconds.
    pub max_timeout_ms: u64,
    /// Output kept per call (head and tail); the rest is counted.
    pub max_output_bytes: usize,
    /// The shell that runs commands (`<shell> -c <command>`).
    pub shell: String,
    /// Start foreground dev-server commands (`npm run dev`, `vite`, …) as managed daemons.
    pub dev_server_shortcut: bool,
}

impl Default for BashConfig {
    fn default() -> Self {
        Self {
            default_timeout_ms: 60_000,
            max_timeout_ms: 600_000,
            max_output_bytes: 1_000_000,
            shell: "bash".into(),
            dev_server_shortcut: true,
        }
    }
}

/// `[processes]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProcessConfig {
    /// Background processes per session, running or not yet cleared.
    pub max_per_session: usize,
    /// Grace between SIGTERM and SIGKILL, in milliseconds.
    pub stop_grace_ms: u64,
    /// Output kept in memory per background process (head and tail).
    pub buffer_bytes: usize,
    /// Size at which a background process's log file stops growing.
    pub log_max_bytes: u64,
    /// How long spawn_process waits for a daemon to be ready, in milliseconds.
    pub ready_timeout_ms: u64,
    /// How long spawn_process waits for first output when there is nothing to wait for.
    pub settle_ms: u64,
    /// Default limit of a long-run process, in milliseconds (0: none).
    pub long_run_timeout_ms: u64,
}

impl Default for ProcessConfig {
    fn default() -> Self {
        Self {
            max_per_session: 16,
            stop_grace_ms: 2_000,
            buffer_bytes: 1_000_000,
            log_max_bytes: 20 * 1024 * 1024,
            ready_timeout_ms: 30_000,
            settle_ms: 3_000,
            long_run_timeout_ms: 30 * 60 * 1000,
        }
    }
}

/// `[exec]` (user-only): more variables of hands' environment that no child gets, on top of the
/// provider keys and hands' own secret settings (`hands_core::env::ChildEnv`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnvConfig {
    /// Names of variables to remove from every child's environment (`["AWS_SECRET_ACCESS_KEY"]`).
    pub env_remove: Vec<String>,
}

/// Everything the exec crate reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecConfig {
    /// `[bash]`
    pub bash: BashConfig,
    /// `[processes]`
    pub processes: ProcessConfig,
    /// `background_processes`: offer spawn_process and its companions.
    pub background_processes: bool,
}

impl Default for ExecConfig {
    fn default() -> Self {
        Self {
            bash: BashConfig::default(),
            processes: ProcessConfig::default(),
            background_processes: true,
        }
    }
}
