//! Retention: keep the last N checkpoints of each session and those younger than a maximum age,
//! then remove the objects no remaining checkpoint refers to (mark and sweep).

use std::collections::{BTreeMap, HashSet};
use std::fs;

use serde::Serialize;

use crate::error::Error;
use crate::manifest::Entry;
use crate::store::Store;

/// How many checkpoints are kept.
#[derive(Debug, Clone, Copy)]
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

/// What a gc removed.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Gc {
    /// Checkpoints removed.
    pub checkpoints: usize,
    /// Objects removed.
    pub objects: usize,
    /// Bytes freed by the objects.
    pub bytes: u64,
}

impl Store {
    /// Applies `retention` as of `now` (seconds since the epoch) and sweeps unreferenced objects.
    pub fn gc(&self, retention: Retention, now: u64) -> Result<Gc, Error> {
        // An interrupted restore is finished first, so its target's objects are still there.
        self.recover()?;
        let mut gc = Gc::default();
        let mut by_session: BTreeMap<String, Vec<crate::Checkpoint>> = BTreeMap::new();
        for cp in self.list()? {
            by_session.entry(cp.session.clone()).or_default().push(cp);
        }
        let mut live = HashSet::new();
        for cps in by_session.values() {
            let keep_from = cps.len().saturating_sub(retention.per_session);
            for (i, cp) in cps.iter().enumerate() {
                if i < keep_from || now.saturating_sub(cp.created) > retention.max_age_secs {
                    self.remove(cp.id)?;
                    gc.checkpoints += 1;
                } else {
                    live.extend(cp.entries.values().filter_map(|e| match e {
                        Entry::File { oid, .. } => Some(oid.clone()),
                        _ => None,
                    }));
                }
            }
        }
        let objects = self.objects();
        let Ok(fans) = fs::read_dir(&objects) else { return Ok(gc) };
        for fan in fans.filter_map(|e| e.ok()) {
            let Ok(files) = fs::read_dir(fan.path()) else { continue };
            let prefix = fan.file_name().to_string_lossy().into_owned();
            for f in files.filter_map(|e| e.ok()) {
                let oid = format!("{prefix}{}", f.file_name().to_string_lossy());
                if !live.contains(&oid) {
                    gc.bytes += f.metadata().map(|m| m.len()).unwrap_or(0);
                    if fs::remove_file(f.path()).is_ok() {
                        gc.objects += 1;
                    }
                }
            }
        }
        Ok(gc)
    }
}
