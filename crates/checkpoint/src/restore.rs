//! Restoring a checkpoint: refuse while a turn runs, snapshot the current tree (so the restore
//! can be undone), write a journal naming the target, make the tree equal to the target, sync,
//! remove the journal.
//!
//! Only the paths whose trees differ are touched. Every file is written to a temporary name
//! beside it and renamed, and making a tree equal to another is idempotent, so after a crash
//! [`Store::recover`] simply compares the tree as it is with the journal's target and applies
//! the difference again: an interrupted restore always ends as the new tree, never half of one.
//! Files above the size cap (in the target or in the tree now) are left as they are: their
//! content is not in the store, so it could not be brought back.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext};
use crate::lock;
use crate::manifest::{Checkpoint, Entry, Meta};
use crate::objects::write_atomic;
use crate::store::Store;
use crate::tree::{self, Delta};
use crate::{index, snapshot};

/// What a restore did.
#[derive(Debug, Clone, Serialize)]
pub struct Restored {
    /// The checkpoint restored.
    pub target: u64,
    /// The checkpoint of the tree just before the restore: restore it to undo.
    pub undo: Checkpoint,
    /// Paths written (created or changed, a mode change included).
    pub written: Vec<String>,
    /// Paths deleted (folders with a trailing `/`).
    pub deleted: Vec<String>,
    /// Paths above the size cap (in the checkpoint or in the current tree): left as they are now.
    pub skipped: Vec<String>,
}

impl Restored {
    /// How many files and links the restore wrote or deleted (folders not counted).
    pub fn files_changed(&self) -> usize {
        self.written.iter().chain(&self.deleted).filter(|p| !p.ends_with('/')).count()
    }
}

#[derive(Serialize, Deserialize)]
struct Journal {
    target: u64,
    undo: u64,
}

/// What applying a difference did (the undo is known to the caller).
#[derive(Default)]
struct Applied {
    written: Vec<String>,
    deleted: Vec<String>,
    skipped: Vec<String>,
}

impl Store {
    fn journal(&self) -> std::path::PathBuf {
        self.dir.join("journal.json")
    }

    /// Makes the working tree equal to checkpoint `id`, after a checkpoint of the tree as it is
    /// (described by `undo`; its kind should be [`Kind::Restore`](crate::Kind::Restore)).
    /// [`Error::Busy`] while a turn runs on the project, in any process.
    pub fn restore(&self, id: u64, undo: &Meta) -> Result<Restored, Error> {
        let _turns = lock::try_exclusive(&self.turns_lock())?.ok_or(Error::Busy)?;
        let target = self.load(id)?;
        let _store = lock::shared(&self.store_lock())?;
        let before = self.take(undo, Some(id))?;
        let journal =
            serde_json::to_vec(&Journal { target: id, undo: before.id }).unwrap_or_default();
        write_atomic(&self.journal(), &journal)?;
        let deltas = tree::changes(&self.objects(), Some(&before.tree), &target.tree)?;
        let done = self.apply(&deltas)?;
        sync(&self.root);
        fs::remove_file(self.journal()).at(&self.journal())?;
        Ok(Restored {
            target: id,
            undo: before,
            written: done.written,
            deleted: done.deleted,
            skipped: done.skipped,
        })
    }

    /// Finishes a restore that was interrupted (by a crash or a kill), if any: the checkpoint it
    /// restored and the paths it still had to write or delete. Nothing is done while another
    /// process is restoring.
    pub fn recover(&self) -> Result<Option<(u64, Vec<String>)>, Error> {
        let path = self.journal();
        if !path.exists() {
            return Ok(None);
        }
        let Some(_turns) = lock::try_exclusive(&self.turns_lock())? else { return Ok(None) };
        // Read after the lock: the restorer may have finished meanwhile.
        let Ok(bytes) = fs::read(&path) else { return Ok(None) };
        let Ok(journal) = serde_json::from_slice::<Journal>(&bytes) else {
            // A journal is written atomically: an unreadable one was never committed to.
            let _ = fs::remove_file(&path);
            return Ok(None);
        };
        let _store = lock::shared(&self.store_lock())?;
        let target = self.load(journal.target)?;
        let walked = snapshot::walk(
            &self.root,
            &self.config,
            &self.objects(),
            &index::load(&self.index_path()),
        )?;
        let (now, _) = tree::build(&self.objects(), walked.entries)?;
        let deltas = tree::changes(&self.objects(), Some(&now), &target.tree)?;
        let done = self.apply(&deltas)?;
        sync(&self.root);
        fs::remove_file(&path).at(&path)?;
        let mut paths = done.written;
        paths.extend(done.deleted);
        Ok(Some((journal.target, paths)))
    }

