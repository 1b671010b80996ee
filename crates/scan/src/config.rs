//! `[security]`: where run_security_scan's advisory database is and whether it runs the
//! ecosystems' audit commands. The user's only: a repository must not point the scan at an
//! advisory database of its own making (one that clears its vulnerable dependencies), nor make
//! hands send its lock files to a registry the user did not choose.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// `[security]`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecurityConfig {
    /// An OSV advisory database: a folder of OSV JSON files (searched recursively), one JSON
    /// file (an advisory or an array of them), or a zip of them (OSV's `all.zip`).
    pub osv_db: Option<PathBuf>,
    /// Run `npm audit`, `pip-audit` and `cargo audit` when they are installed (they send the
    /// project's dependency list to their advisory services).
    pub audit_commands: bool,
    /// The limit of each audit command, in milliseconds.
    pub audit_timeout_ms: u64,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self { osv_db: None, audit_commands: true, audit_timeout_ms: 120_000 }
    }
}
