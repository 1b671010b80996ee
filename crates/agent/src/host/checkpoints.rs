//! A session's checkpoints through the host: listed with their change counts, compared with the
//! checkpoint before them, restored — the code, the conversation or both.
//!
//! A conversation restore makes the session's stored messages what they were when the
//! checkpoint was taken (each checkpoint records how many there were). Messages a restore
//! removes are kept in the checkpoint store, named by the checkpoint taken just before it
//! ([`Rewound`]), so that restoring that checkpoint undoes the rewind: the conversation of any
//! checkpoint is rebuilt from the messages now by undoing, newest first, every rewind since it.

use std::sync::Arc;

use hands_checkpoint::{ChangeKind, Checkpoint, Kind, Meta, Rewound, Store, Uncaptured};
use hands_store::MessageRecord;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::EventKind;

use super::api::Host;
use super::error::{HostError, HostResult};
use super::live::Live;

/// A checkpoint as the session API lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointInfo {
    /// Its number (increasing per project).
    pub n: u64,
    /// The turn it belongs to; `null` for the checkpoint taken just before a restore.
    pub turn: Option<String>,
    /// `turn_start` (before the turn's first change), `turn_end`, or `restore` (just before a
    /// restore: restoring it undoes the restore).
    pub kind: Kind,
    /// When it was taken (RFC 3339, UTC).
    pub created_at: String,
    /// Paths changed since the project's previous checkpoint (0 for the first).
    pub files_changed: usize,
    /// Lines added since then.
    pub additions: usize,
    /// Lines removed since then.
    pub deletions: usize,
    /// What the checkpoint found but could not capture (a socket, a FIFO, an unreadable file),
    /// by name: restoring it cannot bring those back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncaptured: Vec<Uncaptured>,
}

impl From<&Checkpoint> for CheckpointInfo {
    fn from(cp: &Checkpoint) -> Self {
        Self {
            n: cp.id,
            turn: cp.turn.clone(),
            kind: cp.kind,
            created_at: cp.created_at(),
            files_changed: cp.changes.files,
            additions: cp.changes.added,
            deletions: cp.changes.removed,
            uncaptured: cp.uncaptured.clone(),
        }
    }
}

/// The changes from the project's previous checkpoint to checkpoint `n`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckpointDiff {
    /// The checkpoint.
    pub n: u64,
    /// The paths that changed, by path (an empty folder with a trailing `/`).
    pub files: Vec<FileChange>,
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileChange {
    /// Relative to the project root, `/`-separated.
    pub path: String,
    /// `added`, `modified`, `deleted`, or `mode` (only the permission bits changed).
    pub change: ChangeKind,
    /// Lines added.
    pub additions: usize,
    /// Lines removed.
    pub deletions: usize,
    /// Either side is binary, or too large to compare.
    pub binary: bool,
    /// The unified diff; `null` for binary files, files above the size cap, folders and mode
    /// changes.
    pub diff: Option<String>,
}

/// What a restore brings back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RestoreScope {
    /// The project's files only.
    Code,
    /// The session's conversation only.
    Conversation,
    /// Both.
    #[default]
    Both,
}

impl RestoreScope {
    fn code(self) -> bool {
        self != Self::Conversation
    }

    fn conversation(self) -> bool {
        self != Self::Code
    }
}

/// What a restore did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RestoreOutcome {
    /// The checkpoint restored.
    pub restored: u64,
    /// What was restored.
    pub scope: RestoreScope,
    /// The checkpoint taken just before the restore: restoring it undoes this restore.
    pub undo: u64,
    /// Files and links written or deleted (0 when only the conversation was restored).
    pub files_changed: usize,
    /// What the undo checkpoint could not capture (a socket, a FIFO, an unreadable file), by
    /// name: restoring the undo cannot bring those back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncaptured: Vec<Uncaptured>,
}

/// A stored message as a rewind keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Kept {
    turn_id: Option<String>,
    message: Value,
}

