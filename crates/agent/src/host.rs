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
use hands_core::{BoxFuture, CancellationToken, Mode, Registry, Session, ToolCall, ToolOutput};
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

/// `[agent]`: the loop's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls per turn before the turn ends with `max_steps`.
    pub max_steps: u32,
    /// Output tokens per model response.
    pub max_tokens: u32,
    /// Steps of a sub-agent.
    pub subagent_max_steps: u32,
    /// Fraction of the context window at which the oldest tool results are elided.
    pub elide_at: f64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self { max_steps: 50, max_tokens: 8192, subagent_max_steps: 20, elide_at: 0.8 }
    }
}

impl AgentConfig {
    /// The limits of a turn.
    pub fn limits(&self) -> Limits {
        Limits { max_steps: self.max_steps, max_tokens: self.max_tokens, elide_at: self.elide_at }
    }

    /// The limits of a sub-agent.
    pub fn subagent_limits(&self) -> Limits {
        Limits { max_steps: self.subagent_max_steps, ..self.limits() }
    }
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
    /// `build` or `plan`.
    pub mode: String,
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

/// Events of one session: first the stored ones after the requested id, then live ones. Live
/// events with an id ≤ the last replayed one are skipped by [`Subscription::next`].
pub struct Subscription {
    /// Stored events after the requested id, oldest first.
    pub replay: Vec<Event>,
    /// Live events.
    pub live: broadcast::Receiver<Event>,
    /// Replay events handed out by `next`.
    cursor: usize,
    /// The id of the last event handed out (or replayed).
    last: u64,
    /// Events read from the store after the live receiver lagged.
    backlog: VecDeque<Event>,
    store: Arc<dyn Store>,
    session_id: String,
}

impl Subscription {
    /// The next event: the replay first, then live ones (none twice, none missed); `None` once the
    /// session is gone (deleted, or the host closed).
    pub async fn next(&mut self) -> Option<Event> {
        if let Some(event) = self.replay.get(self.cursor) {
            self.cursor += 1;
            self.last = self.last.max(event.id);
            return Some(event.clone());
        }
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.id > self.last {
                    self.last = event.id;
                    return Some(event);
                }
                continue;
            }
            match self.live.recv().await {
                Ok(event) if event.id <= self.last => {}
                Ok(event) => {
                    self.last = event.id;
                    return Some(event);
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(session = %self.session_id, missed, "subscriber lagged");
                    match read_events(self.store.as_ref(), &self.session_id, self.last).await {
                        Ok(events) => self.backlog.extend(events),
                        Err(err) => {
                            tracing::warn!(session = %self.session_id, %err, "re-reading events")
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The id of the last event handed out (or of the requested starting point).
    pub fn last_id(&self) -> u64 {
        self.last
    }
}

/// All stored events of `session` after `after`, page by page.
async fn read_events(store: &dyn Store, session: &str, after: u64) -> StoreResult<Vec<Event>> {
    let mut events = Vec::new();
    let mut from = after;
    loop {
        let page = store.events_after(session, from, PAGE).await?;
        let full = page.len() == PAGE;
        for record in page {
            from = record.id;
            if let Some(event) = to_event(record) {
                events.push(event);
            }
        }
        if !full {
            return Ok(events);
        }
    }
}

fn to_event(record: EventRecord) -> Option<Event> {
    match serde_json::from_value::<EventKind>(record.data) {
        Ok(kind) => {
            Some(Event { id: record.id, session_id: record.session_id, at_ms: record.at_ms, kind })
        }
        Err(err) => {
            tracing::warn!(session = %record.session_id, id = record.id, %err, "unreadable event");
            None
        }
    }
}

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

/// A session's event log: append to the store, then broadcast, in id order.
struct Hub {
    session_id: String,
    store: Arc<dyn Store>,
    tx: broadcast::Sender<Event>,
    order: tokio::sync::Mutex<()>,
}

impl Hub {
    fn new(session_id: String, store: Arc<dyn Store>) -> Self {
        Self {
            session_id,
            store,
            tx: broadcast::Sender::new(BROADCAST_CAPACITY),
            order: tokio::sync::Mutex::new(()),
        }
    }

    /// Store the event, then broadcast it. A store failure is logged and the event dropped (it
    /// has no id without the store).
    async fn emit(&self, kind: EventKind) -> Option<Event> {
        let data = match serde_json::to_value(&kind) {
            Ok(data) => data,
            Err(err) => {
                tracing::error!(%err, "event to JSON");
                return None;
            }
        };
        let _order = self.order.lock().await;
        let at_ms = now_ms();
        match self.store.append_event(&self.session_id, at_ms, data).await {
            Ok(id) => {
                let event = Event { id, session_id: self.session_id.clone(), at_ms, kind };
                let _ = self.tx.send(event.clone());
                Some(event)
            }
            Err(err) => {
                tracing::warn!(session = %self.session_id, %err, event = kind.name(), "storing an event");
                None
            }
        }
    }
}

/// The running turn of a session, and how the last one ended.
#[derive(Default)]
struct TurnState {
    running: Option<Running>,
    last_status: Option<String>,
}

struct Running {
    id: String,
    done: watch::Receiver<Option<String>>,
}

/// A live session.
struct Live {
    session: Session,
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    record: Mutex<SessionRecord>,
    conversation: tokio::sync::Mutex<Vec<Message>>,
    turn: Mutex<TurnState>,
    /// The mode and todo list last announced (and stored).
    announced: tokio::sync::Mutex<(Mode, Vec<crate::Todo>)>,
    /// Direct tool calls ([`Host::call_tool`]) in flight: an abort of the project counts a
    /// session busy with one.
    direct_calls: AtomicU64,
}

impl Live {
    /// Announce and store the session's mode and todo list if they changed since the last
    /// announcement. Called by the session's watcher on every change, and after every tool call
    /// (so that `mode_changed` / `todos_changed` come right after the call that caused them, and
    /// before the turn's end); the lock makes each change announced once.
    async fn sync(&self) {
        let mut announced = self.announced.lock().await;
        let id = self.session.id();
        let mode = self.session.mode();
        if announced.0 != mode {
            announced.0 = mode;
            let mode = mode.to_string();
            if let Err(err) = self.store.update_session(id, Some(&mode), None).await {
                tracing::warn!(session = %id, %err, "storing the mode");
            }
            {
                let mut record = lock(&self.record);
                record.mode.clone_from(&mode);
                record.updated_at_ms = now_ms();
            }
            self.hub.emit(EventKind::ModeChanged { mode }).await;
        }
        let todos = crate::todos(&self.session).borrow().clone();
        if announced.1 != todos {
            let list = serde_json::to_value(&todos).unwrap_or(Value::Array(Vec::new()));
            announced.1 = todos;
            if let Err(err) = self.store.set_todos(id, list.clone()).await {
                tracing::warn!(session = %id, %err, "storing the todo list");
            }
            self.hub.emit(EventKind::TodosChanged { todos: list }).await;
        }
    }

    fn running(&self) -> Option<(String, watch::Receiver<Option<String>>)> {
        lock(&self.turn).running.as_ref().map(|r| (r.id.clone(), r.done.clone()))
    }

    /// Wait (at most `limit`) for the running turn, if any, to end; its status.
    async fn wait_turn(&self, limit: Option<Duration>) -> Option<String> {
        let Some((_, mut done)) = self.running() else {
            return lock(&self.turn).last_status.clone();
        };
        let wait = done.wait_for(Option::is_some);
        let ended = match limit {
            Some(limit) => tokio::time::timeout(limit, wait).await.ok().and_then(Result::ok),
            None => wait.await.ok(),
        };
        ended.and_then(|status| status.clone()).or_else(|| lock(&self.turn).last_status.clone())
    }
}

/// Approvals waiting for [`Host::decide`].
#[derive(Default)]
struct Approvals(Mutex<Vec<WaitingApproval>>);

struct WaitingApproval {
    session: String,
    id: String,
    tool: String,
    summary: String,
    reply: oneshot::Sender<Decision>,
}

impl Approvals {
    fn pending(&self, session: &str) -> Vec<Value> {
        lock(&self.0)
            .iter()
            .filter(|a| a.session == session)
            .map(|a| json!({"approval_id": a.id, "tool": a.tool, "summary": a.summary}))
            .collect()
    }

    fn remove(&self, id: &str) {
        lock(&self.0).retain(|a| a.id != id);
    }
}

/// The session's approver: announces the request and waits for [`Host::decide`].
struct HostApprover {
    hub: Arc<Hub>,
    approvals: Arc<Approvals>,
}

impl Approver for HostApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let id = fresh_id("approval");
            let (reply, decision) = oneshot::channel();
            lock(&self.approvals.0).push(WaitingApproval {
                session: request.session.clone(),
                id: id.clone(),
                tool: request.tool.clone(),
                summary: request.summary.clone(),
                reply,
            });
            struct Leave<'a>(&'a Approvals, &'a str);
            impl Drop for Leave<'_> {
                fn drop(&mut self) {
                    self.0.remove(self.1);
                }
            }
            let _leave = Leave(&self.approvals, &id);
            self.hub
                .emit(EventKind::ApprovalRequested {
                    approval_id: id.clone(),
                    tool: request.tool.clone(),
                    summary: request.summary.clone(),
                })
                .await;
            let decision = tokio::select! {
                decision = decision => decision.unwrap_or(Decision::Deny(None)),
                () = cancel.cancelled() => Decision::Deny(Some("the call was aborted".into())),
            };
            let approved = decision == Decision::Approve;
            self.hub.emit(EventKind::ApprovalDecided { approval_id: id.clone(), approved }).await;
            decision
        })
    }
}

