//! The host's public API: [`Host`], every method front ends call, over the sub-parts of this
//! module (live sessions, event hubs, turn tasks, the approvals and questions waiting on a user).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_core::approval::{ApproverHandle, Decision};
use hands_core::ask::{AskerHandle, NoSuchQuestion, PendingQuestions};
use hands_core::process::{ProcessError, ProcessList, ProcessStopped};
use hands_core::secret::{SecretAskerHandle, SecretValue};
use hands_core::{
    CancellationToken, Mode, ProcessService, Registry, Session, ToolCall, ToolOutput,
};
use hands_store::{SessionRecord, StoreError, StoreResult, TurnRecord};
use serde_json::{Value, json};

use crate::event::EventKind;
use crate::model::Message;
use crate::subagent::SubagentEnv;
use crate::turn;

use super::error::{HostError, HostResult, not_found};
use super::events::Subscription;
use super::ids::{fresh_id, now_ms, valid_id};
use super::live::Live;
use super::lock::lock;
use super::node::{HostOptions, Node};
use super::parts::{HostParts, NewSession, SessionInfo};
use super::secrets::{HostSecretAsker, SecretRequests};
use super::turns::{TurnRecorder, TurnTask};
use super::user::{Approvals, HostApprover, HostAsker};

/// How long an abort waits for the turn it ended to be recorded.
const ABORT_WAIT: Duration = Duration::from_secs(10);

