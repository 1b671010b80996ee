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

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};

use crate::error::{Error, IoContext};
use crate::index::{Index, Stat};
use crate::manifest::Entry;
use crate::objects;

/// Folders of version control systems: never captured, never touched.
pub(crate) const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

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
}

/// Walks `root`, storing new contents in `objects_dir`.
pub(crate) fn walk(
    root: &Path,
    config: &Config,
    objects_dir: &Path,
    index: &Index,
) -> Result<Walked, Error> {
    let racy_from = now_ns() - RACY_WINDOW_NS;
    let mut excluded = config.excluded_dirs.clone();
    excluded.extend(VCS_DIRS.iter().map(|d| (*d).to_string()));
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .threads(2);
    builder.filter_entry(move |e| {
        !(e.file_type().is_some_and(|t| t.is_dir())
            && excluded.iter().any(|x| e.file_name() == x.as_str()))
    });
    let out = Mutex::new((Walked { entries: Vec::new(), index: Index::new(), written: 0 }, None));
    builder.build_parallel().run(|| {
        Box::new(|res| {
            let Ok(entry) = res else { return WalkState::Continue };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Ok(rel) = entry.path().strip_prefix(root) else { return WalkState::Continue };
            // A name that is not UTF-8 cannot be recorded faithfully: it is left out.
            let Some(rel) = rel.to_str().map(str::to_string) else { return WalkState::Continue };
            match one(entry.path(), &rel, config, objects_dir, index, racy_from) {
                Ok(None) => {}
                Ok(Some((e, idx, written))) => {
                    if let Ok(mut g) = out.lock() {
                        if let Some(i) = idx {
                            g.0.index.insert(rel.clone(), i);
                        }
                        g.0.entries.push((rel, e));
                        g.0.written += written;
                    }
                }
                // A file that vanished mid-walk is simply not in this snapshot.
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    if let Ok(mut g) = out.lock() {
                        g.1 = Some(err);
                    }
                    return WalkState::Quit;
                }
            }
            WalkState::Continue
        })
    });
    // A poisoned lock means a visitor panicked: the walk's result cannot be trusted.
    let (walked, err) = out.into_inner().map_err(|_| Error::Poisoned)?;
    match err {
        Some(err) => Err(err),
        None => Ok(walked),
    }
}

type One = Option<(Entry, Option<(Stat, String)>, u64)>;

fn one(
    path: &Path,
    rel: &str,
    config: &Config,
    objects_dir: &Path,
    index: &Index,
    racy_from: i128,
) -> Result<One, Error> {
    let meta = fs::symlink_metadata(path).at(path)?;
    let ft = meta.file_type();
    let mode = meta.mode() & 0o7777;
    if ft.is_symlink() {
        let target = fs::read_link(path).at(path)?;
        let Some(target) = target.to_str() else { return Ok(None) };
        return Ok(Some((Entry::Link { target: target.to_string() }, None, 0)));
    }
    if ft.is_dir() {
        return Ok(Some((Entry::Dir { mode }, None, 0)));
    }
    if !ft.is_file() {
        // Sockets, pipes and devices are not content.
        return Ok(None);
    }
    if meta.len() > config.max_file_size {
        return Ok(Some((Entry::Skipped { size: meta.len() }, None, 0)));
    }
    let stat = Stat::of(&meta);
    // The index is only trusted for objects that exist: gc prunes the entries of the objects it
    // sweeps, under the lock that excludes snapshots.
    if let Some((old, oid)) = index.get(rel)
        && *old == stat
    {
        let e = Entry::File { oid: oid.clone(), size: meta.len(), mode };
        return Ok(Some((e, Some((stat, oid.clone())), 0)));
    }
    let bytes = fs::read(path).at(path)?;
    let oid = objects::hash(&bytes);
    let written = objects::put(objects_dir, &oid, &bytes)?;
    // A file that changed while it was read, or whose last change is too close to the start of
    // the walk (the file system's clock is coarse: it could change again with the same stats),
    // is kept out of the index so that the next snapshot reads it again (git's "racily clean").
    let racy = stat.changed_ns() >= racy_from
        || fs::symlink_metadata(path).map(|m| Stat::of(&m) != stat).unwrap_or(true);
    let idx = (!racy).then(|| (stat, oid.clone()));
    Ok(Some((Entry::File { oid, size: bytes.len() as u64, mode }, idx, written)))
}
