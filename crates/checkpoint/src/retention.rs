//! Retention: keep the last N checkpoints of each session and those younger than a maximum age,
//! then remove the objects no remaining checkpoint refers to (mark and sweep). The sweep holds
//! the store lock exclusively, so no snapshot is writing objects it has not yet recorded.

use std::collections::HashSet;
use std::fs;

use serde::Serialize;

use crate::error::Error;
use crate::settings::Retention;
use crate::store::Store;
use crate::tree::{self, Node};
use crate::{index, lock};

/// What a gc removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
        let _lock = lock::exclusive(&self.store_lock())?;
        let mut gc = Gc::default();
        let list = self.list()?;
        let expired = retention.expired(&list, now);
        for id in &expired {
            self.remove(*id)?;
            gc.checkpoints += 1;
        }
        // Numbers claimed by snapshots that never wrote their record (none runs now).
        for id in self.ids()? {
            if !list.iter().any(|c| c.id == id) && self.load(id).is_err() {
                let _ = fs::remove_file(self.record_path(id));
            }
        }
        let mut live = HashSet::new();
        for cp in list.iter().filter(|c| !expired.contains(&c.id)) {
            // A damaged tree cannot be restored anyway: the others are still kept.
            let _ = self.mark(&cp.tree, &mut live);
            if let Some(r) = &cp.rewound {
                live.insert(r.object.clone());
            }
        }
        let objects = self.objects();
        let Ok(fans) = fs::read_dir(&objects) else { return Ok(gc) };
        for fan in fans.filter_map(|e| e.ok()) {
            let Ok(files) = fs::read_dir(fan.path()) else { continue };
            let prefix = fan.file_name().to_string_lossy().into_owned();
            for f in files.filter_map(|e| e.ok()) {
                // Temporary files of writers that died are garbage too: none writes now.
                let oid = format!("{prefix}{}", f.file_name().to_string_lossy());
                if !live.contains(&oid) {
                    gc.bytes += f.metadata().map(|m| m.len()).unwrap_or(0);
                    if fs::remove_file(f.path()).is_ok() {
                        gc.objects += 1;
                    }
                }
            }
        }
        // The index may no longer name objects that are gone: the next snapshot would trust it.
        let mut idx = index::load(&self.index_path());
        let before = idx.len();
        idx.retain(|_, (_, oid)| live.contains(oid));
        if idx.len() != before {
            index::save(&self.index_path(), &idx)?;
        }
        Ok(gc)
    }

    /// [`Store::gc`] with the store's own retention, when it would remove a checkpoint (so that
    /// it can run after every checkpoint at the cost of listing them).
    pub fn retain(&self, now: u64) -> Result<Option<Gc>, Error> {
        if self.retention.expired(&self.list()?, now).is_empty() {
            return Ok(None);
        }
        self.gc(self.retention, now).map(Some)
    }

    /// Marks tree `oid`, its sub-trees and files as live (a tree seen before is not read again:
    /// trees are shared between checkpoints).
    fn mark(&self, oid: &str, live: &mut HashSet<String>) -> Result<(), Error> {
        if !live.insert(oid.to_string()) {
            return Ok(());
        }
        for node in tree::read(&self.objects(), oid)?.into_values() {
            match node {
                Node::File { oid, .. } => {
                    live.insert(oid);
                }
                Node::Dir { oid, .. } => self.mark(&oid, live)?,
                Node::Link { .. } | Node::Skipped { .. } => {}
            }
        }
        Ok(())
    }
}