/// The session's asker: parks the question in the host's table, announces it, waits.
struct HostAsker {
    hub: Arc<Hub>,
    questions: PendingQuestions,
}

impl Asker for HostAsker {
    fn ask<'a>(
        &'a self,
        question: &'a Question,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<String, AskError>> {
        Box::pin(async move {
            let wait = self.questions.ask(question, cancel);
            tokio::pin!(wait);
            // One poll puts the question in the table, so that it can be answered as soon as the
            // event is out.
            if let Some(early) = (&mut wait).now_or_never() {
                return early;
            }
            self.hub
                .emit(EventKind::Question {
                    question_id: question.id.clone(),
                    question: question.question.clone(),
                    options: question.options.clone(),
                })
                .await;
            let answer = wait.await;
            if answer.is_ok() {
                self.hub
                    .emit(EventKind::QuestionAnswered { question_id: question.id.clone() })
                    .await;
            }
            answer
        })
    }
}

/// Turns what the loop reports into stored messages, tool-call records and events.
struct TurnRecorder {
    live: Arc<Live>,
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    session_id: String,
    turn_id: Option<String>,
    /// The store's id of each call in flight, by the model's id for it: models' ids are not
    /// unique across sessions or even turns (local servers number them `call_0`, `call_1`, …).
    record_ids: Mutex<HashMap<String, String>>,
}