impl Kept {
    fn of(record: &MessageRecord) -> Self {
        Self { turn_id: record.turn_id.clone(), message: record.message.clone() }
    }
}

fn failed(err: hands_checkpoint::Error) -> HostError {
    match err {
        hands_checkpoint::Error::NotFound(n) => {
            HostError::NotFound(format!("checkpoint {n} does not exist (or was removed by gc)"))
        }
        hands_checkpoint::Error::Busy => HostError::Conflict(err.to_string()),
        other => HostError::BadRequest(format!("the checkpoint store failed: {other}")),
    }
}

/// Runs `work` on the blocking pool (the checkpoint store reads and writes files).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, hands_checkpoint::Error> + Send + 'static,
) -> HostResult<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(failed),
        Err(_) => Err(HostError::BadRequest("the checkpoint task failed; try again".into())),
    }
}

impl Host {
    async fn checkpoint_store(&self, live: &Live) -> HostResult<Arc<Store>> {
        let store = self.parts.checkpoint_store(live.session().root()).await.map_err(failed)?;
        Ok(Arc::new(store))
    }

    /// Checkpoint `n` of session `id`'s store, `NotFound` unless it is one of the session's.
    async fn own_checkpoint(&self, id: &str, store: &Arc<Store>, n: u64) -> HostResult<Checkpoint> {
        let s = Arc::clone(store);
        let cp = blocking(move || s.load(n)).await?;
        if cp.session != id {
            return Err(HostError::NotFound(format!(
                "checkpoint {n} belongs to another session of this project; list this session's \
                 checkpoints to see its own"
            )));
        }
        Ok(cp)
    }

    /// The session's turns, oldest first (their user messages label checkpoints).
    pub async fn turns(&self, id: &str) -> HostResult<Vec<hands_store::TurnRecord>> {
        self.live(id).await?;
        Ok(self.parts.store.turns(id).await?)
    }

    /// The session's checkpoints, oldest first.
    pub async fn checkpoints(&self, id: &str) -> HostResult<Vec<CheckpointInfo>> {
        let live = self.live(id).await?;
        let store = self.checkpoint_store(&live).await?;
        let list = blocking(move || store.list()).await?;
        Ok(list.iter().filter(|c| c.session == id).map(CheckpointInfo::from).collect())
    }

    /// The changes from the project's checkpoint before `n` to `n` (none for the project's first
    /// checkpoint: it has nothing to compare with).
    pub async fn checkpoint_diff(&self, id: &str, n: u64) -> HostResult<CheckpointDiff> {
        let live = self.live(id).await?;
        let store = self.checkpoint_store(&live).await?;
        let cp = self.own_checkpoint(id, &store, n).await?;
        let changes = blocking(move || match store.previous(cp.id)? {
            Some(previous) => hands_checkpoint::diff(&store, Some(&previous), &cp),
            None => Ok(Vec::new()),
        })
        .await?;
        let files = changes
            .into_iter()
            .map(|c| FileChange {
                path: c.path,
                change: c.kind,
                additions: c.added,
                deletions: c.removed,
                binary: c.binary,
                diff: c.unified,
            })
            .collect();
        Ok(CheckpointDiff { n, files })
    }

