//! The session host: the live sessions of one hands process, their turns, their event streams,
//! and the questions and approvals waiting on a user. `hands serve`'s session API, `hands run` and
//! `hands chat` are thin front ends over it. Everything it does is written to the [`Store`] first,
//! so a restarted hands resumes sessions with their transcript intact.
//!
//! # Sessions
//!
//! A live session is a [`hands_core::Session`] (with its project id) plus its event hub, its
//! conversation and its turn state. A session that is not live (created by an earlier hands, or
//! forgotten) is loaded from the store on first use ([`Host::get_session`],
//! [`Host::post_message`], …): its record, its transcript (with results added for tool calls that
//! an earlier hands left unanswered) and its todo list. Each live session gets an
//! [`AskerHandle`] (ask_user's questions go to the host's [`PendingQuestions`] and are announced
//! as `question` events; [`Host::answer`] routes the answer), an [`ApproverHandle`] (approvals are
//! announced as `approval_requested` events and wait for [`Host::decide`]) and, when the host has a
//! provider, a [`SubagentEnv`] for spawn_subagent. Two watchers follow the session: mode changes
//! become `mode_changed` events and update the stored session; todo_write's list becomes
//! `todos_changed` events and the stored todos.
//!
//! # Events
//!
//! Every event is appended to the store first, which assigns its id, and then broadcast to the
//! session's live subscribers; one lock per session covers both steps, so the broadcast order is
//! the id order. [`Host::subscribe`] hands over without loss or duplicates: it subscribes to the
//! broadcast first, then reads the stored events after the requested id, and
//! [`Subscription::next`] skips live events whose id is not above the last one replayed. An event
//! stored before the read is in the replay (and skipped if it also arrives live); an event stored
//! after the read is broadcast after the subscription began, so it arrives live. A subscriber that
//! falls behind the broadcast buffer reads what it missed from the store.
//!
//! # Turns
//!
//! [`Host::post_message`] records the turn, emits `turn_started` and spawns the loop
//! ([`crate::turn`]) on its own task; a second message while a turn runs is a `Conflict`. The loop's
//! messages are stored after each step, its calls as tool-call records, and everything it reports
//! as events; the turn ends with `turn_ended` (and `error` first when the provider failed).

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::FutureExt as _;
use hands_core::approval::{ApprovalRequest, Approver, ApproverHandle, Decision};
use hands_core::ask::{AskError, Asker, AskerHandle, NoSuchQuestion, PendingQuestions, Question};
use hands_core::process::{ProcessError, ProcessList, ProcessStopped};
use hands_core::{
    BoxFuture, CancellationToken, Mode, ProcessService, Registry, Session, ToolCall, ToolOutput,
};
use hands_store::{
    EventRecord, SessionRecord, Store, StoreError, StoreResult, ToolCallRecord, TurnRecord,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{broadcast, oneshot, watch};

use crate::event::{Event, EventKind};
use crate::model::{Message, Provider};
use crate::prompt::SystemPrompt;
use crate::subagent::SubagentEnv;
use crate::turn::{self, Limits, Observer, ToolScope, ToolUse, Turn};

mod config;
mod events;
mod live;
pub mod roots;
mod turns;
mod user;

pub use config::AgentConfig;
pub use events::Subscription;
use events::*;
use live::*;
use user::*;

/// What a host is built from.
#[derive(Clone)]
pub struct HostParts {
    /// Where sessions are kept.
    pub store: Arc<dyn Store>,
    /// The tools.
    pub registry: Arc<Registry>,
    /// The model; `None` when no `[model]` is configured (turns then fail with `NoModel`, direct
    /// tool calls still work).
    pub provider: Option<Arc<dyn Provider>>,
    /// `[agent]`.
    pub config: AgentConfig,
}

/// A session to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSession {
    /// The session id; generated when absent.
    pub id: Option<String>,
    /// The project; defaults to the root's folder name.
    pub project_id: Option<String>,
    /// The project's root folder (must exist).
    pub root: PathBuf,
    /// Start in build or plan mode.
    pub mode: Mode,
    /// A title for lists.
    pub title: Option<String>,
}

/// A session as front ends show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionInfo {
    /// Id.
    pub id: String,
    /// Project.
    pub project_id: String,
    /// Root folder.
    pub root: PathBuf,
    /// Build or plan.
    pub mode: Mode,
    /// Title.
    pub title: Option<String>,
    /// The turn running now, if any.
    pub running_turn: Option<String>,
    /// Questions waiting for an answer: `[{question_id, question, options}]`.
    pub pending_questions: Vec<Value>,
    /// Approvals waiting: `[{approval_id, tool, summary}]`.
    pub pending_approvals: Vec<Value>,
    /// Created, ms since the epoch.
    pub created_at_ms: i64,
    /// Last change.
    pub updated_at_ms: i64,
}

