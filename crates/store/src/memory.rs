//! [`MemoryStore`]: the [`Store`] contract kept in process memory, for tests and `--ephemeral`
//! runs. One mutex guards everything and is never held across an await, so every call is atomic
//! and sequence numbers are gap-free exactly as in SQLite.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use crate::clock::now_ms;
use crate::{
    BoxFuture, EventRecord, MessageRecord, ProjectRecord, SessionRecord, Store, StoreError,
    StoreResult, ToolCallRecord, TurnRecord,
};

/// Sessions in memory, gone with the process.
#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    projects: HashMap<String, ProjectRecord>,
    sessions: HashMap<String, Session>,
    /// Turn id → its session (turn ids are unique across sessions).
    turn_sessions: HashMap<String, String>,
    /// Tool call id → its session.
    call_sessions: HashMap<String, String>,
}

/// A session and everything of it, each list in the order the trait returns it.
struct Session {
    record: SessionRecord,
    turns: Vec<TurnRecord>,
    messages: Vec<MessageRecord>,
    /// The highest message seq given (truncated messages' numbers are not given again).
    last_message_seq: u64,
    tool_calls: Vec<ToolCallRecord>,
    todos: Option<Value>,
    /// Event `i` has id `i + 1`.
    events: Vec<EventRecord>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Every change below is complete before anything can panic, so a poisoned lock still
        // guards consistent data.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A future that runs `f` on the state under the lock when first polled (like the SQLite
    /// store's, it does nothing until then).
    fn with<'a, T: Send + 'a>(
        &'a self,
        f: impl FnOnce(&mut State) -> StoreResult<T> + Send + 'a,
    ) -> BoxFuture<'a, StoreResult<T>> {
        Box::pin(async move { f(&mut self.state()) })
    }
}

fn not_found(what: &str, id: &str) -> StoreError {
    StoreError::NotFound(format!("{what} {id}"))
}

impl State {
    fn session(&self, id: &str) -> StoreResult<&Session> {
        self.sessions.get(id).ok_or_else(|| not_found("session", id))
    }

    /// The session, marked changed now.
    fn touch(&mut self, id: &str) -> StoreResult<&mut Session> {
        let session = self.sessions.get_mut(id).ok_or_else(|| not_found("session", id))?;
        session.record.updated_at_ms = session.record.updated_at_ms.max(now_ms());
        Ok(session)
    }
}

/// Insert keeping `list` sorted by `key`, after any equal keys (so ties stay in recorded order).
fn insert_sorted<T>(list: &mut Vec<T>, item: T, key: impl Fn(&T) -> i64) {
    let at = list.partition_point(|x| key(x) <= key(&item));
    list.insert(at, item);
}

