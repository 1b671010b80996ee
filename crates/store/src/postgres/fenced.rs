//! [`Fenced`]: the store as a lease holder sees it. Every write to the lease's session runs with
//! the lease's fencing token (see `ops`), so a node that lost the lease — paused past its expiry,
//! cut off from the database — gets `StoreError::Fenced` and nothing it does lands. Reads, and
//! writes to other sessions, pass through.

use std::sync::Arc;

use serde_json::Value;

use super::ops::Fence;
use super::store::PostgresStore;
use crate::{
    BoxFuture, EventRecord, MessageRecord, ProjectRecord, SessionRecord, Store, StoreResult,
    ToolCallRecord, TurnRecord,
};

/// `store` under `fence`.
pub(crate) struct Fenced {
    store: Arc<PostgresStore>,
    fence: Fence,
}

impl Fenced {
    pub(crate) fn new(store: Arc<PostgresStore>, fence: Fence) -> Self {
        Self { store, fence }
    }

    /// The fence, for writes to `session`.
    fn on(&self, session: &str) -> Option<&Fence> {
        (self.fence.session_id == session).then_some(&self.fence)
    }
}

impl Store for Fenced {
    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        self.store.create_session(session)
    }

    fn get_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<SessionRecord>> {
        self.store.get_session(id)
    }

    fn list_sessions(&self) -> BoxFuture<'_, StoreResult<Vec<SessionRecord>>> {
        self.store.list_sessions()
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        mode: Option<&'a str>,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.store.op_update_session(id, mode, title, self.on(id)))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.store.delete_session(id)
    }

    fn list_projects(&self) -> BoxFuture<'_, StoreResult<Vec<ProjectRecord>>> {
        self.store.list_projects()
    }

    fn start_turn(&self, turn: TurnRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let fence = self.on(&turn.session_id).cloned();
            self.store.op_start_turn(turn, fence.as_ref()).await
        })
    }

    fn end_turn<'a>(
        &'a self,
        id: &'a str,
        status: &'a str,
        ended_at_ms: i64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(self.store.op_end_turn(id, status, ended_at_ms, Some(&self.fence)))
    }

    fn turns<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<TurnRecord>>> {
        self.store.turns(session_id)
    }

    fn abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Vec<TurnRecord>>> {
        self.store.abandon_running_turns(ended_at_ms)
    }

    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: Option<&'a str>,
        message: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move {
            self.store.op_append_message(session_id, turn_id, &message, self.on(session_id)).await
        })
    }

    fn messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<MessageRecord>>> {
        self.store.messages(session_id)
    }

    fn truncate_messages<'a>(
        &'a self,
        session_id: &'a str,
        after_seq: u64,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(self.store.op_truncate_messages(session_id, after_seq, self.on(session_id)))
    }

    fn start_tool_call(&self, call: ToolCallRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let fence = self.on(&call.session_id).cloned();
            self.store.op_start_tool_call(call, fence.as_ref()).await
        })
    }

    fn finish_tool_call<'a>(
        &'a self,
        id: &'a str,
        result: Value,
        is_error: bool,
        duration_ms: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            self.store
                .op_finish_tool_call(id, &result, is_error, duration_ms, Some(&self.fence))
                .await
        })
    }

    fn tool_calls<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<ToolCallRecord>>> {
        self.store.tool_calls(session_id)
    }

    fn set_todos<'a>(
        &'a self,
        session_id: &'a str,
        todos: Value,
    ) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(
            async move { self.store.op_set_todos(session_id, &todos, self.on(session_id)).await },
        )
    }

    fn todos<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Value>> {
        self.store.todos(session_id)
    }

    fn append_event<'a>(
        &'a self,
        session_id: &'a str,
        at_ms: i64,
        data: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(async move {
            self.store.op_append_event(session_id, at_ms, &data, self.on(session_id)).await
        })
    }

    fn events_after<'a>(
        &'a self,
        session_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<EventRecord>>> {
        self.store.events_after(session_id, after, limit)
    }
}