/// What went wrong, shaped for HTTP status codes.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// 404.
    #[error("{0}")]
    NotFound(String),
    /// 409: a turn is already running, no question pending, …
    #[error("{0}")]
    Conflict(String),
    /// 400.
    #[error("{0}")]
    BadRequest(String),
    /// 503: no `[model]` configured.
    #[error("no model is configured: set [model] provider, model and api_key_env in the config")]
    NoModel,
    /// 500.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Result of a host call.
pub type HostResult<T> = Result<T, HostError>;

/// Events read from the store per page.
const PAGE: usize = 1000;

/// Live events buffered per session for slow subscribers (who then read the store).
const BROADCAST_CAPACITY: usize = 1024;

/// How long an abort waits for the turn it ended to be recorded.
const ABORT_WAIT: Duration = Duration::from_secs(10);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A fresh id: `prefix-<ms, hex>-<counter><random>`, unique across processes in practice.
fn fresh_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(n);
    hasher.write_u32(std::process::id());
    let random = hasher.finish() as u32;
    format!("{prefix}-{:x}-{n:x}{random:08x}", now_ms())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// The live sessions of one hands process.
pub struct Host {
    parts: HostParts,
    live: Mutex<HashMap<String, Arc<Live>>>,
    /// Serialises loading sessions from the store (a transcript is repaired once).
    loading: tokio::sync::Mutex<()>,
    questions: PendingQuestions,
    approvals: Arc<Approvals>,
    /// Fired when the host is dropped: ends the watcher tasks.
    shutdown: CancellationToken,
}

impl Drop for Host {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Host {
    /// Open the host: marks turns left running by a previous process as aborted (and ends them
    /// in their event log with `turn_ended`).
    pub async fn open(parts: HostParts) -> HostResult<Arc<Self>> {
        let abandoned = parts.store.abandon_running_turns(now_ms()).await?;
        for turn in abandoned {
            let kind = EventKind::TurnEnded {
                turn_id: turn.id.clone(),
                reason: "aborted".into(),
                text: None,
            };
            let data = serde_json::to_value(&kind).unwrap_or(Value::Null);
            if let Err(err) = parts.store.append_event(&turn.session_id, now_ms(), data).await {
                tracing::warn!(session = %turn.session_id, %err, "ending an abandoned turn");
            }
        }
        Ok(Arc::new(Self {
            parts,
            live: Mutex::new(HashMap::new()),
            loading: tokio::sync::Mutex::new(()),
            questions: PendingQuestions::new(),
            approvals: Arc::new(Approvals::default()),
            shutdown: CancellationToken::new(),
        }))
    }

    /// The questions table (front ends that answer by another route, e.g. `POST /vibe/answer`,
    /// may use it directly; [`Host::answer`] is the same).
    pub fn questions(&self) -> &PendingQuestions {
        &self.questions
    }

    /// The live session `id` as a [`Session`] (loaded from the store if needed), for front ends
    /// that run calls themselves.
    pub async fn session(&self, id: &str) -> HostResult<Session> {
        Ok(self.live(id).await?.session.clone())
    }

    /// Create a session.
    pub async fn create_session(&self, new: NewSession) -> HostResult<SessionInfo> {
        let id = match new.id {
            Some(id) if !valid_id(&id) => {
                return Err(HostError::BadRequest(format!(
                    "session id `{id}` is not valid: use 1 to 128 letters, digits, `-`, `_`, `.` \
                     or `:`"
                )));
            }
            Some(id) => id,
            None => fresh_id("s"),
        };
        let root = std::fs::canonicalize(&new.root).map_err(|err| {
            HostError::BadRequest(format!("root `{}` cannot be used: {err}", new.root.display()))
        })?;
        if !root.is_dir() {
            return Err(HostError::BadRequest(format!(
                "root `{}` is not a folder",
                root.display()
            )));
        }
        roots::check_root(&root, &[]).map_err(HostError::BadRequest)?;
        let project_id = match new.project_id {
            Some(p) if p.trim().is_empty() => {
                return Err(HostError::BadRequest("project_id is empty".into()));
            }
            Some(p) => p,
            None => root.file_name().map_or_else(
                || root.to_string_lossy().into_owned(),
                |n| n.to_string_lossy().into_owned(),
            ),
        };
        let now = now_ms();
        let record = SessionRecord {
            id: id.clone(),
            project_id,
            root: root.to_string_lossy().into_owned(),
            mode: new.mode.to_string(),
            title: new.title,
            created_at_ms: now,
            updated_at_ms: now,
        };
        match self.parts.store.create_session(record.clone()).await {
            Ok(()) => {}
            Err(StoreError::Exists(_)) => {
                return Err(HostError::Conflict(format!("a session with the id `{id}` exists")));
            }
            Err(err) => return Err(err.into()),
        }
        let live = self.activate(record, Vec::new(), None, Value::Array(Vec::new()));
        Ok(self.info(&live))
    }

