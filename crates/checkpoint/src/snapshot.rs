//! Walking the project into entries, reading only the files whose stats changed.
//!
//! The walk follows the project's ignore rules as the file tools do (`.gitignore`, `.ignore`,
//! `.git/info/exclude`; hidden files included) and never enters the excluded folders: the user's
//! version control (`.git`, `.hg`, `.svn`, `.jj`: always) and `node_modules` (by default: it is
//! reinstalled from the lock file, which is captured, and is often larger than the project).
//! `dist` is not excluded: when the project ignores it, its rules leave it out as git does; when
//! it does not (a committed build, such as a GitHub Action's), it is part of the tree a restore
//! must give back. A file whose stats equal its index entry keeps its object id without being
//! read. Folders are entries too, so that empty ones are captured.
//!
//! The walk reads the working tree only through directory handles beneath the root: each folder
//! is opened with no symlink followed at any component ([`Workspace::open_dir_nofollow`]) when it
//! is listed, each entry is looked at with an `lstat` relative to its folder's handle, and each
//! file (the ignore files too) is opened in that handle with `O_NOFOLLOW`, its index stats taken
//! from the open file (`fstat`). A symlink is recorded as a link and never followed, so a folder
//! swapped for a link while a checkpoint is taken cannot bring anything from outside the root
//! (or anything else a link points to) into the store, from where a restore would put it into
//! the project. The ignore rules are matched as the file tools' walker (the `ignore` crate)
//! matches them; only a worktree's `.git` file is followed to its git folder, by path, for that
//! folder's `info/exclude` (which only says what to leave out).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read as _};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use cap_std::fs::Dir;
use hands_core::middleware::truncate;
use hands_fs::{RelPath, Workspace};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::{Error, IoContext};
use crate::index::{Index, Stat};
use crate::manifest::{Entry, Uncaptured};
use crate::{names, objects};

/// Folders of version control systems: never captured, never touched.
pub(crate) const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// hands' own runtime files in a project, never captured — not the user's changes, so neither
/// counted in a turn's summary nor touched by a restore: the preview's discovery file (and its
/// temporary copy while written), the session database's fallback place; and [`RUNTIME_DIRS`].
pub const RUNTIME_FILES: &[&str] = &[
    ".hands/devtools.json",
    ".bricks/devtools.json",
    ".hands/sessions.db",
    ".hands/sessions.db-wal",
    ".hands/sessions.db-shm",
];

/// hands' own runtime folders: never entered, never captured (their contents are ignored by
/// their own `.gitignore` of `*` besides).
pub const RUNTIME_DIRS: &[&str] = &[".hands/outputs", ".hands/processes"];

/// `child` (a path beneath the root) is one of hands' runtime files ([`RUNTIME_FILES`]).
fn runtime_file(child: &str) -> bool {
    // The temporary copy is `.devtools.json.tmp-<pid>` exactly: a look-alike with other text
    // after the dash (a file the model wrote to hide it from undo) is the user's.
    let temporary = |prefix: &str| {
        child.strip_prefix(prefix).is_some_and(|pid| {
            !pid.is_empty() && pid.len() <= 10 && pid.bytes().all(|b| b.is_ascii_digit())
        })
    };
    RUNTIME_FILES.contains(&child)
        || temporary(".hands/.devtools.json.tmp-")
        || temporary(".bricks/.devtools.json.tmp-")
}

/// Files changed less than this long before a walk starts are read again by the next one: more
/// than the coarsest clock tick of the file systems' timestamps (10 ms at HZ=100).
const RACY_WINDOW_NS: i128 = 20_000_000;

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
}

/// What a snapshot takes.
#[derive(Debug, Clone)]
pub struct Config {
    /// Files larger than this are recorded as skipped (default 50 MB).
    pub max_file_size: u64,
    /// Folder names never entered, besides the version control folders (default
    /// `node_modules`).
    pub excluded_dirs: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self { max_file_size: 50 * 1024 * 1024, excluded_dirs: vec!["node_modules".into()] }
    }
}

