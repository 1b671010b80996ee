//! Restoring a checkpoint: snapshot the current tree (so the restore can be undone), write a
//! journal naming the target, make the tree equal to the target, remove the journal.
//!
//! Every file is written to a temporary name beside it and renamed, and making a tree equal to a
//! manifest is idempotent, so after a crash [`Store::recover`] simply applies the journal's target
//! again: an interrupted restore always ends as the new tree, never half of one.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext};
use crate::manifest::Entry;
use crate::snapshot;
use crate::store::{Store, write_atomic};

/// What a restore did.
#[derive(Debug, Clone, Serialize)]
pub struct Restored {
    /// The checkpoint restored.
    pub target: u64,
    /// The checkpoint of the tree just before the restore: restore it to undo.
    pub undo: u64,
    /// Paths written (created or changed).
    pub written: Vec<String>,
    /// Paths deleted.
    pub deleted: Vec<String>,
    /// Paths above the size cap (in the checkpoint or in the current tree): left as they are now.
    pub skipped: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct Journal {
    target: u64,
    undo: u64,
}

impl Store {
    fn journal(&self) -> std::path::PathBuf {
        self.dir.join("journal.json")
    }

    /// Makes the working tree equal to checkpoint `id` (files above the cap are left alone).
    pub fn restore(&self, id: u64) -> Result<Restored, Error> {
        let target = self.load(id)?;
        let before =
            self.snapshot(&target.session, target.turn, &format!("before restore of {id}"))?;
        let journal =
            serde_json::to_vec(&Journal { target: id, undo: before.id }).unwrap_or_default();
        write_atomic(&self.journal(), &journal)?;
        let mut done = self.apply(&target.entries, &before.entries)?;
        fs::remove_file(self.journal()).at(&self.journal())?;
        done.target = id;
        done.undo = before.id;
        Ok(done)
    }

    /// Finishes a restore that was interrupted (by a crash or a kill), if any.
    pub fn recover(&self) -> Result<Option<Restored>, Error> {
        let path = self.journal();
        let Ok(bytes) = fs::read(&path) else { return Ok(None) };
        let Ok(journal) = serde_json::from_slice::<Journal>(&bytes) else {
            // A journal is written atomically: an unreadable one was never committed to.
            let _ = fs::remove_file(&path);
            return Ok(None);
        };
        let target = self.load(journal.target)?;
        let index = Default::default();
        let (now, _, _) = snapshot::walk(&self.root, &self.config, &self.objects(), &index)?;
        let now: BTreeMap<String, Entry> = now.into_iter().collect();
        let mut done = self.apply(&target.entries, &now)?;
        fs::remove_file(&path).at(&path)?;
        done.target = journal.target;
        done.undo = journal.undo;
        Ok(Some(done))
    }

    fn apply(
        &self,
        target: &BTreeMap<String, Entry>,
        now: &BTreeMap<String, Entry>,
    ) -> Result<Restored, Error> {
        let mut done =
            Restored { target: 0, undo: 0, written: vec![], deleted: vec![], skipped: vec![] };
        for (rel, entry) in now {
            if target.contains_key(rel) {
                continue;
            }
            if matches!(entry, Entry::Skipped { .. }) {
                done.skipped.push(rel.clone());
                continue;
            }
            let path = self.root.join(rel);
            remove(&path)?;
            prune_empty_parents(&self.root, &path);
            done.deleted.push(rel.clone());
        }
        for (rel, entry) in target {
            if now.get(rel) == Some(entry) {
                continue;
            }
            let path = self.root.join(rel);
            match entry {
                Entry::Skipped { .. } => done.skipped.push(rel.clone()),
                Entry::File { oid, exec, .. } => {
                    let bytes = self.object(oid)?;
                    place(&path, |tmp| {
                        fs::write(tmp, &bytes)?;
                        let mode = if *exec { 0o755 } else { 0o644 };
                        fs::set_permissions(tmp, fs::Permissions::from_mode(mode))?;
                        fs::File::open(tmp)?.sync_all()
                    })?;
                    done.written.push(rel.clone());
                }
                Entry::Link { target } => {
                    place(&path, |tmp| std::os::unix::fs::symlink(target, tmp))?;
                    done.written.push(rel.clone());
                }
            }
        }
        Ok(done)
    }
}

/// Removes a file or link (or a folder standing where the target has a file).
fn remove(path: &Path) -> Result<(), Error> {
    match fs::symlink_metadata(path) {
        Err(_) => Ok(()),
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).at(path),
        Ok(_) => fs::remove_file(path).at(path),
    }
}

/// Creates `path` through `make` on a temporary name beside it, then renames it into place.
fn place(path: &Path, make: impl FnOnce(&Path) -> std::io::Result<()>) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    // A file standing where a folder is needed is replaced by the folder.
    let mut anc = dir.to_path_buf();
    let mut blockers = Vec::new();
    while !anc.exists() || fs::symlink_metadata(&anc).is_ok_and(|m| !m.is_dir()) {
        if fs::symlink_metadata(&anc).is_ok() {
            blockers.push(anc.clone());
        }
        if !anc.pop() {
            break;
        }
    }
    for b in blockers {
        remove(&b)?;
    }
    fs::create_dir_all(dir).at(dir)?;
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        remove(path)?;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("f");
    let tmp = dir.join(format!(".{name}.hands-restore"));
    let _ = fs::remove_file(&tmp);
    make(&tmp).at(&tmp)?;
    fs::rename(&tmp, path).at(path)
}

/// Removes the folders above a deleted path that became empty, up to the root.
fn prune_empty_parents(root: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == root || !d.starts_with(root) || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}
