//! Records of the first store format (one JSON manifest with every path, executable bits only),
//! rewritten in the current one when first read: their objects are the same, their trees are
//! built from the manifest, the kind and turn come from the label.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::Error;
use crate::manifest::{Checkpoint, Entry, Kind, Summary};
use crate::objects::write_atomic;
use crate::tree;

#[derive(Deserialize)]
struct Old {
    id: u64,
    session: String,
    label: String,
    created: u64,
    entries: BTreeMap<String, OldEntry>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OldEntry {
    File { oid: String, size: u64, exec: bool },
    Link { target: String },
    Skipped { size: u64 },
}

/// The checkpoint of an old record (rewritten in place), or `None` when `bytes` is not one.
pub(crate) fn migrate(
    objects: &Path,
    record: &Path,
    bytes: &[u8],
) -> Result<Option<Checkpoint>, Error> {
    let Ok(old) = serde_json::from_slice::<Old>(bytes) else { return Ok(None) };
    let entries = old
        .entries
        .into_iter()
        .map(|(path, e)| {
            let e = match e {
                OldEntry::File { oid, size, exec } => {
                    Entry::File { oid, size, mode: if exec { 0o755 } else { 0o644 } }
                }
                OldEntry::Link { target } => Entry::Link { target },
                OldEntry::Skipped { size } => Entry::Skipped { size },
            };
            (path, e)
        })
        .collect();
    let (root, _) = tree::build(objects, entries, &mut Vec::new())?;
    let (kind, turn) = match old.label.split_once(" turn ") {
        Some(("before", turn)) => (Kind::TurnStart, Some(turn.to_string())),
        Some(("after", turn)) => (Kind::TurnEnd, Some(turn.to_string())),
        _ => (Kind::Restore, None),
    };
    let cp = Checkpoint {
        id: old.id,
        session: old.session,
        turn,
        kind,
        created_ms: old.created.saturating_mul(1000),
        tree: root,
        changes: Summary::default(),
        messages: None,
        restoring: None,
        rewound: None,
        uncaptured: Vec::new(),
    };
    write_atomic(record, &serde_json::to_vec(&cp).unwrap_or_default())?;
    Ok(Some(cp))
}