    /// Restore checkpoint `n` of session `id`: its files, its conversation, or both. A
    /// checkpoint of the state just before is taken first (`undo`). `Conflict` while a turn runs
    /// in the session, or on the project when the code is restored.
    pub async fn restore_checkpoint(
        &self,
        id: &str,
        n: u64,
        scope: RestoreScope,
    ) -> HostResult<RestoreOutcome> {
        let live = self.live(id).await?;
        let busy = |turn: String| {
            HostError::Conflict(format!(
                "turn {turn} is running in session {id}: restore when it has ended, or abort it \
                 first"
            ))
        };
        if let Some(turn) = live.running() {
            return Err(busy(turn));
        }
        let store = self.checkpoint_store(&live).await?;
        let target = self.own_checkpoint(id, &store, n).await?;
        // Holding the conversation keeps a turn of this session from starting meanwhile.
        let mut conversation = live.conversation().await;
        if let Some(turn) = live.running() {
            return Err(busy(turn));
        }
        let records = self.parts.store.messages(id).await?;
        let mut meta =
            Meta { messages: Some(records.len() as u64), ..Meta::new(id, Kind::Restore) };
        let mut rewind = None;
        if scope.conversation() {
            let wanted = self.conversation_of(id, &store, &target, &records).await?;
            let now: Vec<Kept> = records.iter().map(Kept::of).collect();
            let same = now.iter().zip(&wanted).take_while(|(a, b)| a == b).count();
            if same < now.len() {
                let removed = serde_json::to_vec(&now[same..]).unwrap_or_default();
                let s = Arc::clone(&store);
                let object = blocking(move || s.put_object(&removed)).await?;
                meta.rewound = Some(Rewound { from: same as u64, object });
            }
            rewind = Some((same, wanted));
        }
        let s = Arc::clone(&store);
        let (undo, files_changed) = if scope.code() {
            let restored = blocking(move || s.restore(n, &meta)).await?;
            let changed = restored.files_changed();
            (restored.undo, changed)
        } else {
            (blocking(move || s.snapshot(&meta)).await?, 0)
        };
        live.emit(EventKind::checkpoint_created(&undo)).await;
        if let Some((same, wanted)) = rewind {
            let after = if same == 0 { 0 } else { records[same - 1].seq };
            self.parts.store.truncate_messages(id, after).await?;
            for kept in &wanted[same..] {
                self.parts
                    .store
                    .append_message(id, kept.turn_id.as_deref(), kept.message.clone())
                    .await?;
            }
            *conversation = self.stored_messages(id).await?;
            live.touch();
            live.emit(EventKind::ConversationRestored { checkpoint: n, messages: wanted.len() })
                .await;
        }
        let uncaptured = undo.uncaptured.clone();
        Ok(RestoreOutcome { restored: n, scope, undo: undo.id, files_changed, uncaptured })
    }

    /// The session's stored messages as they were when `target` was taken: the messages now,
    /// with every rewind since `target` undone (newest first), cut to `target`'s length.
    async fn conversation_of(
        &self,
        id: &str,
        store: &Arc<Store>,
        target: &Checkpoint,
        records: &[MessageRecord],
    ) -> HostResult<Vec<Kept>> {
        let Some(len) = target.messages else {
            return Err(HostError::BadRequest(format!(
                "checkpoint {} has no conversation to go back to (it was not taken in a turn of \
                 this session): restore its code only (scope \"code\")",
                target.id
            )));
        };
        let s = Arc::clone(store);
        let (from, session) = (target.id, id.to_owned());
        let tails = blocking(move || {
            let mut tails = Vec::new();
            for cp in s.list()?.into_iter().rev() {
                if cp.id < from {
                    break;
                }
                if let (true, Some(r)) = (cp.session == session, cp.rewound) {
                    tails.push((r.from, s.object(&r.object)?));
                }
            }
            Ok(tails)
        })
        .await?;
        let mut conversation: Vec<Kept> = records.iter().map(Kept::of).collect();
        for (from, bytes) in tails {
            let removed: Vec<Kept> = serde_json::from_slice(&bytes).map_err(|err| {
                HostError::BadRequest(format!("a rewound conversation is damaged: {err}"))
            })?;
            conversation.truncate(usize::try_from(from).unwrap_or(usize::MAX));
            conversation.extend(removed);
        }
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len > conversation.len() {
            return Err(HostError::Conflict(format!(
                "the conversation of checkpoint {} can no longer be rebuilt (messages it had are \
                 gone): restore its code only (scope \"code\")",
                target.id
            )));
        }
        conversation.truncate(len);
        Ok(conversation)
    }
}