impl TurnRecorder {
    async fn started(&self, id: &str, name: &str, args: &Value) {
        let record_id = fresh_id("call");
        lock(&self.record_ids).insert(id.to_owned(), record_id.clone());
        let record = ToolCallRecord {
            id: record_id,
            session_id: self.session_id.clone(),
            turn_id: self.turn_id.clone(),
            name: name.to_owned(),
            args: args.clone(),
            result: None,
            is_error: None,
            started_at_ms: now_ms(),
            duration_ms: None,
        };
        if let Err(err) = self.store.start_tool_call(record).await {
            tracing::warn!(session = %self.session_id, call = id, %err, "storing a tool call");
        }
        self.hub
            .emit(EventKind::ToolCallStarted {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                args: args.clone(),
            })
            .await;
    }

    async fn finished(&self, id: &str, name: &str, output: &ToolOutput, duration: Duration) {
        let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let result = serde_json::to_value(output).unwrap_or(Value::Null);
        let record_id = lock(&self.record_ids).remove(id).unwrap_or_else(|| id.to_owned());
        if let Err(err) =
            self.store.finish_tool_call(&record_id, result, output.is_error, duration_ms).await
        {
            tracing::warn!(session = %self.session_id, call = id, %err, "storing a tool result");
        }
        self.hub
            .emit(EventKind::ToolCallFinished {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                duration_ms,
                is_error: output.is_error,
                summary: turn::summary(output),
            })
            .await;
        // The registry appends queued notices to results as `[notice] …` blocks; announce them
        // too, as the loop does for those it injects itself.
        for content in &output.content {
            if let hands_core::Content::Text { text } = content
                && let Some(notice) = text.strip_prefix("[notice] ")
            {
                self.hub.emit(EventKind::ProcessNotice { text: notice.to_owned() }).await;
            }
        }
        self.live.sync().await;
    }
}

