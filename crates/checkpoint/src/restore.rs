//! Restoring a checkpoint: refuse while a turn runs, snapshot the current tree (so the restore
//! can be undone), write a journal naming the target, make the tree equal to the target, fsync
//! what it changed (see `Project::sync`), remove the journal.
//!
//! Only the paths whose trees differ are touched. Every file is written to a temporary name
//! beside it and renamed, and making a tree equal to another is idempotent, so after a crash
//! [`Store::recover`] simply compares the tree as it is with the journal's target and applies
//! the difference again: an interrupted restore always ends as the new tree, never half of one.
//! Files above the size cap (in the target or in the tree now) are left as they are: their
//! content is not in the store, so it could not be brought back.
//!
//! Every write, rename, delete, mkdir and chmod goes through a directory handle on the root, each
//! folder opened beneath it with no symlink followed at any component
//! ([`hands_fs::Workspace::open_dir_nofollow`]) at the moment of the change, and files are placed
//! by a temp file renamed within that handle ([`hands_fs::atomic::replace_in`]). So nothing
//! outside the root, and nothing a link inside it points to, is ever touched, whatever the "tree
//! now" saw (it leaves out ignored paths) and whatever changes while the restore runs. A symlink
//! standing where the checkpoint has a folder is itself removed (not followed) and the folder
//! made; one that appears on the way mid-restore fails that path with a clear error. Paths in or
//! of a version-control folder (`.git`, `.hg`, `.svn`, `.jj`, any depth, any case, a `.git` file
//! too) are never written, created or deleted, even if a checkpoint holds them.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Write as _};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use hands_fs::{RelPath, Workspace, atomic};
use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext};
use crate::lock;
use crate::manifest::{Checkpoint, Entry, Meta, Uncaptured};
use crate::names;
use crate::objects::write_atomic;
use crate::snapshot::VCS_DIRS;
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
    /// Paths in or of a version-control folder (`.git` …, a `.git` file too) where the checkpoint
    /// and the tree now differ: a restore never touches them, so they are left as they are now.
    pub protected: Vec<String>,
    /// What the undo checkpoint could not capture (a socket, a FIFO, an unreadable file …): left
    /// as they are by this restore unless the target has a file there, and not brought back by
    /// restoring the undo.
    pub uncaptured: Vec<Uncaptured>,
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
    protected: Vec<String>,
    /// Whether what was changed is durable (else the journal stays, for the next recovery).
    synced: bool,
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
        if done.synced {
            fs::remove_file(self.journal()).at(&self.journal())?;
        }
        let shown = |paths: Vec<String>| paths.iter().map(|p| names::escaped(p)).collect();
        Ok(Restored {
            target: id,
            uncaptured: before.uncaptured.clone(),
            undo: before,
            written: shown(done.written),
            deleted: shown(done.deleted),
            skipped: shown(done.skipped),
            protected: shown(done.protected),
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
        let (now, _) = tree::build(&self.objects(), walked.entries, &mut Vec::new())?;
        let deltas = tree::changes(&self.objects(), Some(&now), &target.tree)?;
        let done = self.apply(&deltas)?;
        if done.synced {
            fs::remove_file(&path).at(&path)?;
        }
        let mut paths = done.written;
        paths.extend(done.deleted);
        Ok(Some((journal.target, paths.iter().map(|p| names::escaped(p)).collect())))
    }

    /// Makes each path of `deltas` (path, now, target) what the target says, through
    /// [`Project`]: beneath the root, no symlink followed, nothing in a version-control folder;
    /// then makes it durable ([`Project::sync`]) before the caller removes the journal.
    fn apply(&self, deltas: &[Delta]) -> Result<Applied, Error> {
        let mut done = Applied::default();
        let project = Project::open(&self.root)?;
        let (deltas, protected): (Vec<&Delta>, Vec<&Delta>) =
            deltas.iter().partition(|(rel, ..)| !in_vcs(rel));
        done.protected = protected.into_iter().map(|(rel, ..)| rel.clone()).collect();
        let is_dir = |e: &Option<Entry>| matches!(e, Some(Entry::Dir { .. }));
        let is_content =
            |e: &Option<Entry>| matches!(e, Some(Entry::File { .. } | Entry::Link { .. }));
        // 1. Files and links that go, or that stand where the target has a folder. A file above
        // the size cap stays, whatever the target says: its content could not be brought back.
        for (rel, now, target) in &deltas {
            if matches!(now, Some(Entry::Skipped { .. })) {
                done.skipped.push(rel.clone());
            } else if is_content(now) && !is_content(target) {
                project.remove(rel)?;
                if target.is_none() {
                    done.deleted.push(rel.clone());
                }
            }
        }
        // 2. Folders that go, deepest first; one that still holds ignored files stays.
        for (rel, now, target) in deltas.iter().rev() {
            if is_dir(now) && !is_dir(target) && project.remove_empty_dir(rel) && target.is_none() {
                done.deleted.push(format!("{rel}/"));
            }
        }
        // 3. Folders that come, parents first. A symlink found in the place of one (one the
        // "tree now" did not see: ignored) is removed, never followed, and reported as deleted.
        for (rel, now, target) in &deltas {
            if is_dir(target)
                && !is_dir(now)
                && !matches!(now, Some(Entry::Skipped { .. }))
                && project.make_dir(rel)?
            {
                done.deleted.push(rel.clone());
            }
        }
        // 4. Files and links, each a new entry renamed into place (a mode change too: chmod on
        // the old entry would change whatever else links to its inode).
        for (rel, now, target) in &deltas {
            if matches!(now, Some(Entry::Skipped { .. })) {
                continue;
            }
            let placed = match target {
                Some(Entry::File { oid, mode, .. }) => {
                    Some(project.place_file(rel, &self.object(oid)?, *mode)?)
                }
                Some(Entry::Link { target }) => Some(project.place_link(rel, target)?),
                Some(Entry::Skipped { .. }) => {
                    done.skipped.push(rel.clone());
                    None
                }
                Some(Entry::Dir { .. }) | None => None,
            };
            match placed {
                Some(true) => done.written.push(rel.clone()),
                // A folder holding a version-control folder stands there.
                Some(false) => done.protected.push(rel.clone()),
                None => {}
            }
        }
        // 5. Folder modes, deepest first (a read-only folder is made so after its contents).
        for (rel, now, target) in deltas.iter().rev() {
            if let Some(Entry::Dir { mode }) = target
                && now != target
                && project.set_dir_mode(rel, *mode)?
                && now.is_some()
            {
                done.written.push(format!("{rel}/"));
            }
        }
        done.synced = project.sync();
        Ok(done)
    }
}

