//! Taking a checkpoint: walk the tree (reading only what the stat index says changed), store its
//! trees, save the index, count the changes since the project's previous checkpoint, claim the
//! next number and write the record.

use crate::diff;
use crate::error::Error;
use crate::manifest::{Checkpoint, Meta, Summary};
use crate::objects::{self, write_atomic};
use crate::store::{Store, now_ms};
use crate::{index, lock, snapshot, tree};

impl Store {
    /// Snapshots the working tree as a checkpoint described by `meta`.
    pub fn snapshot(&self, meta: &Meta) -> Result<Checkpoint, Error> {
        let _lock = lock::shared(&self.store_lock())?;
        self.take(meta, None)
    }

    /// [`Store::snapshot`] under the store lock already held.
    pub(crate) fn take(&self, meta: &Meta, restoring: Option<u64>) -> Result<Checkpoint, Error> {
        let walked = snapshot::walk(
            &self.root,
            &self.config,
            &self.objects(),
            &index::load(&self.index_path()),
        )?;
        let mut new = walked.new;
        let (tree, _) = tree::build(&self.objects(), walked.entries, &mut new)?;
        // A restore's checkpoint is its undo: it is made durable with the restore (which once
        // ran a `syncfs`, flushing the store too when it shares the project's file system).
        if restoring.is_some() {
            objects::sync(&self.objects(), &new);
        }
        index::save(&self.index_path(), &walked.index)?;
        let ids = self.ids()?;
        let previous = ids.iter().rev().find_map(|id| self.load(*id).ok());
        let changes = match &previous {
            Some(p) => diff::summary(self, Some(&p.tree), &tree)?,
            None => Summary::default(),
        };
        // Numbers are claimed with create_new, so two sessions snapshotting at once never share one.
        let mut id = ids.last().copied().unwrap_or(0) + 1;
        loop {
            let path = self.record_path(id);
            match hands_dirs::create_private_file(&path) {
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => id += 1,
                Err(e) => return Err(Error::Io { path, source: e }),
            }
        }
        let cp = Checkpoint {
            id,
            session: meta.session.clone(),
            turn: meta.turn.clone(),
            kind: meta.kind,
            created_ms: now_ms(),
            tree,
            changes,
            messages: meta.messages,
            restoring,
            rewound: meta.rewound.clone(),
            uncaptured: walked.uncaptured,
        };
        write_atomic(&self.record_path(id), &serde_json::to_vec(&cp).unwrap_or_default())?;
        Ok(cp)
    }
}