    /// Makes each path of `deltas` (path, now, target) what the target says.
    fn apply(&self, deltas: &[Delta]) -> Result<Applied, Error> {
        let mut done = Applied::default();
        let at = |rel: &str| self.root.join(rel);
        let is_dir = |e: &Option<Entry>| matches!(e, Some(Entry::Dir { .. }));
        let is_content =
            |e: &Option<Entry>| matches!(e, Some(Entry::File { .. } | Entry::Link { .. }));
        // 1. Files and links that go, or that stand where the target has a folder. A file above
        // the size cap stays, whatever the target says: its content could not be brought back.
        for (rel, now, target) in deltas {
            if matches!(now, Some(Entry::Skipped { .. })) {
                done.skipped.push(rel.clone());
            } else if is_content(now) && !is_content(target) {
                remove(&at(rel))?;
                if target.is_none() {
                    done.deleted.push(rel.clone());
                }
            }
        }
        // 2. Folders that go, deepest first; one that still holds ignored files stays.
        for (rel, now, target) in deltas.iter().rev() {
            if is_dir(now) && !is_dir(target) && fs::remove_dir(at(rel)).is_ok() && target.is_none()
            {
                done.deleted.push(format!("{rel}/"));
            }
        }
        // 3. Folders that come, parents first.
        for (rel, now, target) in deltas {
            if is_dir(target) && !is_dir(now) && !matches!(now, Some(Entry::Skipped { .. })) {
                fs::create_dir_all(at(rel)).at(&at(rel))?;
            }
        }
        // 4. Files and links.
        for (rel, now, target) in deltas {
            if matches!(now, Some(Entry::Skipped { .. })) {
                continue;
            }
            match target {
                Some(Entry::File { oid, mode, .. }) => {
                    let path = at(rel);
                    let perms = fs::Permissions::from_mode(*mode);
                    match now {
                        // Only the mode changed.
                        Some(Entry::File { oid: was, .. }) if was == oid => {
                            fs::set_permissions(&path, perms).at(&path)?;
                        }
                        _ => {
                            let bytes = self.object(oid)?;
                            place(&path, |tmp| {
                                fs::write(tmp, &bytes)?;
                                fs::set_permissions(tmp, perms)
                            })?;
                        }
                    }
                    done.written.push(rel.clone());
                }
                Some(Entry::Link { target }) => {
                    place(&at(rel), |tmp| std::os::unix::fs::symlink(target, tmp))?;
                    done.written.push(rel.clone());
                }
                Some(Entry::Skipped { .. }) => done.skipped.push(rel.clone()),
                Some(Entry::Dir { .. }) | None => {}
            }
        }
        // 5. Folder modes, deepest first (a read-only folder is made so after its contents).
        for (rel, now, target) in deltas.iter().rev() {
            if let Some(Entry::Dir { mode }) = target
                && now != target
            {
                let path = at(rel);
                if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                    fs::set_permissions(&path, fs::Permissions::from_mode(*mode)).at(&path)?;
                    if now.is_some() {
                        done.written.push(format!("{rel}/"));
                    }
                }
            }
        }
        Ok(done)
    }
}

/// Flushes what the restore wrote before its journal goes (one `syncfs` rather than a `fsync`
/// per file). A failure leaves the journal's work to be checked again by the next recovery.
fn sync(root: &Path) {
    if let Ok(dir) = fs::File::open(root) {
        let _ = rustix::fs::syncfs(&dir);
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
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        remove(path)?;
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("f");
    let tmp = dir.join(format!(".{name}.hands-restore"));
    let _ = fs::remove_file(&tmp);
    make(&tmp).at(&tmp)?;
    fs::rename(&tmp, path).at(path)
}