impl Store for MemoryStore {
    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.with(move |state| {
            if state.sessions.contains_key(&session.id) {
                return Err(StoreError::Exists(format!("session {}", session.id)));
            }
            let seen = session.created_at_ms;
            state
                .projects
                .entry(session.project_id.clone())
                .and_modify(|p| {
                    p.root.clone_from(&session.root);
                    p.first_seen_ms = p.first_seen_ms.min(seen);
                    p.last_seen_ms = p.last_seen_ms.max(seen);
                })
                .or_insert_with(|| ProjectRecord {
                    id: session.project_id.clone(),
                    root: session.root.clone(),
                    first_seen_ms: seen,
                    last_seen_ms: seen,
                });
            let session = Session {
                record: session,
                turns: Vec::new(),
                messages: Vec::new(),
                last_message_seq: 0,
                tool_calls: Vec::new(),
                todos: None,
                events: Vec::new(),
            };
            state.sessions.insert(session.record.id.clone(), session);
            Ok(())
        })
    }

    fn get_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<SessionRecord>> {
        self.with(move |state| Ok(state.session(id)?.record.clone()))
    }

    fn list_sessions(&self) -> BoxFuture<'_, StoreResult<Vec<SessionRecord>>> {
        self.with(move |state| {
            let mut all: Vec<SessionRecord> =
                state.sessions.values().map(|s| s.record.clone()).collect();
            all.sort_by(|a, b| b.updated_at_ms.cmp(&a.updated_at_ms).then_with(|| a.id.cmp(&b.id)));
            Ok(all)
        })
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        mode: Option<&'a str>,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.with(move |state| {
            let record = &mut state.touch(id)?.record;
            if let Some(mode) = mode {
                record.mode = mode.to_owned();
            }
            if let Some(title) = title {
                record.title = Some(title.to_owned());
            }
            Ok(())
        })
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.with(move |state| {
            let session = state.sessions.remove(id).ok_or_else(|| not_found("session", id))?;
            for turn in &session.turns {
                state.turn_sessions.remove(&turn.id);
            }
            for call in &session.tool_calls {
                state.call_sessions.remove(&call.id);
            }
            Ok(())
        })
    }

    fn list_projects(&self) -> BoxFuture<'_, StoreResult<Vec<ProjectRecord>>> {
        self.with(move |state| {
            let mut all: Vec<ProjectRecord> = state.projects.values().cloned().collect();
            all.sort_by(|a, b| b.last_seen_ms.cmp(&a.last_seen_ms).then_with(|| a.id.cmp(&b.id)));
            Ok(all)
        })
    }

    fn start_turn(&self, turn: TurnRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.with(move |state| {
            state.session(&turn.session_id)?;
            if state.turn_sessions.contains_key(&turn.id) {
                return Err(StoreError::Exists(format!("turn {}", turn.id)));
            }
            state.turn_sessions.insert(turn.id.clone(), turn.session_id.clone());
            let session = state.touch(&turn.session_id)?;
            insert_sorted(&mut session.turns, turn, |t| t.started_at_ms);
            Ok(())
        })
    }

    fn end_turn<'a>(
        &'a self,
        id: &'a str,
        status: &'a str,
        ended_at_ms: i64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.with(move |state| {
            let session_id = state.turn_sessions.get(id).ok_or_else(|| not_found("turn", id))?;
            let session_id = session_id.clone();
            let session = state.touch(&session_id)?;
            let turn = session.turns.iter_mut().find(|t| t.id == id);
            let turn = turn.ok_or_else(|| not_found("turn", id))?;
            turn.status = status.to_owned();
            turn.ended_at_ms = Some(ended_at_ms);
            Ok(())
        })
    }

    fn turns<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<TurnRecord>>> {
        self.with(move |state| Ok(state.session(session_id)?.turns.clone()))
    }

    fn abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Vec<TurnRecord>>> {
        self.with(move |state| {
            let mut abandoned = Vec::new();
            for session in state.sessions.values_mut() {
                for turn in session.turns.iter_mut().filter(|t| t.status == "running") {
                    turn.status = "aborted".to_owned();
                    turn.ended_at_ms = Some(ended_at_ms);
                    abandoned.push(turn.clone());
                }
            }
            abandoned.sort_by(|a, b| (a.started_at_ms, &a.id).cmp(&(b.started_at_ms, &b.id)));
            Ok(abandoned)
        })
    }

    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: Option<&'a str>,
        message: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        self.with(move |state| {
            let session = state.touch(session_id)?;
            session.last_message_seq += 1;
            let seq = session.last_message_seq;
            session.messages.push(MessageRecord {
                seq,
                session_id: session_id.to_owned(),
                turn_id: turn_id.map(str::to_owned),
                message,
            });
            Ok(seq)
        })
    }

    fn messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<MessageRecord>>> {
        self.with(move |state| Ok(state.session(session_id)?.messages.clone()))
    }

    fn truncate_messages<'a>(
        &'a self,
        session_id: &'a str,
        after_seq: u64,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        self.with(move |state| {
            let session = state.touch(session_id)?;
            let before = session.messages.len();
            session.messages.retain(|m| m.seq <= after_seq);
            Ok((before - session.messages.len()) as u64)
        })
    }

    fn start_tool_call(&self, call: ToolCallRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.with(move |state| {
            state.session(&call.session_id)?;
            if state.call_sessions.contains_key(&call.id) {
                return Err(StoreError::Exists(format!("tool call {}", call.id)));
            }
            state.call_sessions.insert(call.id.clone(), call.session_id.clone());
            let session = state.touch(&call.session_id)?;
            insert_sorted(&mut session.tool_calls, call, |c| c.started_at_ms);
            Ok(())
        })
    }

    fn finish_tool_call<'a>(
        &'a self,
        id: &'a str,
        result: Value,
        is_error: bool,
        duration_ms: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.with(move |state| {
            let session_id =
                state.call_sessions.get(id).ok_or_else(|| not_found("tool call", id))?;
            let session_id = session_id.clone();
            let session = state.touch(&session_id)?;
            let call = session.tool_calls.iter_mut().find(|c| c.id == id);
            let call = call.ok_or_else(|| not_found("tool call", id))?;
            call.result = Some(result);
            call.is_error = Some(is_error);
            call.duration_ms = Some(duration_ms);
            Ok(())
        })
    }

    fn tool_calls<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<ToolCallRecord>>> {
        self.with(move |state| Ok(state.session(session_id)?.tool_calls.clone()))
    }

    fn set_todos<'a>(
        &'a self,
        session_id: &'a str,
        todos: Value,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.with(move |state| {
            state.touch(session_id)?.todos = Some(todos);
            Ok(())
        })
    }

    fn todos<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Value>> {
        self.with(move |state| {
            let todos = state.session(session_id)?.todos.clone();
            Ok(todos.unwrap_or_else(|| Value::Array(Vec::new())))
        })
    }

    fn append_event<'a>(
        &'a self,
        session_id: &'a str,
        at_ms: i64,
        data: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        self.with(move |state| {
            let session = state.touch(session_id)?;
            let id = session.events.len() as u64 + 1;
            session.events.push(EventRecord { id, session_id: session_id.to_owned(), at_ms, data });
            Ok(id)
        })
    }

    fn events_after<'a>(
        &'a self,
        session_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<EventRecord>>> {
        self.with(move |state| {
            let events = &state.session(session_id)?.events;
            let start = usize::try_from(after).unwrap_or(usize::MAX).min(events.len());
            Ok(events[start..].iter().take(limit).cloned().collect())
        })
    }
}
