//! Trees: one object per folder, as git stores them, so that a checkpoint costs the folders that
//! changed, not the whole tree. A tree is the JSON map of a folder's names to their nodes (a
//! file's object, a link's target, a skipped file's size, a sub-folder's tree), compressed and
//! named by its sha256 like every object: an unchanged folder has the same id in every
//! checkpoint and is stored once. Comparing two trees skips every sub-folder whose id is equal.
//!
//! Names and link targets are in their stored form ([`crate::names`]): UTF-8 ones as they are,
//! others as a NUL and their bytes in hex. That form is the format's only version mark: trees
//! written before it (UTF-8 names only, the others were left out) read and restore unchanged, and
//! a tree of UTF-8 names has the same id as before.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::manifest::Entry;
use crate::objects;

/// One name of a folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Node {
    File { oid: String, size: u64, mode: u32 },
    Link { target: String },
    Skipped { size: u64 },
    Dir { oid: String, mode: u32 },
}

/// A folder: name → node.
pub(crate) type Tree = BTreeMap<String, Node>;

/// One path that differs between two trees: (path, before, after).
pub(crate) type Delta = (String, Option<Entry>, Option<Entry>);

fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

/// Stores the trees of `entries` (paths with `/`, folders included); the root tree's id and the
/// compressed bytes written. The ids of the trees that were not in the store go to `new`.
pub(crate) fn build(
    objects_dir: &std::path::Path,
    entries: Vec<(String, Entry)>,
    new: &mut Vec<String>,
) -> Result<(String, u64), Error> {
    let mut dirs: HashMap<String, Tree> = HashMap::new();
    let mut modes: HashMap<String, u32> = HashMap::new();
    dirs.insert(String::new(), Tree::new());
    for (path, entry) in entries {
        let node = match entry {
            Entry::Dir { mode } => {
                dirs.entry(path.clone()).or_default();
                modes.insert(path, mode);
                continue;
            }
            Entry::File { oid, size, mode } => Node::File { oid, size, mode },
            Entry::Link { target } => Node::Link { target },
            Entry::Skipped { size } => Node::Skipped { size },
        };
        let (dir, name) = split(&path);
        dirs.entry(dir.to_string()).or_default().insert(name.to_string(), node);
    }
    // Every folder's parents exist (a walk yields them; this keeps a partial list whole).
    let keys: Vec<String> = dirs.keys().cloned().collect();
    for key in keys {
        let mut dir = key.as_str();
        while !dir.is_empty() {
            dir = split(dir).0;
            dirs.entry(dir.to_string()).or_default();
        }
    }
    let mut order: Vec<String> = dirs.keys().filter(|k| !k.is_empty()).cloned().collect();
    order.sort_by_key(|k| std::cmp::Reverse(k.matches('/').count()));
    let mut written = 0;
    for key in order {
        let tree = dirs.remove(&key).unwrap_or_default();
        let (oid, w) = put(objects_dir, &tree)?;
        written += w;
        if w > 0 {
            new.push(oid.clone());
        }
        let mode = modes.get(&key).copied().unwrap_or(0o755);
        let (dir, name) = split(&key);
        dirs.entry(dir.to_string()).or_default().insert(name.to_string(), Node::Dir { oid, mode });
    }
    let root = dirs.remove("").unwrap_or_default();
    let (oid, w) = put(objects_dir, &root)?;
    if w > 0 {
        new.push(oid.clone());
    }
    Ok((oid, written + w))
}

fn put(objects_dir: &std::path::Path, tree: &Tree) -> Result<(String, u64), Error> {
    let bytes = serde_json::to_vec(tree).unwrap_or_default();
    let oid = objects::hash(&bytes);
    let written = objects::put(objects_dir, &oid, &bytes)?;
    Ok((oid, written))
}

/// The tree `oid`.
pub(crate) fn read(objects_dir: &std::path::Path, oid: &str) -> Result<Tree, Error> {
    let bytes = objects::get(objects_dir, oid)?;
    serde_json::from_slice(&bytes).map_err(|_| Error::BadObject(oid.to_string()))
}

fn entry(node: &Node) -> Entry {
    match node {
        Node::File { oid, size, mode } => {
            Entry::File { oid: oid.clone(), size: *size, mode: *mode }
        }
        Node::Link { target } => Entry::Link { target: target.clone() },
        Node::Skipped { size } => Entry::Skipped { size: *size },
        Node::Dir { mode, .. } => Entry::Dir { mode: *mode },
    }
}

/// Every path of the tree `oid` under `prefix`, folders included.
pub(crate) fn flatten(
    objects_dir: &std::path::Path,
    oid: &str,
    prefix: &str,
    out: &mut BTreeMap<String, Entry>,
) -> Result<(), Error> {
    for (name, node) in read(objects_dir, oid)? {
        let path = join(prefix, &name);
        if let Node::Dir { oid, .. } = &node {
            flatten(objects_dir, oid, &path, out)?;
        }
        out.insert(path, entry(&node));
    }
    Ok(())
}

/// The paths that differ from tree `old` (none: an empty tree) to tree `new`, folders included,
/// in tree order (a folder, then everything beneath it). Sub-folders with equal ids are not read.
pub(crate) fn changes(
    objects_dir: &std::path::Path,
    old: Option<&str>,
    new: &str,
) -> Result<Vec<Delta>, Error> {
    let mut out = Vec::new();
    compare(objects_dir, old, Some(new), "", &mut out)?;
    // `/` sorts first, so that a folder's paths follow it directly (`a/b`, `a/b/c`, `a/b-x`).
    // Names compare as their bytes (see `crate::names`).
    let key = |p: &str| {
        let raw = crate::names::bytes(p).unwrap_or_else(|| p.as_bytes().to_vec());
        raw.into_iter().map(|c| if c == b'/' { 0 } else { c }).collect::<Vec<u8>>()
    };
    out.sort_by_cached_key(|d| key(&d.0));
    Ok(out)
}

fn compare(
    objects_dir: &std::path::Path,
    old: Option<&str>,
    new: Option<&str>,
    prefix: &str,
    out: &mut Vec<Delta>,
) -> Result<(), Error> {
    if old == new {
        return Ok(());
    }
    let a = old.map(|o| read(objects_dir, o)).transpose()?.unwrap_or_default();
    let b = new.map(|o| read(objects_dir, o)).transpose()?.unwrap_or_default();
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for name in names {
        let (x, y) = (a.get(name), b.get(name));
        if x == y {
            continue;
        }
        let path = join(prefix, name);
        let sub = |n: Option<&Node>| match n {
            Some(Node::Dir { oid, .. }) => Some(oid.clone()),
            _ => None,
        };
        let (dx, dy) = (sub(x), sub(y));
        // Two folders differ as entries only by their modes; their contents are compared below.
        if x.map(entry) != y.map(entry) {
            out.push((path.clone(), x.map(entry), y.map(entry)));
        }
        if dx.is_some() || dy.is_some() {
            compare(objects_dir, dx.as_deref(), dy.as_deref(), &path, out)?;
        }
    }
    Ok(())
}
