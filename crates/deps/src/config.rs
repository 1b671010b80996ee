//! `[deps]`: add_dependency's limit.

use serde::{Deserialize, Serialize};

/// `[deps]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DepsConfig {
    /// How long the package manager may run, in milliseconds; then it is stopped with everything
    /// it started.
    pub timeout_ms: u64,
}

impl Default for DepsConfig {
    fn default() -> Self {
        Self { timeout_ms: 300_000 }
    }
}