/// A walk's result: the entries (folders included), the new index and the compressed bytes
/// written.
pub(crate) struct Walked {
    pub(crate) entries: Vec<(String, Entry)>,
    pub(crate) index: Index,
    pub(crate) written: u64,
    /// What was found and could not be captured, by stored path, sorted.
    pub(crate) uncaptured: Vec<Uncaptured>,
    /// The objects this walk stored (that were not in the store).
    pub(crate) new: Vec<String>,
}

/// Walks `root`, storing new contents in `objects_dir`.
///
/// Every folder is opened beneath the root with no symlink followed at any component
/// ([`Workspace::open_dir_nofollow`]), at the moment it is listed; every entry is looked at with
/// an `lstat` relative to that handle, and every file is opened in it with `O_NOFOLLOW`, its
/// stats then taken from the open file. A link is recorded as a link, never followed: a folder
/// swapped for a link during the walk (to `~/.ssh`, anywhere) is listed through no handle, and
/// nothing it points to is read into the store. Two threads walk, sharing a queue of folders.
pub(crate) fn walk(
    root: &Path,
    config: &Config,
    objects_dir: &Path,
    index: &Index,
) -> Result<Walked, Error> {
    let ws = Workspace::open(root).at(root)?;
    let top = ws.open_dir_nofollow(&RelPath::default()).at(root)?;
    let mut excluded = config.excluded_dirs.clone();
    excluded.extend(VCS_DIRS.iter().map(|d| (*d).to_string()));
    let walk = Walk {
        ws,
        root: root.to_path_buf(),
        config,
        excluded,
        objects_dir,
        index,
        racy_from: now_ns() - RACY_WINDOW_NS,
        queue: Mutex::new(Queue { folders: Vec::new(), busy: 0, stop: false }),
        woken: Condvar::new(),
        out: Mutex::new((
            Walked {
                entries: Vec::new(),
                index: Index::new(),
                written: 0,
                uncaptured: Vec::new(),
                new: Vec::new(),
            },
            None,
        )),
    };
    // The root's folder is read here, so that a root that cannot be listed is an error.
    let rules = Arc::new(walk.rules(&top, &RelPath::default(), None));
    let names = list(&top).at(root)?;
    let rules = walk.folder(&top, &RelPath::default(), "", &names, rules);
    if let Err(err) = rules {
        walk.fail(err);
    }
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| walk.work());
        }
    });
    // A poisoned lock means a visitor panicked: the walk's result cannot be trusted.
    let (mut walked, err) = walk.out.into_inner().map_err(|_| Error::Poisoned)?;
    walked.uncaptured.sort_by(|a, b| a.escaped.cmp(&b.escaped));
    // A `.hands` folder that holds only hands' runtime files is hands' own too: not a folder
    // the user added (a turn that ran a process would count it).
    if !walked.entries.iter().any(|(path, _)| path.starts_with(".hands/")) {
        walked
            .entries
            .retain(|(path, entry)| !(path == ".hands" && matches!(entry, Entry::Dir { .. })));
    }
    match err {
        Some(err) => Err(err),
        None => Ok(walked),
    }
}

/// The folders still to list, and how many are being listed (the walk ends when both are none).
struct Queue {
    folders: Vec<(RelPath, String, Arc<Rules>)>,
    busy: usize,
    stop: bool,
}

/// One walk's shared state.
struct Walk<'a> {
    ws: Workspace,
    root: PathBuf,
    config: &'a Config,
    excluded: Vec<String>,
    objects_dir: &'a Path,
    index: &'a Index,
    racy_from: i128,
    queue: Mutex<Queue>,
    woken: Condvar,
    out: Mutex<(Walked, Option<Error>)>,
}

/// The ignore rules of one folder (`.ignore`, `.gitignore`, and `.git/info/exclude` where the
/// folder holds a `.git`) and of the folders above it, matched as the file tools' walker matches
/// them: for each kind, the deepest folder that says anything decides; `.ignore` wins over
/// `.gitignore`, which wins over `info/exclude`.
struct Rules {
    parent: Option<Arc<Rules>>,
    ignore: Gitignore,
    git: Gitignore,
    exclude: Gitignore,
}

