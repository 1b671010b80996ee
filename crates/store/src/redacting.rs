//! A [`Store`] that replaces secrets before anything reaches the backend: session titles, the
//! user's messages (a key pasted by the user too), every conversation message, tool calls'
//! arguments and results, todos and events pass through the installed `hands_core::redact`
//! engine. [`open_store`](crate::open_store) wraps every backend in it; reads pass through.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::records::{
    EventRecord, MessageRecord, ProjectRecord, SessionRecord, ToolCallRecord, TurnRecord,
};
use crate::store::{BoxFuture, Store, StoreResult};

/// `inner`, with every write redacted.
pub struct Redacting(pub Arc<dyn Store>);

fn text(s: &str) -> Cow<'_, str> {
    hands_core::redact::text(s)
}

fn json(mut value: Value) -> Value {
    hands_core::redact::json(&mut value);
    value
}

fn owned(s: String) -> String {
    match text(&s) {
        Cow::Borrowed(_) => s,
        Cow::Owned(clean) => clean,
    }
}

impl Store for Redacting {
    fn create_session(&self, mut session: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        session.title = session.title.map(owned);
        self.0.create_session(session)
    }

    fn get_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<SessionRecord>> {
        self.0.get_session(id)
    }

    fn list_sessions(&self) -> BoxFuture<'_, StoreResult<Vec<SessionRecord>>> {
        self.0.list_sessions()
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        mode: Option<&'a str>,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let title = title.map(text);
            self.0.update_session(id, mode, title.as_deref()).await
        })
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.0.delete_session(id)
    }

    fn list_projects(&self) -> BoxFuture<'_, StoreResult<Vec<ProjectRecord>>> {
        self.0.list_projects()
    }

    fn start_turn(&self, mut turn: TurnRecord) -> BoxFuture<'_, StoreResult<()>> {
        turn.user_message = owned(turn.user_message);
        self.0.start_turn(turn)
    }

    fn end_turn<'a>(
        &'a self,
        id: &'a str,
        status: &'a str,
        ended_at_ms: i64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.0.end_turn(id, status, ended_at_ms)
    }

    fn turns<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<TurnRecord>>> {
        self.0.turns(session_id)
    }

    fn abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Vec<TurnRecord>>> {
        self.0.abandon_running_turns(ended_at_ms)
    }

    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: Option<&'a str>,
        message: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        self.0.append_message(session_id, turn_id, json(message))
    }

    fn messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<MessageRecord>>> {
        self.0.messages(session_id)
    }

    fn truncate_messages<'a>(
        &'a self,
        session_id: &'a str,
        after_seq: u64,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        self.0.truncate_messages(session_id, after_seq)
    }

    fn start_tool_call(&self, mut call: ToolCallRecord) -> BoxFuture<'_, StoreResult<()>> {
        call.args = json(call.args);
        call.result = call.result.map(json);
        self.0.start_tool_call(call)
    }

    fn finish_tool_call<'a>(
        &'a self,
        id: &'a str,
        result: Value,
        is_error: bool,
        duration_ms: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.0.finish_tool_call(id, json(result), is_error, duration_ms)
    }

    fn tool_calls<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<ToolCallRecord>>> {
        self.0.tool_calls(session_id)
    }

    fn set_todos<'a>(
        &'a self,
        session_id: &'a str,
        todos: Value,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.0.set_todos(session_id, json(todos))
    }

    fn todos<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Value>> {
        self.0.todos(session_id)
    }

    fn append_event<'a>(
        &'a self,
        session_id: &'a str,
        at_ms: i64,
        data: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        self.0.append_event(session_id, at_ms, json(data))
    }

    fn events_after<'a>(
        &'a self,
        session_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<EventRecord>>> {
        self.0.events_after(session_id, after, limit)
    }
}
