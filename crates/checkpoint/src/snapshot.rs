//! Walking the project into a manifest, reading only the files whose stats changed.
//!
//! The walk uses the same rules as the file tools: `.gitignore`, `.ignore`, hidden files included,
//! and the excluded folders (`.git` always) never entered. A file whose (size, mtime, inode, mode)
//! equals the index entry keeps its object id without being read, as git's index does.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::sync::Mutex;

use ignore::{WalkBuilder, WalkState};
use serde::{Deserialize, Serialize};

use crate::error::{Error, IoContext};
use crate::manifest::Entry;
use crate::objects;

/// What a snapshot takes.
#[derive(Debug, Clone)]
pub struct Config {
    /// Files larger than this are recorded as skipped (default 50 MB).
    pub max_file_size: u64,
    /// Folder names never entered (`.git` is always added).
    pub excluded_dirs: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_file_size: 50 * 1024 * 1024,
            excluded_dirs: vec!["node_modules".into(), ".git".into(), "dist".into()],
        }
    }
}

/// The stats that decide whether a file must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stat {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    mode: u32,
}

impl Stat {
    fn of(meta: &fs::Metadata) -> Self {
        Self {
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }
}

/// The index: relative path → (stats, object id).
pub(crate) type Index = HashMap<String, (Stat, String)>;

/// A walk's result: the entries, the new index and the compressed bytes written.
pub(crate) type Walked = (Vec<(String, Entry)>, Index, u64);

/// Walks `root`, storing new contents in `objects`; returns the entries, the new index and the
/// compressed bytes written.
pub(crate) fn walk(
    root: &Path,
    config: &Config,
    objects_dir: &Path,
    index: &Index,
) -> Result<Walked, Error> {
    let mut excluded = config.excluded_dirs.clone();
    if !excluded.iter().any(|d| d == ".git") {
        excluded.push(".git".into());
    }
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
    let out: Mutex<(Walked, Option<Error>)> = Mutex::new(((Vec::new(), Index::new(), 0), None));
    builder.build_parallel().run(|| {
        Box::new(|res| {
            let entry = match res {
                Ok(e) => e,
                Err(_) => return WalkState::Continue,
            };
            if entry.depth() == 0 {
                return WalkState::Continue;
            }
            let Ok(rel) = entry.path().strip_prefix(root) else { return WalkState::Continue };
            let Some(rel) = rel.to_str().map(str::to_string) else { return WalkState::Continue };
            match one(entry.path(), &rel, config, objects_dir, index) {
                Ok(None) => {}
                Ok(Some((e, idx, written))) => {
                    if let Ok(mut g) = out.lock() {
                        if let Some(i) = idx {
                            g.0.1.insert(rel.clone(), i);
                        }
                        g.0.0.push((rel, e));
                        g.0.2 += written;
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
    if let Some(err) = err {
        return Err(err);
    }
    Ok(walked)
}

type One = Option<(Entry, Option<(Stat, String)>, u64)>;

fn one(
    path: &Path,
    rel: &str,
    config: &Config,
    objects_dir: &Path,
    index: &Index,
) -> Result<One, Error> {
    let meta = fs::symlink_metadata(path).at(path)?;
    let ft = meta.file_type();
    if ft.is_symlink() {
        let target = fs::read_link(path).at(path)?;
        return Ok(Some((Entry::Link { target: target.to_string_lossy().into_owned() }, None, 0)));
    }
    if !ft.is_file() {
        return Ok(None);
    }
    let exec = meta.permissions().mode() & 0o111 != 0;
    if meta.len() > config.max_file_size {
        return Ok(Some((Entry::Skipped { size: meta.len() }, None, 0)));
    }
    let stat = Stat::of(&meta);
    if let Some((old, oid)) = index.get(rel)
        && *old == stat
        && objects::path(objects_dir, oid).exists()
    {
        let e = Entry::File { oid: oid.clone(), size: stat.size, exec };
        return Ok(Some((e, Some((stat, oid.clone())), 0)));
    }
    let bytes = fs::read(path).at(path)?;
    let oid = objects::hash(&bytes);
    let written = objects::put(objects_dir, &oid, &bytes)?;
    // A file modified within the mtime granularity could change again unseen: keep it out of the
    // index so the next snapshot reads it (git's "racily clean" rule).
    let racy = fs::symlink_metadata(path).map(|m| Stat::of(&m) != stat).unwrap_or(true);
    let idx = (!racy).then(|| (stat, oid.clone()));
    Ok(Some((Entry::File { oid, size: bytes.len() as u64, exec }, idx, written)))
}