/// True for a path in or of a version-control folder (`.git`, `.hg`, `.svn`, `.jj`, any case,
/// any depth, the name itself included: a `.git` file names the repository whose hooks run). A
/// restore never writes, deletes or creates one, whatever the checkpoint holds.
fn in_vcs(rel: &str) -> bool {
    rel.split('/').any(|part| VCS_DIRS.iter().any(|vcs| part.eq_ignore_ascii_case(vcs)))
}

/// The project as a restore reaches it: a directory handle on the root, and every folder opened
/// beneath it with no symlink followed at any component ([`Workspace::open_dir_nofollow`]), at
/// the moment of each write, rename or delete. So a folder replaced by a link, before the
/// restore or while it runs, leads nowhere: the link's target is never written, listed or
/// deleted in, inside the root or outside.
struct Project {
    ws: Workspace,
    root: PathBuf,
    /// What the restore changed, to be made durable before its journal goes (see [`Project::sync`]):
    /// the files it wrote and the folders whose entries or modes it changed.
    files: RefCell<Vec<fs::File>>,
    dirs: RefCell<BTreeSet<RelPath>>,
}

impl Project {
    fn open(root: &Path) -> Result<Self, Error> {
        let ws = Workspace::open(root).at(root)?;
        Ok(Self {
            ws,
            root: root.to_path_buf(),
            files: RefCell::default(),
            dirs: RefCell::default(),
        })
    }