impl Observer for TurnRecorder {
    fn text(&self, delta: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let turn_id = self.turn_id.clone().unwrap_or_default();
            self.hub.emit(EventKind::TextDelta { turn_id, text: delta }).await;
        })
    }

    fn notice(&self, text: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.hub.emit(EventKind::ProcessNotice { text }).await;
        })
    }

    fn call_started<'a>(&'a self, call: &'a ToolUse) -> BoxFuture<'a, ()> {
        Box::pin(self.started(&call.id, &call.name, &call.input))
    }

    fn call_finished<'a>(
        &'a self,
        call: &'a ToolUse,
        output: &'a ToolOutput,
        duration: Duration,
    ) -> BoxFuture<'a, ()> {
        Box::pin(self.finished(&call.id, &call.name, output, duration))
    }

    fn messages<'a>(&'a self, new: &'a [Message]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for message in new {
                let value = serde_json::to_value(message).unwrap_or(Value::Null);
                if let Err(err) = self
                    .store
                    .append_message(&self.session_id, self.turn_id.as_deref(), value)
                    .await
                {
                    tracing::warn!(session = %self.session_id, %err, "storing a message");
                    self.hub
                        .emit(EventKind::Error {
                            turn_id: self.turn_id.clone(),
                            message: format!(
                                "a message of this session could not be stored ({err}); a resumed \
                                 session will miss it"
                            ),
                        })
                        .await;
                }
            }
        })
    }
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

    /// Start a turn with this user message; returns the turn id at once. `Conflict` when a turn
    /// is running, `NoModel` without a provider.
    pub async fn post_message(&self, id: &str, text: String) -> HostResult<String> {
        let live = self.live(id).await?;
        let Some(provider) = self.parts.provider.clone() else { return Err(HostError::NoModel) };
        if text.trim().is_empty() {
            return Err(HostError::BadRequest("the message is empty".into()));
        }
        let turn_id = fresh_id("turn");
        let (done_tx, done_rx) = watch::channel(None);
        {
            let mut state = lock(&live.turn);
            if let Some(running) = &state.running {
                return Err(HostError::Conflict(format!(
                    "turn {} is still running in session {id}: wait for it to end, or abort it",
                    running.id
                )));
            }
            state.running = Some(Running { id: turn_id.clone(), done: done_rx });
        }
        let cancel = live.session.cancel_token();
        let started = async {
            self.parts
                .store
                .start_turn(TurnRecord {
                    id: turn_id.clone(),
                    session_id: id.to_owned(),
                    status: "running".into(),
                    user_message: text.clone(),
                    started_at_ms: now_ms(),
                    ended_at_ms: None,
                })
                .await?;
            let title = lock(&live.record).title.is_none().then(|| title_of(&text));
            if let Some(title) = &title {
                self.parts.store.update_session(id, None, Some(title)).await?;
                lock(&live.record).title = Some(title.clone());
            }
            StoreResult::Ok(())
        };
        if let Err(err) = started.await {
            lock(&live.turn).running = None;
            return Err(err.into());
        }
        lock(&live.record).updated_at_ms = now_ms();
        live.hub
            .emit(EventKind::TurnStarted { turn_id: turn_id.clone(), message: text.clone() })
            .await;
        let task = TurnTask {
            parts: self.parts.clone(),
            provider,
            live: Arc::clone(&live),
            turn_id: turn_id.clone(),
            text,
            cancel,
            done: done_tx,
        };
        tokio::spawn(task.run());
        Ok(turn_id)
    }

    /// Wait until the session's running turn (if any) ends; returns its final status (without a
    /// running turn: how the last turn of this process ended, or of the stored ones; `None` when
    /// the session never had one).
    pub async fn wait_turn(&self, id: &str) -> HostResult<Option<String>> {
        let live = self.live(id).await?;
        if let Some(status) = live.wait_turn(None).await {
            return Ok(Some(status));
        }
        let turns = self.parts.store.turns(id).await?;
        Ok(turns.last().map(|t| t.status.clone()))
    }

    /// Events after `after` (0: from the start), then live ones. See the module documentation for
    /// why nothing is lost or repeated between the two.
    pub async fn subscribe(&self, id: &str, after: u64) -> HostResult<Subscription> {
        let live = self.live(id).await?;
        // First the live receiver, then the store: see the module documentation.
        let receiver = live.hub.tx.subscribe();
        let replay = read_events(self.parts.store.as_ref(), id, after).await?;
        let last = replay.last().map_or(after, |e| e.id.max(after));
        Ok(Subscription {
            replay,
            live: receiver,
            cursor: 0,
            last,
            backlog: VecDeque::new(),
            store: Arc::clone(&self.parts.store),
            session_id: id.to_owned(),
        })
    }

    /// A direct tool call for clients that run their own loop; `turn_id` scopes de-duplication.
    /// It emits the same events and records as a call of the loop.
    pub async fn call_tool(
        &self,
        id: &str,
        turn_id: Option<String>,
        name: &str,
        args: Value,
    ) -> HostResult<ToolOutput> {
        let live = self.live(id).await?;
        let call_id = fresh_id("call");
        let recorder = TurnRecorder {
            live: Arc::clone(&live),
            hub: Arc::clone(&live.hub),
            store: Arc::clone(&self.parts.store),
            session_id: id.to_owned(),
            turn_id: turn_id.clone(),
            record_ids: Mutex::default(),
        };
        recorder.started(&call_id, name, &args).await;
        let started = std::time::Instant::now();
        let call = ToolCall { id: call_id.clone(), name: name.to_owned(), args, turn: turn_id };
        struct InFlight<'a>(&'a AtomicU64);
        impl Drop for InFlight<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        live.direct_calls.fetch_add(1, Ordering::SeqCst);
        let in_flight = InFlight(&live.direct_calls);
        let output = match self.parts.registry.dispatch(&live.session, call).await {
            Ok(output) => output,
            Err(err) => ToolOutput::error(format!("hands could not run {name}: {err}")),
        };
        drop(in_flight);
        recorder.finished(&call_id, name, &output, started.elapsed()).await;
        Ok(output)
    }

    /// Answer a pending question. `session` and `question_id` may be omitted when exactly one
    /// question is pending (in that session, or in the whole host). `Conflict` when none is (or
    /// none with that id), `BadRequest` when several are and no id says which.
    pub fn answer(
        &self,
        session: Option<&str>,
        question_id: Option<&str>,
        text: String,
    ) -> HostResult<()> {
        let result = match session {
            Some(session) => self.questions.answer_in(session, question_id, text),
            None => self.questions.answer(question_id, text),
        };
        result.map_err(|err| match err {
            NoSuchQuestion::Ambiguous { .. } => HostError::BadRequest(err.to_string()),
            NoSuchQuestion::NonePending | NoSuchQuestion::Unknown { .. } => {
                HostError::Conflict(err.to_string())
            }
        })
    }

    /// Grant or deny a pending approval. `Conflict` when no such approval is waiting.
    pub fn decide(
        &self,
        session: &str,
        approval_id: &str,
        approve: bool,
        reason: Option<String>,
    ) -> HostResult<()> {
        let waiting = {
            let mut table = lock(&self.approvals.0);
            let index = table.iter().position(|a| a.session == session && a.id == approval_id);
            match index {
                Some(index) => table.remove(index),
                None => {
                    let pending: Vec<String> = table
                        .iter()
                        .filter(|a| a.session == session)
                        .map(|a| a.id.clone())
                        .collect();
                    return Err(HostError::Conflict(format!(
                        "no approval `{approval_id}` is waiting in session {session}; waiting: {}",
                        if pending.is_empty() { "none".to_owned() } else { pending.join(", ") }
                    )));
                }
            }
        };
        let decision = if approve { Decision::Approve } else { Decision::Deny(reason) };
        // The approver may have given up meanwhile (an abort); then nothing waits for this.
        let _ = waiting.reply.send(decision);
        Ok(())
    }

    /// Abort the session's turn and calls in flight and stop its processes. Waits (a few
    /// seconds at most) for the aborted turn to be recorded as ended.
    pub async fn abort_session(&self, id: &str) -> HostResult<()> {
        let live = lock(&self.live).get(id).cloned();
        match live {
            Some(live) => {
                self.abort_live(&live).await;
                Ok(())
            }
            // Not live: nothing runs. Still a 404 for a session that does not exist.
            None => self.stored(id).await.map(|_| ()),
        }
    }

    /// Abort every live session of a project; returns how many of them had something to abort
    /// (a turn, a direct call in flight, a running background process). 0 is fine: an idle
    /// project, or one whose sessions are not loaded.
    pub async fn abort_project(&self, project_id: &str) -> HostResult<usize> {
        let sessions: Vec<Arc<Live>> = lock(&self.live)
            .values()
            .filter(|l| l.session.project() == project_id)
            .cloned()
            .collect();
        let busy =
            futures_util::future::join_all(sessions.iter().map(|l| self.abort_live(l))).await;
        Ok(busy.into_iter().filter(|&b| b).count())
    }

    /// The session's background processes (the list_processes tool's structured output).
    pub async fn list_processes(&self, id: &str) -> HostResult<Value> {
        let live = self.live(id).await?;
        if self.parts.registry.get("list_processes").is_none() {
            return Ok(json!({"processes": []}));
        }
        let output = self.internal(&live.session, "list_processes", json!({})).await;
        if output.is_error {
            return Err(HostError::BadRequest(output.joined_text()));
        }
        let text = output.joined_text();
        Ok(output.structured.unwrap_or_else(|| json!({ "text": text })))
    }

    /// Stop one of them (through the stop_process tool). `NotFound` for an unknown process id.
    pub async fn stop_process(&self, id: &str, process_id: &str) -> HostResult<Value> {
        let live = self.live(id).await?;
        if self.parts.registry.get("stop_process").is_none() {
            return Err(HostError::BadRequest(
                "background processes are off (background_processes = false)".into(),
            ));
        }
        let output = self.internal(&live.session, "stop_process", json!({"id": process_id})).await;
        if output.is_error {
            return Err(HostError::NotFound(output.joined_text()));
        }
        Ok(json!({"id": process_id, "text": output.joined_text(), "structured": output.structured}))
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

    /// A call the host makes itself (listing and stopping processes): no events, no records.
    async fn internal(&self, session: &Session, name: &str, args: Value) -> ToolOutput {
        let call = ToolCall::new(fresh_id("host"), name, args);
        match self.parts.registry.dispatch(session, call).await {
            Ok(output) => output,
            Err(err) => ToolOutput::error(format!("hands could not run {name}: {err}")),
        }
    }

    /// Abort what runs in a live session: its calls and turn (the session's abort generation),
    /// then its background processes (stop_process on each running one). True when something
    /// was running.
    async fn abort_live(&self, live: &Live) -> bool {
        let mut busy = live.running().is_some() || live.direct_calls.load(Ordering::SeqCst) > 0;
        live.session.abort();
        if self.parts.registry.get("list_processes").is_some()
            && self.parts.registry.get("stop_process").is_some()
        {
            let list = self.internal(&live.session, "list_processes", json!({})).await;
            let running: Vec<String> = list
                .structured
                .as_ref()
                .and_then(|s| s.get("processes"))
                .and_then(Value::as_array)
                .map(|rows| {
                    rows.iter()
                        .filter(|r| r.get("status").and_then(Value::as_str) == Some("running"))
                        .filter_map(|r| r.get("id").and_then(Value::as_str).map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            busy |= !running.is_empty();
            futures_util::future::join_all(
                running
                    .iter()
                    .map(|pid| self.internal(&live.session, "stop_process", json!({"id": pid}))),
            )
            .await;
        }
        live.wait_turn(Some(ABORT_WAIT)).await;
        busy
    }

    fn info(&self, live: &Live) -> SessionInfo {
        let record = lock(&live.record).clone();
        let mut info = info_of(&record);
        info.mode = live.session.mode().to_string();
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
        mode: record.mode.clone(),
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

/// One turn on its own task.
struct TurnTask {
    parts: HostParts,
    provider: Arc<dyn Provider>,
    live: Arc<Live>,
    turn_id: String,
    text: String,
    cancel: CancellationToken,
    done: watch::Sender<Option<String>>,
}

impl TurnTask {
    async fn run(self) {
        let hub = Arc::clone(&self.live.hub);
        let store = Arc::clone(&self.parts.store);
        let turn_id = self.turn_id.clone();
        let (status, text, error): (String, _, _) =
            match std::panic::AssertUnwindSafe(self.turn()).catch_unwind().await {
                Ok(outcome) => (outcome.reason.as_str().to_owned(), outcome.text, outcome.error),
                Err(_) => (
                    "error".to_owned(),
                    None,
                    Some("hands failed inside the turn (a bug); send the message again".into()),
                ),
            };
        if let Some(message) = error {
            hub.emit(EventKind::Error { turn_id: Some(turn_id.clone()), message }).await;
        }
        if let Err(err) = store.end_turn(&turn_id, &status, now_ms()).await {
            tracing::warn!(turn = %turn_id, %err, "storing the end of a turn");
        }
        // The turn is over before anyone hears so: a client that posts its next message as soon
        // as it sees turn_ended must not find this turn still running.
        {
            let mut state = lock(&self.live.turn);
            if state.running.as_ref().is_some_and(|r| r.id == turn_id) {
                state.running = None;
            }
            state.last_status = Some(status.clone());
        }
        hub.emit(EventKind::TurnEnded { turn_id: turn_id.clone(), reason: status.clone(), text })
            .await;
        self.done.send_replace(Some(status));
    }

    async fn turn(&self) -> turn::Outcome {
        let session = &self.live.session;
        let prompt = SystemPrompt::load(session.root()).await;
        let render = |mode: Mode| prompt.render(mode);
        let recorder = TurnRecorder {
            live: Arc::clone(&self.live),
            hub: Arc::clone(&self.live.hub),
            store: Arc::clone(&self.parts.store),
            session_id: session.id().to_owned(),
            turn_id: Some(self.turn_id.clone()),
            record_ids: Mutex::default(),
        };
        let turn = Turn {
            provider: self.provider.as_ref(),
            registry: &self.parts.registry,
            session,
            turn_id: &self.turn_id,
            cancel: self.cancel.clone(),
            limits: self.parts.config.limits(),
            prompt: &render,
            scope: ToolScope::Mode,
            call_prefix: None,
            observer: &recorder,
        };
        let mut conversation = self.live.conversation.lock().await;
        turn.run(&mut conversation, Message::user(self.text.clone())).await
    }
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