    /// All sessions (stored ones included), most recent first.
    pub async fn list_sessions(&self) -> HostResult<Vec<SessionInfo>> {
        let records = self.parts.store.list_sessions().await?;
        let live = lock(&self.live).clone();
        Ok(records
            .into_iter()
            .map(|record| match live.get(&record.id) {
                Some(l) => self.info(l),
                None => info_of(&record),
            })
            .collect())
    }

    /// One session; loads it from the store when not live (resume).
    pub async fn get_session(&self, id: &str) -> HostResult<SessionInfo> {
        let live = self.live(id).await?;
        Ok(self.info(&live))
    }

    /// The session's conversation, oldest first, as stored (tool results in full, also those the
    /// model now sees elided).
    pub async fn transcript(&self, id: &str) -> HostResult<Vec<Message>> {
        if !lock(&self.live).contains_key(id) {
            self.stored(id).await?;
        }
        Ok(self.stored_messages(id).await?)
    }

    /// Abort, stop its processes, forget it, delete it from the store.
    pub async fn delete_session(&self, id: &str) -> HostResult<()> {
        let live = lock(&self.live).get(id).cloned();
        if let Some(live) = live {
            live.session.abort();
            live.session.close().await;
            live.wait_turn(Some(ABORT_WAIT)).await;
            lock(&self.live).remove(id);
        }
        match self.parts.store.delete_session(id).await {
            Ok(()) => Ok(()),
            Err(StoreError::NotFound(_)) => Err(not_found(id)),
            Err(err) => Err(err.into()),
        }
    }

    /// Close every live session (processes stopped, turns aborted); for shutdown.
    pub async fn close(&self) {
        let sessions: Vec<Arc<Live>> = lock(&self.live).drain().map(|(_, l)| l).collect();
        futures_util::future::join_all(sessions.iter().map(|live| async move {
            live.session.close().await;
            live.wait_turn(Some(ABORT_WAIT)).await;
        }))
        .await;
    }

    fn info(&self, live: &Live) -> SessionInfo {
        let record = lock(&live.record).clone();
        let mut info = info_of(&record);
        info.mode = live.session.mode();
        info.running_turn = live.running().map(|(id, _)| id);
        info.pending_questions = self
            .questions
            .pending()
            .into_iter()
            .filter(|q| q.session == record.id)
            .map(|q| json!({"question_id": q.id, "question": q.question, "options": q.options}))
            .collect();
        info.pending_approvals = self.approvals.pending(&record.id);
        info
    }

    /// The stored record of `id`, `NotFound` when there is none.
    async fn stored(&self, id: &str) -> HostResult<SessionRecord> {
        match self.parts.store.get_session(id).await {
            Ok(record) => Ok(record),
            Err(StoreError::NotFound(_)) => Err(not_found(id)),
            Err(err) => Err(err.into()),
        }
    }

    async fn stored_messages(&self, id: &str) -> StoreResult<Vec<Message>> {
        let records = self.parts.store.messages(id).await?;
        Ok(records
            .into_iter()
            .filter_map(|r| match serde_json::from_value::<Message>(r.message) {
                Ok(message) => Some(message),
                Err(err) => {
                    tracing::warn!(session = id, seq = r.seq, %err, "unreadable stored message");
                    None
                }
            })
            .collect())
    }

    /// The live session `id`, loaded from the store when it is not live (resume).
    async fn live(&self, id: &str) -> HostResult<Arc<Live>> {
        if let Some(live) = lock(&self.live).get(id) {
            return Ok(Arc::clone(live));
        }
        let _loading = self.loading.lock().await;
        if let Some(live) = lock(&self.live).get(id) {
            return Ok(Arc::clone(live));
        }
        let record = self.stored(id).await?;
        let mut messages = self.stored_messages(id).await?;
        if let Some(fix) = turn::repair(&messages) {
            let value = serde_json::to_value(&fix).unwrap_or(Value::Null);
            self.parts.store.append_message(id, None, value).await?;
            messages.push(fix);
        }
        let last_status = self.parts.store.turns(id).await?.last().map(|t| t.status.clone());
        let todos = self.parts.store.todos(id).await?;
        Ok(self.activate(record, messages, last_status, todos))
    }