    /// The error of `rel`, with what a link on the way means.
    fn error(&self, rel: &str, err: io::Error) -> Error {
        let source = if err.raw_os_error() == Some(ELOOP) {
            io::Error::new(
                err.kind(),
                "a symlink stands where the checkpoint has a folder; a restore never follows \
                 symlinks (restore again to replace the link with the folder)",
            )
        } else {
            err
        };
        Error::Io { path: self.root.join(names::escaped(rel)), source }
    }

    /// `rel` (stored form, see [`names`]) as a path beneath the root: plain names only, each
    /// decoded to its bytes.
    fn rel(&self, rel: &str) -> io::Result<RelPath> {
        let bad = || io::Error::new(io::ErrorKind::InvalidInput, "not a path inside the project");
        let mut path = RelPath::default();
        for part in rel.split('/') {
            let name = names::decode(part).ok_or_else(bad)?;
            let bytes = name.as_bytes();
            if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
                return Err(bad());
            }
            path = path.join(name);
        }
        Ok(path)
    }

    /// The folder that holds `rel` (opened with no symlink followed), `rel`'s name in it and
    /// `rel` as a path beneath the root.
    fn parent(&self, rel: &str) -> io::Result<(Dir, OsString, RelPath)> {
        let path = self.rel(rel)?;
        let name = path.file_name().unwrap_or_default().to_os_string();
        // Every change goes through here: its folder is synced at the end.
        self.dirs.borrow_mut().insert(path.parent());
        Ok((self.ws.open_dir_nofollow(&path.parent())?, name, path))
    }

    /// Removes the file or link `rel` (or a folder standing where the target has a file); a
    /// path that is not there (its folder included) is done.
    fn remove(&self, rel: &str) -> Result<(), Error> {
        let gone = self
            .parent(rel)
            .and_then(|(dir, name, path)| remove_entry(&self.ws, &dir, &path, &name));
        match gone {
            Err(err) if err.kind() != io::ErrorKind::NotFound => Err(self.error(rel, err)),
            _ => Ok(()),
        }
    }

    /// Removes the folder `rel` if it is empty; true when it went.
    fn remove_empty_dir(&self, rel: &str) -> bool {
        self.parent(rel).is_ok_and(|(dir, name, _)| dir.remove_dir(&name).is_ok())
    }

    /// Creates the folder `rel` (its parent exists); true when a symlink stood there and was
    /// removed first. A file standing there is an error (the "tree now" did not see it: it is
    /// ignored, and its content is not in the store).
    fn make_dir(&self, rel: &str) -> Result<bool, Error> {
        let (dir, name, _) = self.parent(rel).map_err(|e| self.error(rel, e))?;
        let made = match dir.create_dir(&name) {
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                match dir.symlink_metadata(&name) {
                    Ok(m) if m.is_dir() => Ok(false),
                    Ok(m) if m.file_type().is_symlink() => {
                        dir.remove_file(&name).and_then(|()| dir.create_dir(&name)).map(|()| true)
                    }
                    Ok(_) => Err(io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        "a file the project ignores stands where the checkpoint has a folder; \
                         move it away and restore again",
                    )),
                    Err(err) => Err(err),
                }
            }
            other => other.map(|()| false),
        };
        made.map_err(|e| self.error(rel, e))
    }

    /// Puts a file of `bytes` and `mode` at `rel`, replacing what is there (a link itself, never
    /// what it points to); false when a folder that holds a version-control folder is there.
    fn place_file(&self, rel: &str, bytes: &[u8], mode: u32) -> Result<bool, Error> {
        self.place(rel, |dir, name| {
            atomic::replace_in(dir, name, |file| {
                file.write_all(bytes)?;
                self.files.borrow_mut().push(file.try_clone()?);
                file.set_permissions(std::fs::Permissions::from_mode(mode))
            })
        })
    }

    /// Puts a symlink to `target` (stored form) at `rel`.
    fn place_link(&self, rel: &str, target: &str) -> Result<bool, Error> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "a damaged link target");
        let target = names::decode(target).ok_or_else(bad).map_err(|e| self.error(rel, e))?;
        self.place(rel, |dir, name| atomic::replace_with_symlink(dir, name, Path::new(&target)))
    }

    fn place(
        &self,
        rel: &str,
        make: impl FnOnce(&Dir, &OsStr) -> io::Result<()>,
    ) -> Result<bool, Error> {
        let (dir, name, path) = self.parent(rel).map_err(|e| self.error(rel, e))?;
        if dir.symlink_metadata(&name).is_ok_and(|m| m.is_dir())
            && !remove_entry(&self.ws, &dir, &path, &name).map_err(|e| self.error(rel, e))?
        {
            return Ok(false);
        }
        make(&dir, &name).map_err(|e| self.error(rel, e))?;
        Ok(true)
    }

    /// Gives the folder `rel` `mode`; false when no folder is there (a link is not followed).
    fn set_dir_mode(&self, rel: &str, mode: u32) -> Result<bool, Error> {
        let Ok(dir) = self.rel(rel).and_then(|path| self.ws.open_dir_nofollow(&path)) else {
            return Ok(false);
        };
        let perms = cap_std::fs::Permissions::from_std(std::fs::Permissions::from_mode(mode));
        dir.set_permissions(".", perms).map_err(|e| self.error(rel, e))?;
        if let Ok(path) = self.rel(rel) {
            self.dirs.borrow_mut().insert(path);
        }
        Ok(true)
    }
}