impl Rules {
    fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        let (mut ignore, mut git, mut exclude) = (Match::None, Match::None, Match::None);
        let mut at = Some(self);
        while let Some(rules) = at {
            if ignore.is_none() {
                ignore = rules.ignore.matched(path, is_dir);
            }
            if git.is_none() {
                git = rules.git.matched(path, is_dir);
            }
            if exclude.is_none() {
                exclude = rules.exclude.matched(path, is_dir);
            }
            at = rules.parent.as_deref();
        }
        ignore.or(git).or(exclude).is_ignore()
    }
}

/// The names of the folder `dir` holds.
fn list(dir: &Dir) -> io::Result<Vec<OsString>> {
    dir.entries()?.map(|e| e.map(|e| e.file_name())).collect()
}

/// `name` in `dir`, opened for reading with no symlink followed and without waiting (a pipe).
fn open_in(dir: &Dir, name: &OsStr) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    Ok(File::from(rustix::fs::openat(dir, name, flags | OFlags::CLOEXEC, Mode::empty())?))
}

/// The content of the regular file `name` in `dir` (none if it is not one or cannot be read).
fn read_in(dir: &Dir, name: &str) -> Option<Vec<u8>> {
    let mut file = open_in(dir, OsStr::new(name)).ok()?;
    if FileType::from_raw_mode(rustix::fs::fstat(&file).ok()?.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// A matcher rooted at `dir` from the lines of `text`.
fn matcher(dir: &Path, text: Option<Vec<u8>>) -> Gitignore {
    let Some(text) = text else { return Gitignore::empty() };
    let mut builder = GitignoreBuilder::new(dir);
    let text = String::from_utf8_lossy(&text);
    for (i, line) in text.lines().enumerate() {
        let line = if i == 0 { line.trim_start_matches('\u{feff}') } else { line };
        // A line that is not a valid glob is left out, as the file tools' walker leaves it.
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The first line of the file at `path` (outside the project: a worktree's git folder).
fn first_line(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.lines().next()?.to_string())
}

fn is_errno(err: &io::Error, errno: Errno) -> bool {
    err.raw_os_error() == Some(errno.raw_os_error())
}

/// True for what a walk passes over silently: a name that went, or that became a link (or
/// something else) between its listing and its opening.
fn vanished(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::NotFound
        || is_errno(err, Errno::LOOP)
        || is_errno(err, Errno::NOTDIR)
        || is_errno(err, Errno::NXIO)
}

impl Walk<'_> {
    /// Records `child` (stored form) as found and not captured, for `reason`.
    fn uncaptured(&self, child: &str, reason: String) {
        if let Ok(mut g) = self.out.lock() {
            g.0.uncaptured.push(Uncaptured::new(child, reason));
        }
    }

    fn fail(&self, err: Error) {
        if let Ok(mut g) = self.out.lock() {
            g.1.get_or_insert(err);
        }
        if let Ok(mut q) = self.queue.lock() {
            q.stop = true;
        }
        self.woken.notify_all();
    }

    /// A worker: lists folders from the queue until none is left or one failed.
    fn work(&self) {
        loop {
            let Ok(mut q) = self.queue.lock() else { return };
            let (rel, text, rules) = loop {
                if q.stop {
                    return;
                }
                if let Some(next) = q.folders.pop() {
                    q.busy += 1;
                    break next;
                }
                if q.busy == 0 {
                    q.stop = true;
                    self.woken.notify_all();
                    return;
                }
                q = match self.woken.wait(q) {
                    Ok(q) => q,
                    Err(_) => return,
                };
            };
            drop(q);
            let done = self.one_folder(&rel, &text, rules);
            if let Err(err) = done {
                self.fail(err);
            }
            if let Ok(mut q) = self.queue.lock() {
                q.busy -= 1;
                if q.busy == 0 && q.folders.is_empty() {
                    self.woken.notify_all();
                }
            }
        }
    }

    /// Opens and lists the folder `rel` (`text`, its stored form) beneath the root. A folder
    /// that went, or that is a link now (swapped in after its parent was listed), is passed
    /// over: no handle leads through a link. One that cannot be opened or listed is recorded
    /// (empty) and named as not captured.
    fn one_folder(&self, rel: &RelPath, text: &str, parent: Arc<Rules>) -> Result<(), Error> {
        let names = self.ws.open_dir_nofollow(rel).and_then(|dir| Ok((list(&dir)?, dir)));
        let (names, dir) = match names {
            Ok(listed) => listed,
            Err(err) if vanished(&err) => return Ok(()),
            Err(err) => {
                self.uncaptured(text, format!("folder not listed: {err}"));
                return Ok(());
            }
        };
        let rules = Arc::new(self.rules(&dir, rel, Some(parent)));
        self.folder(&dir, rel, text, &names, rules)
    }

    /// The rules of the folder `dir` (`rel` beneath the root) on top of `parent`'s.
    fn rules(&self, dir: &Dir, rel: &RelPath, parent: Option<Arc<Rules>>) -> Rules {
        let path = self.root.join(rel.as_path());
        let exclude = match rustix::fs::statat(dir, ".git", AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Directory => {
                let info = rel.join(".git/info");
                let info = self.ws.open_dir_nofollow(&info).ok();
                info.and_then(|d| read_in(&d, "exclude"))
            }
            // A worktree's or a submodule's `.git` file names its git folder, outside the
            // project: its `info/exclude` only says what to leave out.
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
                self.git_file_exclude(dir, &path)
            }
            _ => None,
        };
        Rules {
            parent,
            ignore: matcher(&path, self.ignore_file(dir, rel, ".ignore")),
            git: matcher(&path, self.ignore_file(dir, rel, ".gitignore")),
            exclude: matcher(&path, exclude),
        }
    }

    /// The ignore file `name` of the folder `dir` (`text` beneath the root). One that is a
    /// symlink (a shared `.gitignore`) is read through the workspace's confined open, which
    /// follows links only while they stay inside the root: its lines only say what to leave out.
    fn ignore_file(&self, dir: &Dir, rel: &RelPath, name: &str) -> Option<Vec<u8>> {
        let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
            return read_in(dir, name);
        }
        let mut file = self.ws.open_read(&rel.join(name)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        Some(bytes)
    }

    /// The `info/exclude` of the git folder a `.git` file in `dir` (at `path`) names.
    fn git_file_exclude(&self, dir: &Dir, path: &Path) -> Option<Vec<u8>> {
        let text = String::from_utf8(read_in(dir, ".git")?).ok()?;
        let gitdir = path.join(text.lines().next()?.strip_prefix("gitdir: ")?);
        let common = first_line(&gitdir.join("commondir"))?;
        std::fs::read(gitdir.join(common).join("info/exclude")).ok()
    }

    /// Records the entries `names` of the folder `dir` (`rel`, `text`) under `rules`, queueing
    /// its sub-folders.
    fn folder(
        &self,
        dir: &Dir,
        rel: &RelPath,
        text: &str,
        names: &[OsString],
        rules: Arc<Rules>,
    ) -> Result<(), Error> {
        let mut folders = Vec::new();
        for name in names {
            // A name that is not UTF-8 is kept as its bytes (see `crate::names`).
            let stored = names::encode(name);
            let child = if text.is_empty() { stored } else { format!("{text}/{stored}") };
            match self.entry(dir, rel, name, &child, &rules) {
                Ok(None) => {}
                Ok(Some((e, idx, written))) => {
                    if matches!(e, Entry::Dir { .. }) {
                        folders.push((rel.join(name), child.clone(), rules.clone()));
                    }
                    let Ok(mut g) = self.out.lock() else { return Err(Error::Poisoned) };
                    if let Some(i) = idx {
                        g.0.index.insert(child.clone(), i);
                    }
                    if let (true, Entry::File { oid, .. }) = (written > 0, &e) {
                        g.0.new.push(oid.clone());
                    }
                    g.0.entries.push((child, e));
                    g.0.written += written;
                }
                // A file that vanished mid-walk is simply not in this snapshot.
                Err(Error::Io { source, .. }) if vanished(&source) => {}
                Err(err) => return Err(err),
            }
        }
        if !folders.is_empty() {
            let Ok(mut q) = self.queue.lock() else { return Err(Error::Poisoned) };
            q.folders.extend(folders);
            self.woken.notify_all();
        }
        Ok(())
    }

    /// The entry `name` of the folder `dir` (`child` beneath the root): looked at with an
    /// `lstat` relative to `dir`, read (when its stats differ from the index's) through a file
    /// opened in `dir` with no symlink followed, whose stats are then taken from the open file.
    fn entry(
        &self,
        dir: &Dir,
        rel: &RelPath,
        name: &OsStr,
        child: &str,
        rules: &Rules,
    ) -> Result<One, Error> {
        let path = self.root.join(rel.as_path()).join(name);
        // What cannot be read is named in the checkpoint's result (what went is passed over);
        // the walk goes on. Only the store's own errors fail a checkpoint.
        let lost = |e: io::Error| {
            if !vanished(&e) {
                self.uncaptured(child, format!("unreadable: {e}"));
            }
            Ok(None)
        };
        let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(e) => return lost(e.into()),
        };
        let kind = FileType::from_raw_mode(st.st_mode);
        let is_dir = kind == FileType::Directory;
        if is_dir && self.excluded.iter().any(|x| name == x.as_str()) {
            return Ok(None);
        }
        if rules.ignored(&path, is_dir) {
            return Ok(None);
        }
        if if is_dir { RUNTIME_DIRS.contains(&child) } else { runtime_file(child) } {
            return Ok(None);
        }
        if child == ".hands/.gitignore"
            && kind == FileType::RegularFile
            && read_in(dir, ".gitignore").is_some_and(|t| t == truncate::HANDS_GITIGNORE.as_bytes())
        {
            return Ok(None);
        }
        let mode = st.st_mode & 0o7777;
        match kind {
            FileType::Symlink => {
                let target = match rustix::fs::readlinkat(dir, name, Vec::new()) {
                    Ok(target) => target,
                    // No link any more (a folder swapped back since the lstat): passed over.
                    Err(Errno::INVAL) => return Ok(None),
                    Err(e) => return lost(e.into()),
                };
                let target = names::encode(OsStr::from_bytes(target.as_bytes()));
                return Ok(Some((Entry::Link { target }, None, 0)));
            }
            FileType::Directory => return Ok(Some((Entry::Dir { mode }, None, 0))),
            FileType::RegularFile => {}
            // Sockets, pipes and devices are not content: named as not captured.
            other => {
                let what = match other {
                    FileType::Socket => "socket",
                    FileType::Fifo => "fifo",
                    FileType::CharacterDevice | FileType::BlockDevice => "device",
                    _ => "not a file, link or folder",
                };
                self.uncaptured(child, what.to_string());
                return Ok(None);
            }
        }
        let stat = Stat::of(&st);
        if stat.size() > self.config.max_file_size {
            return Ok(Some((Entry::Skipped { size: stat.size() }, None, 0)));
        }
        // The index is only trusted for objects that exist: gc prunes the entries of the objects
        // it sweeps, under the lock that excludes snapshots.
        if let Some((old, oid)) = self.index.get(child)
            && *old == stat
        {
            let e = Entry::File { oid: oid.clone(), size: stat.size(), mode };
            return Ok(Some((e, Some((stat, oid.clone())), 0)));
        }
        // Opened in the folder's handle: a link swapped in since the lstat fails (ELOOP), and
        // what was opened is described by its own stats, not by the lstat's.
        let mut file = match open_in(dir, name) {
            Ok(file) => file,
            Err(e) => return lost(e),
        };
        let st = match rustix::fs::fstat(&file) {
            Ok(st) => st,
            Err(e) => return lost(e.into()),
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Ok(None);
        }
        let (stat, mode) = (Stat::of(&st), st.st_mode & 0o7777);
        if stat.size() > self.config.max_file_size {
            return Ok(Some((Entry::Skipped { size: stat.size() }, None, 0)));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(stat.size()).unwrap_or(0));
        if let Err(e) = file.read_to_end(&mut bytes) {
            return lost(e);
        }
        let oid = objects::hash(&bytes);
        let written = objects::put(self.objects_dir, &oid, &bytes)?;
        // A file that changed while it was read, or whose last change is too close to the start
        // of the walk (the file system's clock is coarse: it could change again with the same
        // stats), is kept out of the index so that the next snapshot reads it again (git's
        // "racily clean").
        let racy = stat.changed_ns() >= self.racy_from
            || rustix::fs::fstat(&file).map(|st| Stat::of(&st) != stat).unwrap_or(true);
        let idx = (!racy).then(|| (stat, oid.clone()));
        Ok(Some((Entry::File { oid, size: bytes.len() as u64, mode }, idx, written)))
    }
}

type One = Option<(Entry, Option<(Stat, String)>, u64)>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeSet;
    use std::fs;
    use std::os::unix::fs::symlink;

    /// Red-team round 4: `.hands/.devtools.json.tmp-x` (any text after the dash) survived a
    /// restore to before the turn that wrote it.
    #[test]
    fn only_the_discovery_files_own_temporary_name_is_hands_own() {
        assert!(super::runtime_file(".hands/.devtools.json.tmp-4242"));
        assert!(super::runtime_file(".bricks/.devtools.json.tmp-1"));
        for users in [
            ".hands/.devtools.json.tmp-x",
            ".hands/.devtools.json.tmp-",
            ".hands/.devtools.json.tmp-12/../x",
            ".hands/.devtools.json.tmp-12345678901",
            "sub/.hands/devtools.json",
            ".hands/devtools.json.bak",
        ] {
            assert!(!super::runtime_file(users), "{users}");
        }
    }

    use super::*;

    /// The paths the file tools' walker (the `ignore` crate, with the options snapshots always
    /// had) yields for `root`.
    fn walker_paths(root: &Path, excluded: &[&str]) -> BTreeSet<String> {
        let mut builder = ignore::WalkBuilder::new(root);
        builder
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .ignore(true)
            .parents(false)
            .require_git(false)
            .follow_links(false);
        let excluded: Vec<String> = excluded.iter().map(|s| (*s).to_string()).collect();
        builder.filter_entry(move |e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && excluded.iter().any(|x| e.file_name() == x.as_str()))
        });
        builder
            .build()
            .filter_map(Result::ok)
            .filter(|e| e.depth() > 0)
            .map(|e| e.path().strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .filter(|p| {
                // Sockets and pipes are not content: a snapshot leaves them out.
                let m = fs::symlink_metadata(root.join(p)).unwrap();
                m.is_file() || m.is_dir() || m.file_type().is_symlink()
            })
            .collect()
    }

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn the_handle_walk_leaves_out_what_the_file_tools_walker_leaves_out() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("p");
        let r = |p: &str| root.join(p);
        write(
            &r(".gitignore"),
            "\u{feff}*.log\n/build\n!keep.log\ncache/\n# comment\n\\#hash\nboth.txt\n",
        );
        write(&r(".ignore"), "secret.txt\n!wanted.tmp\n!both.txt\n");
        write(&r(".git/info/exclude"), "excluded-by-info\n*.tmp\n");
        write(&r(".git/HEAD"), "ref: refs/heads/main\n");
        for f in [
            "a.log",
            "keep.log",
            "build/x",
            "src/build/y",
            "cache/c",
            "src/cache/d",
            "#hash",
            "secret.txt",
            "src/secret.txt",
            "excluded-by-info",
            "src/excluded-by-info",
            "w.tmp",
            "wanted.tmp",
            "both.txt",
            "src/main.rs",
            ".hidden/h",
            "node_modules/m/index.js",
            "src/node_modules/n",
            ".github/ci.yml",
            "sub/.gitignore",
            "sub/a.log",
            "sub/b.txt",
            "sub/deep/b.txt",
            "sub/deep/c.txt",
            "sub/.ignore",
            "sub/z.rs",
            "other/.gitignore",
            "other/o.md",
            "vendor/lib/.git",
            "vendor/lib/l.rs",
            "vendor/lib/l.tmp",
        ] {
            write(&r(f), "x\n");
        }
        write(&r("sub/.gitignore"), "!a.log\nb.txt\n!deep/b.txt\n");
        write(&r("sub/.ignore"), "z.rs\n");
        // A shared `.gitignore` by symlink inside the root applies; one leading outside does not.
        write(&r("common/rules"), "s.bin\n");
        write(&r("linked/s.bin"), "x\n");
        symlink("../common/rules", r("linked/.gitignore")).unwrap();
        write(&tmp.path().join("outside-rules"), "o.bin\n");
        write(&r("linked-out/o.bin"), "x\n");
        symlink(tmp.path().join("outside-rules"), r("linked-out/.gitignore")).unwrap();
        write(&r("other/.gitignore"), "[invalid\no.md\n");
        fs::write(r("vendor/lib/.git"), "gitdir: ../../.git/modules/lib\n").unwrap();
        // A worktree: its `.git` file names a git folder outside, whose common folder's
        // `info/exclude` applies.
        let git = tmp.path().join("main.git");
        write(&git.join("worktrees/w/commondir"), "../..\n");
        write(&git.join("info/exclude"), "wt-excluded\n");
        write(&r("wt/.git"), &format!("gitdir: {}\n", git.join("worktrees/w").display()));
        write(&r("wt/wt-excluded"), "x\n");
        write(&r("wt/wt-kept"), "x\n");
        symlink("src", r("link-to-src")).unwrap();
        symlink("nowhere", r("a-dangling.log")).unwrap();
        symlink("/etc", r("src/etc")).unwrap();
        std::os::unix::net::UnixListener::bind(r("sock")).unwrap();
        let objects = tmp.path().join("objects");
        let walked = walk(&root, &Config::default(), &objects, &Index::new()).unwrap();
        let ours: BTreeSet<String> = walked.entries.iter().map(|(p, _)| p.clone()).collect();
        let mut theirs = walker_paths(&root, &["node_modules", ".git", ".hg", ".svn", ".jj"]);
        // The one difference: the file tools' walker follows an ignore file's link outside.
        assert!(theirs.insert("linked-out/o.bin".into()));
        assert_eq!(ours, theirs);
        for (p, e) in &walked.entries {
            let m = fs::symlink_metadata(root.join(p)).unwrap();
            match e {
                Entry::Link { target } => {
                    assert_eq!(fs::read_link(root.join(p)).unwrap().to_str(), Some(&target[..]));
                }
                Entry::Dir { .. } => assert!(m.is_dir() && !m.file_type().is_symlink(), "{p}"),
                Entry::File { size, .. } => assert_eq!(*size, m.len(), "{p}"),
                Entry::Skipped { .. } => panic!("{p}"),
            }
        }
        assert!(ours.contains("keep.log") && ours.contains("sub/a.log"), "{ours:?}");
        assert!(!ours.contains("sub/b.txt") && ours.contains("sub/deep/b.txt"), "{ours:?}");
        assert!(!ours.contains("w.tmp") && ours.contains("wanted.tmp"), "{ours:?}");
        assert!(!ours.contains("linked/s.bin") && ours.contains("linked-out/o.bin"), "{ours:?}");
        assert!(ours.contains("both.txt"), ".ignore wins over .gitignore: {ours:?}");
        assert!(!ours.contains("wt/wt-excluded") && ours.contains("wt/wt-kept"), "{ours:?}");
        assert!(!ours.iter().any(|p| p.starts_with("link-to-src/") || p.starts_with("src/etc/")));
    }
}
