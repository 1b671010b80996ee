//! `[checkpoints]`: whether turns are checkpointed, how many checkpoints are kept and for how
//! long ([`Retention`]), and the size above which a file is recorded without its content.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::manifest::Checkpoint;
use crate::snapshot::Config;

/// `[checkpoints]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Take a checkpoint before a turn's first change and at its end.
    pub enabled: bool,
    /// The last checkpoints kept per session.
    pub keep: usize,
    /// Checkpoints older than this many days are removed.
    pub max_age_days: u64,
    /// Files larger than this are recorded as skipped (their content is not stored, and a
    /// restore leaves them as they are).
    pub max_file_bytes: u64,
    /// Where the stores live (`<dir>/checkpoints/<project key>`); the state folder when `None`.
    /// Not a setting of the configuration files: for embedders and tests.
    #[serde(skip)]
    pub state_dir: Option<PathBuf>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            keep: 100,
            max_age_days: 30,
            max_file_bytes: 50 * 1024 * 1024,
            state_dir: None,
        }
    }
}

impl Settings {
    /// The retention these settings ask for.
    pub fn retention(&self) -> Retention {
        Retention { per_session: self.keep, max_age_secs: self.max_age_days.saturating_mul(86_400) }
    }

    /// What a snapshot takes.
    pub fn config(&self) -> Config {
        Config { max_file_size: self.max_file_bytes, ..Config::default() }
    }
}

/// How many checkpoints are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// The last checkpoints kept per session (default 100).
    pub per_session: usize,
    /// Checkpoints older than this many seconds are removed (default 30 days).
    pub max_age_secs: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Self { per_session: 100, max_age_secs: 30 * 24 * 3600 }
    }
}

impl Retention {
    /// The checkpoints of `list` (oldest first) that this retention removes as of `now`
    /// (seconds since the epoch).
    pub(crate) fn expired(&self, list: &[Checkpoint], now: u64) -> Vec<u64> {
        let mut by_session: BTreeMap<&str, Vec<&Checkpoint>> = BTreeMap::new();
        for cp in list {
            by_session.entry(cp.session.as_str()).or_default().push(cp);
        }
        let mut out = Vec::new();
        for cps in by_session.values() {
            let keep_from = cps.len().saturating_sub(self.per_session);
            for (i, cp) in cps.iter().enumerate() {
                if i < keep_from || now.saturating_sub(cp.created_ms / 1000) > self.max_age_secs {
                    out.push(cp.id);
                }
            }
        }
        out.sort_unstable();
        out
    }
}