const ELOOP: i32 = 40;

/// Removes the entry `name` of `dir` (the folder of `path`): a file or link by unlinking it, a
/// folder with everything beneath it, each sub-folder opened with no symlink followed. A
/// version-control folder (or file) stays, and so does every folder above it: false then.
fn remove_entry(ws: &Workspace, dir: &Dir, path: &RelPath, name: &OsStr) -> io::Result<bool> {
    if !dir.symlink_metadata(name)?.is_dir() {
        return dir.remove_file(name).map(|()| true);
    }
    let inner = ws.open_dir_nofollow(path)?;
    let mut all = true;
    for entry in inner.entries()? {
        let child = entry?.file_name();
        all &= !in_vcs(&child.to_string_lossy())
            && remove_entry(ws, &inner, &path.join(&child), &child)?;
    }
    if all {
        dir.remove_dir(name)?;
    }
    Ok(all)
}

impl Project {
    /// Makes what the restore changed durable before its journal is removed: each file it wrote
    /// (`fsync`: its content, size and mode) and each folder whose entries it renamed, created or
    /// removed, or whose mode it set (`fsync`). That is exactly what a crash could otherwise lose
    /// after the journal is gone; everything else on the file system is not the restore's to
    /// flush (a `syncfs` waited for every other writer's dirty data too). The two lists are
    /// synced by two threads, so that the file system can join their flushes. False when one
    /// failed: the caller then keeps the journal, so that the next [`Store::recover`] compares
    /// the tree with the target again.
    fn sync(&self) -> bool {
        let files = std::mem::take(&mut *self.files.borrow_mut());
        let dirs: Vec<Dir> = std::mem::take(&mut *self.dirs.borrow_mut())
            .iter()
            .filter_map(|rel| self.ws.open_dir_nofollow(rel).ok())
            .collect();
        let half = files.len() / 2;
        let (a, b) = files.split_at(half);
        let all = |files: &[fs::File]| files.iter().all(|f| f.sync_all().is_ok());
        let files_ok = std::thread::scope(|scope| {
            let other = scope.spawn(|| all(a));
            all(b) & other.join().unwrap_or(false)
        });
        let dirs_ok = dirs.iter().all(|dir| {
            rustix::fs::fsync(dir).is_ok() || {
                // A handle that cannot be synced (opened for paths only): the folder itself.
                let read = cap_std::fs::OpenOptions::new().read(true).clone();
                dir.open_with(".", &read).and_then(|h| h.sync_all()).is_ok()
            }
        });
        files_ok && dirs_ok
    }
}
