//! A checkpoint's record: when, for which session, turn and conversation, what kind, the root of
//! its tree, and what changed since the checkpoint before it. The tree itself is in the object
//! store (see [`crate::tree`]); [`Entry`] is one path of it as callers see it.

use serde::{Deserialize, Serialize};

/// One path of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    /// A regular file: its object id (sha256 of the content), size and permission bits.
    File {
        /// sha256 of the content, hex.
        oid: String,
        /// Size in bytes.
        size: u64,
        /// Permission bits (`0o644`, `0o755`, `0o600`, …; setuid, setgid and sticky included).
        mode: u32,
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
    /// A folder (so that empty ones are captured too).
    Dir {
        /// Permission bits.
        mode: u32,
    },
}

/// What a checkpoint was taken for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Before a turn's first change.
    TurnStart,
    /// At the end of a turn that changed something.
    TurnEnd,
    /// Just before a restore: restoring it undoes the restore.
    Restore,
}

impl Kind {
    /// `turn_start`, `turn_end`, `restore`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TurnStart => "turn_start",
            Self::TurnEnd => "turn_end",
            Self::Restore => "restore",
        }
    }
}

/// Messages that a conversation rewind removed, kept so that the rewind can be undone: the
/// stored messages from position `from` (0-based) on, as one object (a JSON list).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewound {
    /// How many messages were kept.
    pub from: u64,
    /// The object holding the removed ones.
    pub object: String,
}

/// What a snapshot is of (everything of its record but the tree and the numbers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// The session it belongs to.
    pub session: String,
    /// The turn (none for a restore's checkpoint).
    pub turn: Option<String>,
    /// Why it is taken.
    pub kind: Kind,
    /// How many messages the session's conversation had then (the state a conversation restore
    /// goes back to).
    pub messages: Option<u64>,
    /// For a restore's checkpoint: messages that the restore removes from the conversation.
    pub rewound: Option<Rewound>,
}

impl Meta {
    /// A checkpoint of `session` of `kind`, with no turn and no conversation.
    pub fn new(session: &str, kind: Kind) -> Self {
        Self { session: session.to_string(), turn: None, kind, messages: None, rewound: None }
    }
}

/// A checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Its number, increasing per project.
    pub id: u64,
    /// The session it belongs to.
    pub session: String,
    /// The turn of that session (none for a restore's checkpoint).
    pub turn: Option<String>,
    /// Why it was taken.
    pub kind: Kind,
    /// Milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// The root tree's object id: equal trees (every path, byte and mode) have equal ids.
    pub tree: String,
    /// What changed since the checkpoint before it (of any session of the project); zero for
    /// the first one.
    pub changes: Summary,
    /// How many messages the session's conversation had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<u64>,
    /// For a restore's checkpoint: the checkpoint that was restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restoring: Option<u64>,
    /// For a restore's checkpoint: the messages the restore removed from the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound: Option<Rewound>,
    /// What the walk found but could not capture (a socket, a FIFO, a device, a file or folder
    /// that could not be read): a restore of this checkpoint cannot bring those back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncaptured: Vec<Uncaptured>,
}

/// A path a checkpoint could not capture, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Uncaptured {
    /// The path, relative to the project root, bytes that are not UTF-8 shown as U+FFFD.
    pub path: String,
    /// The same path with bytes that are not UTF-8 as `\xNN` (equal to `path` for UTF-8 names).
    pub escaped: String,
    /// Why: `socket`, `fifo`, `device`, `unreadable: <error>`, `folder not listed: <error>`.
    pub reason: String,
}

impl Uncaptured {
    /// The path stored as `stored` (see [`crate::names`]), not captured for `reason`.
    pub(crate) fn new(stored: &str, reason: String) -> Self {
        Self { path: crate::names::lossy(stored), escaped: crate::names::escaped(stored), reason }
    }
}

impl std::fmt::Display for Uncaptured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path == self.escaped {
            write!(f, "{} ({})", self.path, self.reason)
        } else {
            write!(f, "{} [{}] ({})", self.path, self.escaped, self.reason)
        }
    }
}

impl Checkpoint {
    /// A hash of the whole tree (paths, kinds, contents and modes), to compare trees cheaply.
    pub fn tree_hash(&self) -> &str {
        &self.tree
    }

    /// When it was taken, as RFC 3339 in UTC (`2025-01-31T12:00:00.000Z`).
    pub fn created_at(&self) -> String {
        crate::time::rfc3339(self.created_ms)
    }
}

/// Totals of a diff, for the one-line summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Paths changed.
    pub files: usize,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = if self.files == 1 { "" } else { "s" };
        write!(f, "{} file{s} changed, +{} \u{2212}{}", self.files, self.added, self.removed)
    }
}
