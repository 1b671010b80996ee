//! Comparing two checkpoints: which paths were added, modified, deleted or changed mode, with
//! line counts and a unified diff for text files (via `similar`). Only the folders whose trees
//! differ are read (see [`crate::tree`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use similar::{DiffTag, TextDiff};

use crate::error::Error;
use crate::manifest::{Checkpoint, Entry, Summary};
use crate::store::Store;
use crate::tree::{self, Delta};

/// Text diffs of files above this size are not computed (counts are 0, the file is `binary`).
const MAX_DIFF_BYTES: u64 = 2 * 1024 * 1024;

/// A line diff that takes longer than this gives an approximate (still valid) result.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// New in the later checkpoint.
    Added,
    /// Content (or link target) changed.
    Modified,
    /// Gone in the later checkpoint.
    Deleted,
    /// Only the permission bits changed.
    Mode,
}

/// One changed path. An empty folder that appeared or went is listed with a trailing `/`; a
/// name that is not UTF-8 is shown with its other bytes as `\xNN` (see [`crate::names`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Relative path.
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Lines added (text files).
    pub added: usize,
    /// Lines removed (text files).
    pub removed: usize,
    /// Whether either side is binary or too large to compare (no line counts nor diff then).
    pub binary: bool,
    /// Unified diff for text files (none for binary ones, files above the size cap, folders and
    /// mode changes).
    pub unified: Option<String>,
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

/// The changes from `old` (none: nothing before) to `new`, with unified diffs.
pub fn diff(
    store: &Store,
    old: Option<&Checkpoint>,
    new: &Checkpoint,
) -> Result<Vec<Change>, Error> {
    changes(store, old.map(|c| c.tree.as_str()), &new.tree, true)
}

/// The totals of the changes from tree `old` to tree `new` (no unified diffs made).
pub(crate) fn summary(store: &Store, old: Option<&str>, new: &str) -> Result<Summary, Error> {
    Ok(Summary::of(&changes(store, old, new, false)?))
}

fn changes(
    store: &Store,
    old: Option<&str>,
    new: &str,
    unified: bool,
) -> Result<Vec<Change>, Error> {
    let deltas = tree::changes(&store.objects(), old, new)?;
    let mut out = Vec::new();
    for (i, (path, a, b)) in deltas.iter().enumerate() {
        let kind = match (a, b) {
            (Some(Entry::Dir { .. }), Some(Entry::Dir { .. })) => ChangeKind::Mode,
            (None, Some(Entry::Dir { .. })) | (Some(Entry::Dir { .. }), None) => {
                // A folder is listed only when it is empty: otherwise its files say it all.
                if !lonely(&deltas, i) {
                    continue;
                }
                if b.is_some() { ChangeKind::Added } else { ChangeKind::Deleted }
            }
            (None | Some(Entry::Dir { .. }), Some(_)) => ChangeKind::Added,
            (Some(_), None | Some(Entry::Dir { .. })) => ChangeKind::Deleted,
            (Some(Entry::File { oid: x, .. }), Some(Entry::File { oid: y, .. })) if x == y => {
                ChangeKind::Mode
            }
            (Some(_), Some(_)) => ChangeKind::Modified,
            (None, None) => continue,
        };
        let is_dir = |e: &Option<Entry>| matches!(e, Some(Entry::Dir { .. }));
        let folder = (is_dir(a) || a.is_none()) && (is_dir(b) || b.is_none());
        // Names that are not UTF-8 are shown escaped (`caf\xe9.txt`, see `crate::names`).
        let path = &crate::names::escaped(path);
        let shown = if folder { format!("{path}/") } else { path.clone() };
        let mut change =
            Change { path: shown, kind, added: 0, removed: 0, binary: false, unified: None };
        if !folder && kind != ChangeKind::Mode {
            let side = |e: &Option<Entry>| if is_dir(e) { None } else { e.clone() };
            let (a, b) = (side(a), side(b));
            match (text(store, a.as_ref())?, text(store, b.as_ref())?) {
                (Some(x), Some(y)) => {
                    let d = TextDiff::configure().timeout(DIFF_TIMEOUT).diff_lines(&x, &y);
                    for op in d.ops() {
                        let (tag, old, new) = op.as_tag_tuple();
                        match tag {
                            DiffTag::Equal => {}
                            DiffTag::Insert => change.added += new.len(),
                            DiffTag::Delete => change.removed += old.len(),
                            DiffTag::Replace => {
                                change.added += new.len();
                                change.removed += old.len();
                            }
                        }
                    }
                    if unified {
                        let ha = if a.is_some() { format!("a/{path}") } else { "/dev/null".into() };
                        let hb = if b.is_some() { format!("b/{path}") } else { "/dev/null".into() };
                        change.unified =
                            Some(d.unified_diff().context_radius(3).header(&ha, &hb).to_string());
                    }
                }
                _ => change.binary = !is_skipped(&a) && !is_skipped(&b),
            }
        }
        out.push(change);
    }
    Ok(out)
}

fn is_skipped(e: &Option<Entry>) -> bool {
    matches!(e, Some(Entry::Skipped { .. }))
}

/// Whether the folder at `deltas[i]` has nothing changed beneath it on the side where it exists.
fn lonely(deltas: &[Delta], i: usize) -> bool {
    let (path, a, _) = &deltas[i];
    let prefix = format!("{path}/");
    let added = a.is_none();
    !deltas[i + 1..]
        .iter()
        .take_while(|(p, ..)| p.starts_with(&prefix))
        .any(|(_, x, y)| if added { y.is_some() } else { x.is_some() })
}

/// The text of an entry: "" for an absent one, the target for a link, None for binary, skipped
/// or too big.
fn text(store: &Store, e: Option<&Entry>) -> Result<Option<String>, Error> {
    match e {
        None | Some(Entry::Dir { .. }) => Ok(Some(String::new())),
        Some(Entry::Link { target }) => Ok(Some(format!("{}\n", crate::names::escaped(target)))),
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
