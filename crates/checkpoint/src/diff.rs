//! Comparing two checkpoints: which paths were added, modified, deleted or changed mode, with
//! line counts and a unified diff for text files (via `similar`).

use serde::Serialize;
use similar::TextDiff;

use crate::error::Error;
use crate::manifest::{Checkpoint, Entry};
use crate::store::Store;

/// Text diffs of files above this size are not computed (counts are still given as 0).
const MAX_DIFF_BYTES: u64 = 2 * 1024 * 1024;

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New in the later checkpoint.
    Added,
    /// Content (or link target) changed.
    Modified,
    /// Gone in the later checkpoint.
    Deleted,
    /// Only the executable bit changed.
    Mode,
}

/// One changed path.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// Relative path.
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Lines added (text files).
    pub added: usize,
    /// Lines removed (text files).
    pub removed: usize,
    /// Whether either side is binary (no line counts nor diff then).
    pub binary: bool,
    /// Unified diff for text files.
    pub unified: Option<String>,
}

/// Totals of a diff, for the one-line summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Paths changed.
    pub files: usize,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

impl Summary {
    /// Adds up `changes`.
    pub fn of(changes: &[Change]) -> Self {
        Self {
            files: changes.len(),
            added: changes.iter().map(|c| c.added).sum(),
            removed: changes.iter().map(|c| c.removed).sum(),
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.files == 1 { "" } else { "s" };
        write!(f, "{} file{s} changed, +{} \u{2212}{}", self.files, self.added, self.removed)
    }
}

/// The changes from `old` to `new`.
pub fn diff(store: &Store, old: &Checkpoint, new: &Checkpoint) -> Result<Vec<Change>, Error> {
    let mut out = Vec::new();
    let paths: std::collections::BTreeSet<&String> =
        old.entries.keys().chain(new.entries.keys()).collect();
    for path in paths {
        let (a, b) = (old.entries.get(path), new.entries.get(path));
        let kind = match (a, b) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Deleted,
            (Some(a), Some(b)) if a == b => continue,
            (Some(Entry::File { oid: x, .. }), Some(Entry::File { oid: y, .. })) if x == y => {
                ChangeKind::Mode
            }
            _ => ChangeKind::Modified,
        };
        let (ta, tb) = (text(store, a)?, text(store, b)?);
        let mut change =
            Change { path: path.clone(), kind, added: 0, removed: 0, binary: false, unified: None };
        match (ta, tb) {
            (Some(x), Some(y)) if kind != ChangeKind::Mode => {
                let d = TextDiff::from_lines(&x, &y);
                for op in d.ops() {
                    for c in d.iter_changes(op) {
                        match c.tag() {
                            similar::ChangeTag::Insert => change.added += 1,
                            similar::ChangeTag::Delete => change.removed += 1,
                            similar::ChangeTag::Equal => {}
                        }
                    }
                }
                let (ha, hb) = (
                    if a.is_some() { format!("a/{path}") } else { "/dev/null".into() },
                    if b.is_some() { format!("b/{path}") } else { "/dev/null".into() },
                );
                change.unified =
                    Some(d.unified_diff().context_radius(3).header(&ha, &hb).to_string());
            }
            (Some(_), Some(_)) => {}
            _ => change.binary = true,
        }
        out.push(change);
    }
    Ok(out)
}

/// The text of an entry: "" for an absent one, the target for a link, None for binary or too big.
fn text(store: &Store, e: Option<&Entry>) -> Result<Option<String>, Error> {
    match e {
        None => Ok(Some(String::new())),
        Some(Entry::Link { target }) => Ok(Some(format!("{target}\n"))),
        Some(Entry::Skipped { .. }) => Ok(None),
        Some(Entry::File { size, .. }) if *size > MAX_DIFF_BYTES => Ok(None),
        Some(Entry::File { oid, .. }) => {
            let bytes = store.object(oid)?;
            if bytes.contains(&0) {
                return Ok(None);
            }
            Ok(String::from_utf8(bytes).ok())
        }
    }
}