    /// Make a session live: its `Session` with the host's asker, approver and sub-agent
    /// environment, its hub, its watchers. Synchronous, so that checking the map and inserting
    /// happen under one lock.
    fn activate(
        &self,
        record: SessionRecord,
        messages: Vec<Message>,
        last_status: Option<String>,
        todos: Value,
    ) -> Arc<Live> {
        let mut map = lock(&self.live);
        if let Some(live) = map.get(&record.id) {
            return Arc::clone(live);
        }
        let session = Session::new(record.id.clone(), PathBuf::from(&record.root))
            .with_project(record.project_id.clone());
        session.set_mode(record.mode.parse().unwrap_or_default());
        if let Ok(list) = serde_json::from_value::<Vec<crate::Todo>>(todos) {
            crate::restore_todos(&session, list);
        }
        let hub = Arc::new(Hub::new(record.id.clone(), Arc::clone(&self.parts.store)));
        session.insert_extension(AskerHandle(Arc::new(HostAsker {
            hub: Arc::clone(&hub),
            questions: self.questions.clone(),
        })));
        session.insert_extension(ApproverHandle(Arc::new(HostApprover {
            hub: Arc::clone(&hub),
            approvals: Arc::clone(&self.approvals),
        })));
        if let Some(provider) = &self.parts.provider {
            SubagentEnv {
                provider: Arc::clone(provider),
                registry: Arc::clone(&self.parts.registry),
                limits: self.parts.config.subagent_limits(),
            }
            .install(&session);
        }
        let announced = (session.mode(), crate::todos(&session).borrow().clone());
        let live = Arc::new(Live {
            session: session.clone(),
            hub: Arc::clone(&hub),
            store: Arc::clone(&self.parts.store),
            record: Mutex::new(record),
            conversation: tokio::sync::Mutex::new(messages),
            turn: Mutex::new(TurnState { running: None, last_status }),
            announced: tokio::sync::Mutex::new(announced),
            direct_calls: AtomicU64::new(0),
        });
        map.insert(session.id().to_owned(), Arc::clone(&live));
        drop(map);
        self.watch(&live);
        live
    }

    /// Follow the session's mode and todo list into events and the store, until it closes (or
    /// the host is dropped).
    fn watch(&self, live: &Arc<Live>) {
        let stop = self.shutdown.child_token();
        let closed = live.session.closed_token().clone();
        let mut modes = live.session.mode_changes();
        modes.borrow_and_update();
        let mut todos = crate::todos(&live.session);
        todos.borrow_and_update();
        let live = Arc::downgrade(live);
        tokio::spawn(async move {
            loop {
                let changed = tokio::select! {
                    () = stop.cancelled() => break,
                    () = closed.cancelled() => break,
                    changed = modes.changed() => changed.map(|()| modes.borrow_and_update()).is_ok(),
                    changed = todos.changed() => changed.map(|()| todos.borrow_and_update()).is_ok(),
                };
                let Some(live) = live.upgrade().filter(|_| changed) else { break };
                live.sync().await;
            }
        });
    }
}

fn not_found(id: &str) -> HostError {
    HostError::NotFound(format!("no session has the id `{id}`"))
}

fn info_of(record: &SessionRecord) -> SessionInfo {
    SessionInfo {
        id: record.id.clone(),
        project_id: record.project_id.clone(),
        root: PathBuf::from(&record.root),
        mode: record.mode.parse().unwrap_or_default(),
        title: record.title.clone(),
        running_turn: None,
        pending_questions: Vec::new(),
        pending_approvals: Vec::new(),
        created_at_ms: record.created_at_ms,
        updated_at_ms: record.updated_at_ms,
    }
}

/// A title from the first user message: its first line, at most 80 characters.
fn title_of(text: &str) -> String {
    let line = text.trim().lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(80).collect();
    if line.chars().count() > 80 {
        title.pop();
        title.push('…');
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_are_the_first_line_cut() {
        assert_eq!(title_of("  fix the bug\nin main.rs"), "fix the bug");
        let long = title_of(&"x".repeat(100));
        assert_eq!(long.chars().count(), 80);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn fresh_ids_differ_and_are_valid() {
        let a = fresh_id("s");
        let b = fresh_id("s");
        assert_ne!(a, b);
        assert!(valid_id(&a), "{a}");
        assert!(!valid_id("a/b") && !valid_id(""));
    }
}
