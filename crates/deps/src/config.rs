//! `[deps]`: add_dependency's limit, and the two things only the user may allow.

use serde::{Deserialize, Serialize};

/// `[deps]`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DepsConfig {
    /// How long the package manager may run, in milliseconds; then it is stopped with everything
    /// it started.
    pub timeout_ms: u64,
    /// Run a program the repository provides without asking: the project's `.venv/bin/python`
    /// (pip), a `yarnPath` release named in `.yarnrc.yml`. Off: such a program runs only after
    /// the user approved the call with that program shown as the repository's (approval =
    /// "ask"), and otherwise add_dependency refuses, saying what would have run. User-only: a
    /// project's `.hands/config.toml` cannot set it.
    pub allow_project_programs: bool,
    /// Let the package manager run code at install time: npm, pnpm, yarn and bun lifecycle
    /// scripts (`preinstall`, `postinstall`, `prepare`, the project's own included), pnpm's
    /// `.pnpmfile.cjs`, and pip's builds of source distributions (`setup.py`; off, pip installs
    /// wheels only). User-only.
    pub allow_scripts: bool,
}

impl Default for DepsConfig {
    fn default() -> Self {
        Self { timeout_ms: 300_000, allow_project_programs: false, allow_scripts: false }
    }
}
