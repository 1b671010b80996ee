//! A checkpoint's manifest: the tree as a sorted map from relative path to entry.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One path of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// A regular file: its object id (sha256 of the content), size and executable bit.
    File {
        /// sha256 of the content, hex.
        oid: String,
        /// Size in bytes.
        size: u64,
        /// Whether any execute bit is set.
        exec: bool,
    },
    /// A symbolic link, recorded as its target (never followed).
    Link {
        /// The link's target as written.
        target: String,
    },
    /// A file above the size cap: recorded, not stored, and left alone by restores.
    Skipped {
        /// Size in bytes.
        size: u64,
    },
}

/// A checkpoint: when, for which session and turn, and the tree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its number, increasing per project.
    pub id: u64,
    /// The session it belongs to.
    pub session: String,
    /// The turn of that session.
    pub turn: u64,
    /// A short label ("before turn 3", "after turn 3", "before restore of 7").
    pub label: String,
    /// Seconds since the Unix epoch.
    pub created: u64,
    /// The tree, by relative path with `/` separators.
    pub entries: BTreeMap<String, Entry>,
}

impl Checkpoint {
    /// A hash of the whole tree (paths, kinds, contents and modes), to compare trees cheaply.
    pub fn tree_hash(&self) -> String {
        let json = serde_json::to_vec(&self.entries).unwrap_or_default();
        crate::objects::hash(&json)
    }
}