/// The live sessions of one hands process.
pub struct Host {
    pub(super) parts: HostParts,
    pub(super) live: Mutex<HashMap<String, Arc<Live>>>,
    /// Serialises loading sessions from the store (a transcript is repaired once).
    loading: tokio::sync::Mutex<()>,
    pub(super) questions: PendingQuestions,
    pub(super) approvals: Arc<Approvals>,
    secrets: Arc<SecretRequests>,
    /// Fired when the host is dropped: ends the watcher tasks.
    pub(super) shutdown: CancellationToken,
    /// This node: its leases, feeds and background work (`node.rs`, `lifecycle.rs`).
    pub(super) node: Arc<Node>,
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
        Self::open_with(parts, HostOptions::default()).await
    }

    /// [`Host::open`] with `options`: with a cluster, turns left running are not this node's to
    /// end at start (other nodes may run them): the sweep ends those whose node died.
    pub async fn open_with(parts: HostParts, options: HostOptions) -> HostResult<Arc<Self>> {
        let clustered = options.cluster.is_some();
        let abandoned = if clustered {
            Vec::new()
        } else {
            parts.store.abandon_running_turns(now_ms()).await?
        };
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
            secrets: Arc::new(SecretRequests::default()),
            shutdown: CancellationToken::new(),
            node: Arc::new(Node::new(options)),
        })
        .started())
    }

    /// The questions table (front ends that answer by another route, e.g. `POST /vibe/answer`,
    /// may use it directly; [`Host::answer`] is the same).
    pub fn questions(&self) -> &PendingQuestions {
        &self.questions
    }

    /// The live session `id` as a [`Session`] (loaded from the store if needed), for front ends
    /// that run calls themselves.
    pub async fn session(&self, id: &str) -> HostResult<Session> {
        Ok(self.live(id).await?.session().clone())
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
        super::roots::check_root(&root, &[]).map_err(HostError::BadRequest)?;
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
        if self.node.cluster.is_some() {
            // Its lease is taken by the node that runs its first turn.
            return Ok(info_of(&record));
        }
        let store = Arc::clone(&self.parts.store);
        let live = self.activate(record, Vec::new(), None, Value::Array(Vec::new()), store);
        self.evict().await;
        Ok(self.info(&live))
    }

    /// Rename a session and/or switch its mode. A mode switch is refused (`Conflict`) while a
    /// turn runs, and announced with `mode_changed` like a switch by a tool; a title is 1 to
    /// 200 characters after trimming.
    pub async fn update_session(
        &self,
        id: &str,
        title: Option<String>,
        mode: Option<Mode>,
    ) -> HostResult<SessionInfo> {
        let title = match title.map(|t| t.trim().to_owned()) {
            Some(t) if t.is_empty() || t.chars().count() > 200 => {
                return Err(HostError::BadRequest(
                    "title must be 1 to 200 characters (not only spaces)".into(),
                ));
            }
            other => other,
        };
        let live = self.live(id).await?;
        if let Some(mode) = mode
            && mode != live.session().mode()
        {
            if let Some(turn) = live.running() {
                return Err(HostError::Conflict(format!(
                    "turn {turn} is running in session {id}: switch the mode when it has ended,                      or abort it first"
                )));
            }
            live.session().set_mode(mode);
            live.sync().await;
        }
        if let Some(title) = title {
            live.store().update_session(id, None, Some(&title)).await?;
            live.set_title(title);
            live.touch();
        }
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

    /// One session; loads it from the store when not live (resume). With a cluster, a session
    /// this node does not hold is described from the store (its lease stays where it is).
    pub async fn get_session(&self, id: &str) -> HostResult<SessionInfo> {
        if self.node.cluster.is_some() && self.cached(id).is_none() {
            return self.stored_info(id).await;
        }
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
            live.session().abort();
            live.session().close().await;
            live.wait_turn(Some(ABORT_WAIT)).await;
            lock(&self.live).remove(id);
        }
        self.node.forget(id);
        if let Some(feed) = self.node.existing_feed(id) {
            feed.close();
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
            live.session().close().await;
            live.wait_turn(Some(ABORT_WAIT)).await;
        }))
        .await;
    }

    fn info(&self, live: &Live) -> SessionInfo {
        let record = live.record();
        let mut info = info_of(&record);
        info.mode = live.session().mode();
        info.running_turn = live.running();
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

    pub(super) async fn stored_messages(&self, id: &str) -> StoreResult<Vec<Message>> {
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

    /// The live session `id`, loaded from the store when it is not live (resume). With a
    /// cluster this takes the session's lease (`Elsewhere` when another node holds it), and ends
    /// the turns of a node that died holding it before loading.
    pub(super) async fn live(&self, id: &str) -> HostResult<Arc<Live>> {
        if let Some(live) = self.cached(id) {
            return Ok(live);
        }
        let _loading = self.loading.lock().await;
        if let Some(live) = self.cached(id) {
            return Ok(live);
        }
        let record = self.stored(id).await?;
        let store = self.own(id).await?;
        let mut messages = self.stored_messages(id).await?;
        if let Some(fix) = turn::repair(&messages) {
            let value = serde_json::to_value(&fix).unwrap_or(Value::Null);
            store.append_message(id, None, value).await?;
            messages.push(fix);
        }
        let last_status = store.turns(id).await?.last().map(|t| t.status.clone());
        let todos = store.todos(id).await?;
        let live = self.activate(record, messages, last_status, todos, store);
        self.evict().await;
        Ok(live)
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
        store: Arc<dyn hands_store::Store>,
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
        let hub = Arc::new(self.hub(&session, &store));
        session.insert_extension(AskerHandle(Arc::new(HostAsker::new(
            Arc::clone(&hub),
            self.questions.clone(),
        ))));
        session.insert_extension(SecretAskerHandle(Arc::new(HostSecretAsker::new(
            Arc::clone(&hub),
            Arc::clone(&self.secrets),
        ))));
        session.insert_extension(ApproverHandle(Arc::new(HostApprover::new(
            Arc::clone(&hub),
            Arc::clone(&self.approvals),
        ))));
        if let Some(provider) = &self.parts.provider {
            SubagentEnv {
                provider: Arc::clone(provider),
                registry: Arc::clone(&self.parts.registry),
                limits: self.parts.config.subagent_limits(),
                source: crate::subagent::ModelSource::Configured,
            }
            .install(&session);
        }
        let live = Arc::new(Live::new(session.clone(), hub, store, record, messages, last_status));
        live.used(self.node.tick());
        map.insert(session.id().to_owned(), Arc::clone(&live));
        drop(map);
        self.watch(&live);
        live
    }

    /// Follow the session's mode and todo list into events and the store, and the registry's
    /// tool list into `tools_changed` events, until the session closes (or the host is dropped).
    fn watch(&self, live: &Arc<Live>) {
        let stop = self.shutdown.child_token();
        let closed = live.session().closed_token().clone();
        let mut modes = live.session().mode_changes();
        modes.borrow_and_update();
        let mut todos = crate::todos(live.session());
        todos.borrow_and_update();
        let registry = Arc::clone(&self.parts.registry);
        let mut versions = registry.subscribe();
        versions.borrow_and_update();
        let names = |registry: &Registry, mode: Mode| -> Vec<String> {
            registry.list(mode).into_iter().map(|spec| spec.name).collect()
        };
        let mut announced = names(&registry, live.session().mode());
        let live = Arc::downgrade(live);
        tokio::spawn(async move {
            loop {
                let tools_changed = tokio::select! {
                    () = stop.cancelled() => break,
                    () = closed.cancelled() => break,
                    changed = modes.changed() => match changed {
                        Ok(()) => { modes.borrow_and_update(); false }
                        Err(_) => break,
                    },
                    changed = todos.changed() => match changed {
                        Ok(()) => { todos.borrow_and_update(); false }
                        Err(_) => break,
                    },
                    changed = versions.changed() => match changed {
                        Ok(()) => true,
                        Err(_) => break,
                    },
                };
                let Some(live) = live.upgrade() else { break };
                if !tools_changed {
                    live.sync().await;
                    continue;
                }
                let version = *versions.borrow_and_update();
                let now = names(&registry, live.session().mode());
                if now != announced {
                    announced.clone_from(&now);
                    live.emit(EventKind::ToolsChanged { version, tools: now }).await;
                }
            }
        });
    }

    /// Events after `after` (0: from the start), then live ones. See the module documentation for
    /// why nothing is lost or repeated between the two.
    pub async fn subscribe(&self, id: &str, after: u64) -> HostResult<Subscription> {
        // Alone, a subscription resumes the session (as it always did); with other nodes it
        // only reads, wherever the session runs.
        let feed = match self.cached(id) {
            Some(live) => Arc::clone(live.feed()),
            None if self.node.cluster.is_none() => Arc::clone(self.live(id).await?.feed()),
            None => self.node.feed(id, &self.parts.store),
        };
        feed.subscribe(after).await.map_err(|err| match err {
            StoreError::NotFound(_) => not_found(id),
            other => other.into(),
        })
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

    /// Give the secret request `request_id` of `session` its value (never stored, logged or sent
    /// anywhere but to the waiting tool); the secret's name. `NotFound` when no such request
    /// waits, `BadRequest` for a value too short to be a secret (the request still waits).
    pub fn give_secret(
        &self,
        session: &str,
        request_id: &str,
        value: SecretValue,
    ) -> HostResult<String> {
        self.secrets.give(session, request_id, value)
    }

    /// End the secret request `request_id` of `session` without a value (the user declined);
    /// the secret's name. `NotFound` when no such request waits.
    pub fn decline_secret(&self, session: &str, request_id: &str) -> HostResult<String> {
        self.secrets.decline(session, request_id)
    }

    /// Grant or deny a pending approval. `Conflict` when no such approval is waiting.
    pub fn decide(
        &self,
        session: &str,
        approval_id: &str,
        approve: bool,
        reason: Option<String>,
    ) -> HostResult<()> {
        let decision = if approve { Decision::Approve } else { Decision::Deny(reason) };
        self.decide_with(session, approval_id, decision)
    }

    /// Settle a pending approval with `decision` ([`Decision::ApproveForSession`] allows the
    /// tool for the rest of the session). `Conflict` when no such approval is waiting.
    pub fn decide_with(
        &self,
        session: &str,
        approval_id: &str,
        decision: Decision,
    ) -> HostResult<()> {
        let waiting = self.approvals.take(session, approval_id).map_err(|pending| {
            HostError::Conflict(format!(
                "no approval `{approval_id}` is waiting in session {session}; waiting: {}",
                if pending.is_empty() { "none".to_owned() } else { pending.join(", ") }
            ))
        })?;
        // The approver may have given up meanwhile (an abort); then nothing waits for this.
        waiting.reply(decision);
        Ok(())
    }

    /// Start a turn with this user message; returns the turn id at once. `Conflict` when a turn
    /// is running, `NoModel` without a provider.
    pub async fn post_message(&self, id: &str, text: String) -> HostResult<String> {
        if self.node.draining() {
            return Err(HostError::Draining);
        }
        let live = self.live(id).await?;
        let Some(provider) = self.parts.provider.clone() else { return Err(HostError::NoModel) };
        if text.trim().is_empty() {
            return Err(HostError::BadRequest("the message is empty".into()));
        }
        let turn_id = fresh_id("turn");
        let (done, cancel) = live.start_turn(&turn_id).map_err(|running| {
            HostError::Conflict(format!(
                "turn {running} is still running in session {id}: wait for it to end, or abort it"
            ))
        })?;
        let started = async {
            live.store()
                .start_turn(TurnRecord {
                    id: turn_id.clone(),
                    session_id: id.to_owned(),
                    status: "running".into(),
                    user_message: text.clone(),
                    started_at_ms: now_ms(),
                    ended_at_ms: None,
                })
                .await?;
            if live.untitled() {
                // The title is listed and shown everywhere: never a stored value in it.
                let title = title_of(&hands_core::redact::text(&text));
                live.store().update_session(id, None, Some(&title)).await?;
                live.set_title(title);
            }
            StoreResult::Ok(())
        };
        if let Err(err) = started.await {
            live.cancel_turn(&turn_id);
            if matches!(err, StoreError::Fenced(_)) {
                self.node.forget(id);
            }
            return Err(err.into());
        }
        live.touch();
        live.emit(EventKind::TurnStarted { turn_id: turn_id.clone(), message: text.clone() }).await;
        TurnTask::new(self.parts.clone(), provider, live, turn_id.clone(), text, done, cancel)
            .spawn();
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

    /// A direct tool call for clients that run their own loop; `turn_id` scopes de-duplication.
    /// It emits the same events and records as a call of the loop.
    pub async fn call_tool(
        &self,
        id: &str,
        turn_id: Option<String>,
        name: &str,
        args: Value,
    ) -> HostResult<ToolOutput> {
        // An empty turn id is no turn (its events carry none, it scopes no de-duplication).
        let turn_id = turn_id.filter(|turn| !turn.is_empty());
        let live = self.live(id).await?;
        let call_id = fresh_id("call");
        let recorder =
            TurnRecorder::new(Arc::clone(&live), Arc::clone(live.store()), turn_id.clone());
        recorder.started(&call_id, name, &args).await;
        let started = std::time::Instant::now();
        let call = ToolCall { id: call_id.clone(), name: name.to_owned(), args, turn: turn_id };
        let in_flight = live.direct_call();
        let output = match self.parts.registry.dispatch(live.session(), call).await {
            Ok(output) => output,
            Err(err) => ToolOutput::error(format!("hands could not run {name}: {err}")),
        };
        drop(in_flight);
        recorder.finished(&call_id, name, &output, started.elapsed()).await;
        Ok(output)
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
            .filter(|l| l.session().project() == project_id)
            .cloned()
            .collect();
        let busy =
            futures_util::future::join_all(sessions.iter().map(|l| self.abort_live(l))).await;
        Ok(busy.into_iter().filter(|&b| b).count())
    }

    /// The session's background processes (none when background processes are off).
    pub async fn list_processes(&self, id: &str) -> HostResult<ProcessList> {
        let live = self.live(id).await?;
        Ok(match self.processes() {
            Some(processes) => processes.list(live.session()).await,
            None => ProcessList::default(),
        })
    }

    /// The last `lines` lines a background process printed (the model's read cursor does not
    /// move), for front ends that tail it.
    pub async fn process_output(
        &self,
        id: &str,
        process_id: &str,
        lines: usize,
    ) -> HostResult<String> {
        let live = self.live(id).await?;
        let Some(processes) = self.processes() else {
            return Err(HostError::BadRequest(
                "background processes are off (background_processes = false)".into(),
            ));
        };
        processes.output(live.session(), process_id, lines).await.map_err(|err| match err {
            ProcessError::NotFound(message) => HostError::NotFound(message),
        })
    }

    /// Stop one of them. `NotFound` for an unknown process id.
    pub async fn stop_process(&self, id: &str, process_id: &str) -> HostResult<ProcessStopped> {
        let live = self.live(id).await?;
        let Some(processes) = self.processes() else {
            return Err(HostError::BadRequest(
                "background processes are off (background_processes = false)".into(),
            ));
        };
        processes.stop(live.session(), process_id).await.map_err(|err| match err {
            ProcessError::NotFound(message) => HostError::NotFound(message),
        })
    }

    /// The process service the tools installed, if background processes are on.
    fn processes(&self) -> Option<Arc<dyn ProcessService>> {
        self.parts.registry.service::<Arc<dyn ProcessService>>()
    }

    /// Abort what runs in a live session: its calls and turn (the session's abort generation),
    /// then its background processes (each running one stopped). True when something
    /// was running.
    async fn abort_live(&self, live: &Live) -> bool {
        let mut busy = live.busy();
        live.session().abort();
        if let Some(processes) = self.processes() {
            busy |= processes.stop_running(live.session()).await > 0;
        }
        live.wait_turn(Some(ABORT_WAIT)).await;
        busy
    }
}

pub(super) fn info_of(record: &SessionRecord) -> SessionInfo {
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
}
