//! The queries behind each [`Store`](crate::Store) method, each one statement (one round trip,
//! atomic) where it can be. Writes take an optional [`Fence`]: with one, the statement also locks
//! the session's lease row (`FOR SHARE`) and writes only while the lease still carries that
//! token, so a takeover (which updates the row) either waits for the write to commit or makes
//! it find nothing to update. A write that changes nothing is then explained by [`diagnose`]:
//! the session is gone (`NotFound`), the id is taken (`Exists`) or the lease moved (`Fenced`).

use serde_json::Value;
use tokio_postgres::Row;

use super::error::backend;
use super::sql::*;
use super::store::PostgresStore;
use crate::clock::now_ms;
use crate::{
    EventRecord, MessageRecord, ProjectRecord, SessionRecord, StoreError, StoreResult,
    ToolCallRecord, TurnRecord,
};

/// A lease a write must still hold: its session and fencing token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The session whose lease it is.
    pub session_id: String,
    /// The token the lease was granted with.
    pub token: i64,
}

fn json_text(value: &Value) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

fn json_of(text: &str) -> StoreResult<Value> {
    serde_json::from_str(text).map_err(|e| StoreError::Backend(format!("stored JSON: {e}")))
}

/// Saturate into BIGINT (ids and limits past `i64::MAX` mean "all").
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn uint(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn not_found(what: &str, id: &str) -> StoreError {
    StoreError::NotFound(format!("{what} {id}"))
}

fn session_row(row: &Row) -> SessionRecord {
    SessionRecord {
        id: row.get(0),
        project_id: row.get(1),
        root: row.get(2),
        mode: row.get(3),
        title: row.get(4),
        created_at_ms: row.get(5),
        updated_at_ms: row.get(6),
    }
}

fn turn_row(row: &Row) -> TurnRecord {
    TurnRecord {
        id: row.get(0),
        session_id: row.get(1),
        status: row.get(2),
        user_message: row.get(3),
        started_at_ms: row.get(4),
        ended_at_ms: row.get(5),
    }
}

fn tool_call_row(row: &Row) -> StoreResult<ToolCallRecord> {
    Ok(ToolCallRecord {
        id: row.get(0),
        session_id: row.get(1),
        turn_id: row.get(2),
        name: row.get(3),
        args: json_of(row.get(4))?,
        result: row.get::<_, Option<&str>>(5).map(json_of).transpose()?,
        is_error: row.get(6),
        started_at_ms: row.get(7),
        duration_ms: row.get::<_, Option<i64>>(8).map(uint),
    })
}

impl PostgresStore {
    /// Why a write to `session` changed nothing: gone, or (with a fence) the lease moved; `None`
    /// when neither (the caller's own reason, e.g. `Exists`, applies).
    async fn diagnose(
        &self,
        op: &str,
        session: &str,
        fence: Option<&Fence>,
    ) -> StoreResult<Option<StoreError>> {
        let mut conn = self.conn(op).await?;
        let token = fence.map(|f| f.token).unwrap_or(-1);
        let row = conn
            .query(DIAGNOSE, &[&session, &token])
            .await
            .map_err(|e| backend(op, &e))?
            .pop()
            .ok_or_else(|| StoreError::Backend(format!("{op}: no answer")))?;
        let (exists, held): (bool, bool) = (row.get(0), row.get(1));
        Ok(if !exists {
            Some(not_found("session", session))
        } else if fence.is_some() && !held {
            Some(fenced(session))
        } else {
            None
        })
    }

    async fn require_session(&self, op: &str, session: &str) -> StoreResult<()> {
        let mut conn = self.conn(op).await?;
        let rows = conn.query(SESSION_EXISTS, &[&session]).await.map_err(|e| backend(op, &e))?;
        if rows.is_empty() { Err(not_found("session", session)) } else { Ok(()) }
    }

    pub(super) async fn op_create_session(&self, s: SessionRecord) -> StoreResult<()> {
        let op = "create_session";
        let mut conn = self.conn(op).await?;
        let rows = conn
            .query(
                CREATE_SESSION,
                &[
                    &s.id,
                    &s.project_id,
                    &s.root,
                    &s.mode,
                    &s.title,
                    &s.created_at_ms,
                    &s.updated_at_ms,
                ],
            )
            .await
            .map_err(|e| backend(op, &e))?;
        let inserted: i64 = rows.first().map_or(0, |r| r.get(0));
        if inserted == 0 {
            return Err(StoreError::Exists(format!("session {}", s.id)));
        }
        Ok(())
    }

    pub(super) async fn op_get_session(&self, id: &str) -> StoreResult<SessionRecord> {
        let mut conn = self.conn("get_session").await?;
        let rows = conn.query(GET_SESSION, &[&id]).await.map_err(|e| backend("get_session", &e))?;
        rows.first().map(session_row).ok_or_else(|| not_found("session", id))
    }

    pub(super) async fn op_list_sessions(&self) -> StoreResult<Vec<SessionRecord>> {
        let mut conn = self.conn("list_sessions").await?;
        let rows =
            conn.query(LIST_SESSIONS, &[]).await.map_err(|e| backend("list_sessions", &e))?;
        Ok(rows.iter().map(session_row).collect())
    }

    pub(super) async fn op_update_session(
        &self,
        id: &str,
        mode: Option<&str>,
        title: Option<&str>,
        fence: Option<&Fence>,
    ) -> StoreResult<()> {
        let op = "update_session";
        let token = fence.map(|f| f.token);
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(UPDATE_SESSION, &[&id, &mode, &title, &now_ms(), &token])
                .await
                .map_err(|e| backend(op, &e))?
        };
        if rows.is_empty() {
            return Err(self.diagnose(op, id, fence).await?.unwrap_or_else(|| fenced(id)));
        }
        Ok(())
    }

    pub(super) async fn op_delete_session(&self, id: &str) -> StoreResult<()> {
        let op = "delete_session";
        let mut conn = self.conn(op).await?;
        let rows = conn.query(DELETE_SESSION, &[&id]).await.map_err(|e| backend(op, &e))?;
        if rows.is_empty() {
            return Err(not_found("session", id));
        }
        // Other nodes' streams of the session end (an event id of 0 means "gone").
        if let Err(err) = conn.query(NOTIFY_GONE, &[&id]).await {
            tracing::debug!(%err, "announcing a deleted session");
        }
        Ok(())
    }

    pub(super) async fn op_list_projects(&self) -> StoreResult<Vec<ProjectRecord>> {
        let mut conn = self.conn("list_projects").await?;
        let rows =
            conn.query(LIST_PROJECTS, &[]).await.map_err(|e| backend("list_projects", &e))?;
        Ok(rows
            .iter()
            .map(|r| ProjectRecord {
                id: r.get(0),
                root: r.get(1),
                first_seen_ms: r.get(2),
                last_seen_ms: r.get(3),
            })
            .collect())
    }

    pub(super) async fn op_start_turn(
        &self,
        t: TurnRecord,
        fence: Option<&Fence>,
    ) -> StoreResult<()> {
        let op = "start_turn";
        let token = fence.map(|f| f.token);
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(
                START_TURN,
                &[
                    &t.id,
                    &t.session_id,
                    &t.status,
                    &t.user_message,
                    &t.started_at_ms,
                    &t.ended_at_ms,
                    &now_ms(),
                    &token,
                ],
            )
            .await
            .map_err(|e| backend(op, &e))?
        };
        if rows.is_empty() {
            let why = self.diagnose(op, &t.session_id, fence).await?;
            return Err(why.unwrap_or_else(|| StoreError::Exists(format!("turn {}", t.id))));
        }
        Ok(())
    }

    pub(super) async fn op_end_turn(
        &self,
        id: &str,
        status: &str,
        ended_at_ms: i64,
        fence: Option<&Fence>,
    ) -> StoreResult<()> {
        let op = "end_turn";
        let (token, session) = (fence.map(|f| f.token), fence.map(|f| f.session_id.as_str()));
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(END_TURN, &[&id, &status, &ended_at_ms, &now_ms(), &token, &session])
                .await
                .map_err(|e| backend(op, &e))?
        };
        if rows.is_empty() {
            return Err(match fence {
                Some(f) => self.diagnose(op, &f.session_id, fence).await?.unwrap_or_else(|| {
                    StoreError::NotFound(format!("turn {id} (of session {})", f.session_id))
                }),
                None => not_found("turn", id),
            });
        }
        Ok(())
    }

    pub(super) async fn op_turns(&self, session: &str) -> StoreResult<Vec<TurnRecord>> {
        let rows = {
            let mut conn = self.conn("turns").await?;
            conn.query(TURNS, &[&session]).await.map_err(|e| backend("turns", &e))?
        };
        if rows.is_empty() {
            self.require_session("turns", session).await?;
        }
        Ok(rows.iter().map(turn_row).collect())
    }

    pub(super) async fn op_abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> StoreResult<Vec<TurnRecord>> {
        let op = "abandon_running_turns";
        let mut conn = self.conn(op).await?;
        let rows = conn.query(ABANDON, &[&ended_at_ms]).await.map_err(|e| backend(op, &e))?;
        let mut turns: Vec<TurnRecord> = rows.iter().map(turn_row).collect();
        turns.sort_by(|a, b| (a.started_at_ms, &a.id).cmp(&(b.started_at_ms, &b.id)));
        Ok(turns)
    }

    pub(super) async fn op_append_message(
        &self,
        session: &str,
        turn_id: Option<&str>,
        message: &Value,
        fence: Option<&Fence>,
    ) -> StoreResult<u64> {
        let op = "append_message";
        let text = json_text(message)?;
        let token = fence.map(|f| f.token);
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(APPEND_MESSAGE, &[&session, &turn_id, &text, &now_ms(), &token])
                .await
                .map_err(|e| backend(op, &e))?
        };
        match rows.first() {
            Some(row) => Ok(uint(row.get(0))),
            None => {
                Err(self.diagnose(op, session, fence).await?.unwrap_or_else(|| fenced(session)))
            }
        }
    }

    pub(super) async fn op_messages(&self, session: &str) -> StoreResult<Vec<MessageRecord>> {
        let rows = {
            let mut conn = self.conn("messages").await?;
            conn.query(MESSAGES, &[&session]).await.map_err(|e| backend("messages", &e))?
        };
        if rows.is_empty() {
            self.require_session("messages", session).await?;
        }
        rows.iter()
            .map(|r| {
                Ok(MessageRecord {
                    seq: uint(r.get(0)),
                    session_id: session.to_owned(),
                    turn_id: r.get(1),
                    message: json_of(r.get(2))?,
                })
            })
            .collect()
    }

    pub(super) async fn op_truncate_messages(
        &self,
        session: &str,
        after_seq: u64,
        fence: Option<&Fence>,
    ) -> StoreResult<u64> {
        let op = "truncate_messages";
        let after = i64::try_from(after_seq).unwrap_or(i64::MAX);
        let token = fence.map(|f| f.token);
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(TRUNCATE_MESSAGES, &[&session, &after, &now_ms(), &token])
                .await
                .map_err(|e| backend(op, &e))?
        };
        match rows.first() {
            Some(row) => Ok(uint(row.get(0))),
            None => {
                Err(self.diagnose(op, session, fence).await?.unwrap_or_else(|| fenced(session)))
            }
        }
    }

    pub(super) async fn op_start_tool_call(
        &self,
        c: ToolCallRecord,
        fence: Option<&Fence>,
    ) -> StoreResult<()> {
        let op = "start_tool_call";
        let args = json_text(&c.args)?;
        let result = c.result.as_ref().map(json_text).transpose()?;
        let duration = c.duration_ms.map(int);
        let token = fence.map(|f| f.token);
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(
                START_TOOL_CALL,
                &[
                    &c.id,
                    &c.session_id,
                    &c.turn_id,
                    &c.name,
                    &args,
                    &result,
                    &c.is_error,
                    &c.started_at_ms,
                    &duration,
                    &now_ms(),
                    &token,
                ],
            )
            .await
            .map_err(|e| backend(op, &e))?
        };
        if rows.is_empty() {
            let why = self.diagnose(op, &c.session_id, fence).await?;
            return Err(why.unwrap_or_else(|| StoreError::Exists(format!("tool call {}", c.id))));
        }
        Ok(())
    }

    pub(super) async fn op_finish_tool_call(
        &self,
        id: &str,
        result: &Value,
        is_error: bool,
        duration_ms: u64,
        fence: Option<&Fence>,
    ) -> StoreResult<()> {
        let op = "finish_tool_call";
        let text = json_text(result)?;
        let (token, session) = (fence.map(|f| f.token), fence.map(|f| f.session_id.as_str()));
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(
                FINISH_TOOL_CALL,
                &[&id, &text, &is_error, &int(duration_ms), &now_ms(), &token, &session],
            )
            .await
            .map_err(|e| backend(op, &e))?
        };
        if rows.is_empty() {
            return Err(match fence {
                Some(f) => self.diagnose(op, &f.session_id, fence).await?.unwrap_or_else(|| {
                    StoreError::NotFound(format!("tool call {id} (of session {})", f.session_id))
                }),
                None => not_found("tool call", id),
            });
        }
        Ok(())
    }

    pub(super) async fn op_tool_calls(&self, session: &str) -> StoreResult<Vec<ToolCallRecord>> {
        let rows = {
            let mut conn = self.conn("tool_calls").await?;
            conn.query(TOOL_CALLS, &[&session]).await.map_err(|e| backend("tool_calls", &e))?
        };
        if rows.is_empty() {
            self.require_session("tool_calls", session).await?;
        }
        rows.iter().map(tool_call_row).collect()
    }

    pub(super) async fn op_set_todos(
        &self,
        session: &str,
        todos: &Value,
        fence: Option<&Fence>,
    ) -> StoreResult<()> {
        let op = "set_todos";
        let text = json_text(todos)?;
        let token = fence.map(|f| f.token);
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(SET_TODOS, &[&session, &text, &now_ms(), &token])
                .await
                .map_err(|e| backend(op, &e))?
        };
        if rows.is_empty() {
            return Err(self
                .diagnose(op, session, fence)
                .await?
                .unwrap_or_else(|| fenced(session)));
        }
        Ok(())
    }

    pub(super) async fn op_todos(&self, session: &str) -> StoreResult<Value> {
        let rows = {
            let mut conn = self.conn("todos").await?;
            conn.query(TODOS, &[&session]).await.map_err(|e| backend("todos", &e))?
        };
        match rows.first() {
            Some(row) => json_of(row.get(0)),
            None => {
                self.require_session("todos", session).await?;
                Ok(Value::Array(Vec::new()))
            }
        }
    }

    pub(super) async fn op_append_event(
        &self,
        session: &str,
        at_ms: i64,
        data: &Value,
        fence: Option<&Fence>,
    ) -> StoreResult<u64> {
        let op = "append_event";
        let text = json_text(data)?;
        let token = fence.map(|f| f.token);
        let rows = {
            let mut conn = self.conn(op).await?;
            conn.query(APPEND_EVENT, &[&session, &at_ms, &text, &now_ms(), &token])
                .await
                .map_err(|e| backend(op, &e))?
        };
        match rows.first() {
            Some(row) => Ok(uint(row.get(0))),
            None => {
                Err(self.diagnose(op, session, fence).await?.unwrap_or_else(|| fenced(session)))
            }
        }
    }

    pub(super) async fn op_events_after(
        &self,
        session: &str,
        after: u64,
        limit: usize,
    ) -> StoreResult<Vec<EventRecord>> {
        let op = "events_after";
        let rows = if limit == 0 {
            Vec::new()
        } else {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut conn = self.conn(op).await?;
            conn.query(EVENTS_AFTER, &[&session, &int(after), &limit])
                .await
                .map_err(|e| backend(op, &e))?
        };
        if rows.is_empty() {
            self.require_session(op, session).await?;
        }
        rows.iter()
            .map(|r| {
                Ok(EventRecord {
                    id: uint(r.get(0)),
                    session_id: session.to_owned(),
                    at_ms: r.get(1),
                    data: json_of(r.get(2))?,
                })
            })
            .collect()
    }
}

/// The write was refused: the session's lease is no longer the writer's.
pub(super) fn fenced(session: &str) -> StoreError {
    StoreError::Fenced(format!(
        "session {session}: this node no longer holds the session's lease (another node took it \
         over); the write was refused"
    ))
}
