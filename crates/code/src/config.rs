//! `[code]`: the language servers' budgets and bounds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[code]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodeConfig {
    /// Start language servers at all (off: no diagnostics after edits, and the navigation tools
    /// answer that code intelligence is off).
    pub enabled: bool,
    /// How long a write waits for the changed file's diagnostics, in milliseconds. What comes
    /// later rides on the next result.
    pub diagnostics_wait_ms: u64,
    /// Report warnings too, not only errors.
    pub warnings: bool,
    /// How many times a crashed (or hung) server is started again before it is given up on.
    pub max_restarts: u32,
    /// How long a server may take to answer `initialize`, in milliseconds.
    pub initialize_timeout_ms: u64,
    /// How long one navigation request may take, in milliseconds.
    pub request_timeout_ms: u64,
    /// The address space each server may use (`RLIMIT_AS`, set by `ulimit -v` before exec), in
    /// MiB; 0: no limit.
    pub memory_mb: u64,
    /// Diagnostics kept per file: a server that floods is cut there, and the rest counted.
    pub max_diagnostics_per_file: usize,
    /// Also look for servers in the project's own `node_modules/.bin` (before PATH). Such a
    /// program is the repository's code, run without a question when a file of its language is
    /// first touched, so it is off unless the user turns it on (as add_dependency runs a
    /// repository's programs only when the user allowed it). User-only.
    pub project_servers: bool,
    /// A server's command per language (`typescript`, `python`, `rust`, `go`), in place of the
    /// one looked up in the project's `node_modules/.bin` and on PATH. User-only: a project's
    /// `.hands/config.toml` cannot set it.
    pub servers: BTreeMap<String, Vec<String>>,
}

impl Default for CodeConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            diagnostics_wait_ms: 1_500,
            warnings: false,
            max_restarts: 3,
            initialize_timeout_ms: 30_000,
            request_timeout_ms: 10_000,
            memory_mb: 4_096,
            max_diagnostics_per_file: 1_000,
            project_servers: false,
            servers: BTreeMap::new(),
        }
    }
}
