//! [`SqliteStore`]: the [`Store`] in one SQLite file (WAL, `synchronous=NORMAL`, foreign keys on).
//! Each trait method is atomic: a write runs on the writer thread (`writer`: in a transaction it
//! may share with the writes queued beside it, under a savepoint of its own), a read in one read
//! transaction on a reader (`connections`); the layout comes from the migrations in `schema`.
//! Per-session message `seq` and event `id` are counters in the session's row, bumped by the same
//! transaction that inserts the row they number, so they have no gaps or duplicates, even with two
//! processes on one file.

mod connections;
mod fail;
mod private;
mod schema;
mod writer;

use std::path::Path;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};
use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use self::connections::Connections;
use self::fail::Fail;
use crate::clock::now_ms;
use crate::{
    BoxFuture, EventRecord, MessageRecord, ProjectRecord, SessionRecord, Store, StoreError,
    StoreResult, ToolCallRecord, TurnRecord,
};

/// The session store in one SQLite database file (or in memory).
pub struct SqliteStore {
    connections: Connections,
}

impl SqliteStore {
    /// Open the database at `path`, creating it and its parent folders if needed and bringing its
    /// schema up to date. A file that is not a SQLite database, or was written by a newer hands, is
    /// a `Backend` error naming the path. `":memory:"` is [`SqliteStore::in_memory`].
    pub fn open(path: impl AsRef<Path>) -> StoreResult<Self> {
        let path = path.as_ref();
        if path.as_os_str() == ":memory:" {
            return Self::in_memory();
        }
        Ok(Self { connections: Connections::open(Some(path))? })
    }

    /// A private in-memory database, gone when the store is dropped.
    pub fn in_memory() -> StoreResult<Self> {
        Ok(Self { connections: Connections::open(None)? })
    }
}

/// A JSON column (stored as text).
struct Json(Value);

impl FromSql for Json {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        serde_json::from_slice(value.as_bytes()?).map(Json).map_err(FromSqlError::other)
    }
}

fn to_json(value: &Value) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Backend(format!("encoding JSON: {e}")))
}

/// Saturate into SQLite's integer range (ids and limits past `i64::MAX` mean "all").
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn session_not_found(id: &str) -> Fail {
    StoreError::NotFound(format!("session {id}")).into()
}

/// `NotFound` unless the session exists.
fn require_session(conn: &Connection, id: &str) -> Result<(), Fail> {
    let found = conn.prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?.exists([id])?;
    if found { Ok(()) } else { Err(session_not_found(id)) }
}

/// Mark the session changed now (`NotFound` unless it exists).
fn touch(conn: &Connection, id: &str) -> Result<(), Fail> {
    let changed = conn
        .prepare_cached("UPDATE sessions SET updated_at_ms = max(updated_at_ms, ?2) WHERE id = ?1")?
        .execute(params![id, now_ms()])?;
    if changed == 0 { Err(session_not_found(id)) } else { Ok(()) }
}

/// Bump one of the session's counters (and its `updated_at_ms`); the new value.
fn next_number(conn: &Connection, id: &str, counter: &str) -> Result<u64, Fail> {
    let sql = format!(
        "UPDATE sessions SET {counter} = {counter} + 1, updated_at_ms = max(updated_at_ms, ?2) \
         WHERE id = ?1 RETURNING {counter}"
    );
    conn.prepare_cached(&sql)?
        .query_row(params![id, now_ms()], |row| row.get(0))
        .optional()?
        .ok_or_else(|| session_not_found(id))
}

const SESSION_COLUMNS: &str = "id, project_id, root, mode, title, created_at_ms, updated_at_ms";

fn session_row(row: &Row<'_>) -> rusqlite::Result<SessionRecord> {
    Ok(SessionRecord {
        id: row.get(0)?,
        project_id: row.get(1)?,
        root: row.get(2)?,
        mode: row.get(3)?,
        title: row.get(4)?,
        created_at_ms: row.get(5)?,
        updated_at_ms: row.get(6)?,
    })
}

const TURN_COLUMNS: &str = "id, session_id, status, user_message, started_at_ms, ended_at_ms";

fn turn_row(row: &Row<'_>) -> rusqlite::Result<TurnRecord> {
    Ok(TurnRecord {
        id: row.get(0)?,
        session_id: row.get(1)?,
        status: row.get(2)?,
        user_message: row.get(3)?,
        started_at_ms: row.get(4)?,
        ended_at_ms: row.get(5)?,
    })
}

fn tool_call_row(row: &Row<'_>) -> rusqlite::Result<ToolCallRecord> {
    Ok(ToolCallRecord {
        id: row.get(0)?,
        session_id: row.get(1)?,
        turn_id: row.get(2)?,
        name: row.get(3)?,
        args: row.get::<_, Json>(4)?.0,
        result: row.get::<_, Option<Json>>(5)?.map(|json| json.0),
        is_error: row.get(6)?,
        started_at_ms: row.get(7)?,
        duration_ms: row.get(8)?,
    })
}

/// All rows of a query, mapped.
fn all<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>, Fail> {
    let mut statement = conn.prepare_cached(sql)?;
    let rows = statement.query_map(params, map)?.collect::<rusqlite::Result<Vec<T>>>()?;
    Ok(rows)
}

impl Store for SqliteStore {
    fn create_session(&self, session: SessionRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(self.connections.write("create_session", move |conn| {
            let s = session;
            conn.prepare_cached(
                "INSERT INTO projects (id, root, first_seen_ms, last_seen_ms) VALUES (?1, ?2, ?3, ?3)
                 ON CONFLICT (id) DO UPDATE SET root = excluded.root,
                     first_seen_ms = min(first_seen_ms, excluded.first_seen_ms),
                     last_seen_ms = max(last_seen_ms, excluded.last_seen_ms)",
            )?
            .execute(params![s.project_id, s.root, s.created_at_ms])?;
            let inserted = conn
                .prepare_cached(
                    "INSERT INTO sessions (id, project_id, root, mode, title, created_at_ms,
                         updated_at_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (id) DO NOTHING",
                )?
                .execute(params![
                    s.id,
                    s.project_id,
                    s.root,
                    s.mode,
                    s.title,
                    s.created_at_ms,
                    s.updated_at_ms
                ])?;
            if inserted == 0 {
                return Err(StoreError::Exists(format!("session {}", s.id)).into());
            }
            Ok(())
        }))
    }

    fn get_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<SessionRecord>> {
        let id = id.to_owned();
        Box::pin(self.connections.read("get_session", move |conn| {
            conn.prepare_cached(&format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"))?
                .query_row([&id], session_row)
                .optional()?
                .ok_or_else(|| session_not_found(&id))
        }))
    }

    fn list_sessions(&self) -> BoxFuture<'_, StoreResult<Vec<SessionRecord>>> {
        Box::pin(self.connections.read("list_sessions", |conn| {
            let sql =
                format!("SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at_ms DESC, id");
            all(conn, &sql, [], session_row)
        }))
    }

    fn update_session<'a>(
        &'a self,
        id: &'a str,
        mode: Option<&'a str>,
        title: Option<&'a str>,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let (id, mode, title) = (id.to_owned(), mode.map(str::to_owned), title.map(str::to_owned));
        Box::pin(self.connections.write("update_session", move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE sessions SET mode = coalesce(?2, mode), title = coalesce(?3, title),
                         updated_at_ms = max(updated_at_ms, ?4)
                     WHERE id = ?1",
                )?
                .execute(params![id, mode, title, now_ms()])?;
            if changed == 0 { Err(session_not_found(&id)) } else { Ok(()) }
        }))
    }

    fn delete_session<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let id = id.to_owned();
        Box::pin(self.connections.write("delete_session", move |conn| {
            // The foreign keys' ON DELETE CASCADE removes turns, messages, calls, todos, events.
            let deleted =
                conn.prepare_cached("DELETE FROM sessions WHERE id = ?1")?.execute([&id])?;
            if deleted == 0 { Err(session_not_found(&id)) } else { Ok(()) }
        }))
    }

    fn list_projects(&self) -> BoxFuture<'_, StoreResult<Vec<ProjectRecord>>> {
        Box::pin(self.connections.read("list_projects", |conn| {
            all(
                conn,
                "SELECT id, root, first_seen_ms, last_seen_ms FROM projects
                 ORDER BY last_seen_ms DESC, id",
                [],
                |row| {
                    Ok(ProjectRecord {
                        id: row.get(0)?,
                        root: row.get(1)?,
                        first_seen_ms: row.get(2)?,
                        last_seen_ms: row.get(3)?,
                    })
                },
            )
        }))
    }

    fn start_turn(&self, turn: TurnRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(self.connections.write("start_turn", move |conn| {
            let t = turn;
            touch(conn, &t.session_id)?;
            let inserted = conn
                .prepare_cached(&format!(
                    "INSERT INTO turns ({TURN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (id) DO NOTHING"
                ))?
                .execute(params![
                    t.id,
                    t.session_id,
                    t.status,
                    t.user_message,
                    t.started_at_ms,
                    t.ended_at_ms
                ])?;
            if inserted == 0 {
                return Err(StoreError::Exists(format!("turn {}", t.id)).into());
            }
            Ok(())
        }))
    }

    fn end_turn<'a>(
        &'a self,
        id: &'a str,
        status: &'a str,
        ended_at_ms: i64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let (id, status) = (id.to_owned(), status.to_owned());
        Box::pin(self.connections.write("end_turn", move |conn| {
            let session: String = conn
                .prepare_cached(
                    "UPDATE turns SET status = ?2, ended_at_ms = ?3 WHERE id = ?1
                     RETURNING session_id",
                )?
                .query_row(params![id, status, ended_at_ms], |row| row.get(0))
                .optional()?
                .ok_or_else(|| StoreError::NotFound(format!("turn {id}")))?;
            touch(conn, &session)
        }))
    }

    fn turns<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Vec<TurnRecord>>> {
        let session_id = session_id.to_owned();
        Box::pin(self.connections.read("turns", move |conn| {
            require_session(conn, &session_id)?;
            let sql = format!(
                "SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ?1
                 ORDER BY started_at_ms, rowid"
            );
            all(conn, &sql, [&session_id], turn_row)
        }))
    }

    fn abandon_running_turns(
        &self,
        ended_at_ms: i64,
    ) -> BoxFuture<'_, StoreResult<Vec<TurnRecord>>> {
        Box::pin(self.connections.write("abandon_running_turns", move |conn| {
            let sql = format!(
                "UPDATE turns SET status = 'aborted', ended_at_ms = ?1 WHERE status = 'running'
                 RETURNING {TURN_COLUMNS}"
            );
            let mut turns = all(conn, &sql, [ended_at_ms], turn_row)?;
            // RETURNING has no order of its own.
            turns.sort_by(|a, b| (a.started_at_ms, &a.id).cmp(&(b.started_at_ms, &b.id)));
            Ok(turns)
        }))
    }

    fn append_message<'a>(
        &'a self,
        session_id: &'a str,
        turn_id: Option<&'a str>,
        message: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        let (session_id, turn_id) = (session_id.to_owned(), turn_id.map(str::to_owned));
        Box::pin(async move {
            let text = to_json(&message)?;
            self.connections
                .write("append_message", move |conn| {
                    let seq = next_number(conn, &session_id, "last_message_seq")?;
                    conn.prepare_cached(
                        "INSERT INTO messages (session_id, seq, turn_id, message)
                         VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![session_id, seq, turn_id, text])?;
                    Ok(seq)
                })
                .await
        })
    }

    fn messages<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<MessageRecord>>> {
        let session_id = session_id.to_owned();
        Box::pin(self.connections.read("messages", move |conn| {
            require_session(conn, &session_id)?;
            all(
                conn,
                "SELECT seq, turn_id, message FROM messages WHERE session_id = ?1 ORDER BY seq",
                [&session_id],
                |row| {
                    Ok(MessageRecord {
                        seq: row.get(0)?,
                        session_id: session_id.clone(),
                        turn_id: row.get(1)?,
                        message: row.get::<_, Json>(2)?.0,
                    })
                },
            )
        }))
    }

    fn truncate_messages<'a>(
        &'a self,
        session_id: &'a str,
        after_seq: u64,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        let session_id = session_id.to_owned();
        Box::pin(self.connections.write("truncate_messages", move |conn| {
            // The counter in the session's row stays: the deleted numbers are not given again.
            touch(conn, &session_id)?;
            let deleted = conn
                .prepare_cached("DELETE FROM messages WHERE session_id = ?1 AND seq > ?2")?
                .execute(params![session_id, int(after_seq)])?;
            Ok(deleted as u64)
        }))
    }

    fn start_tool_call(&self, call: ToolCallRecord) -> BoxFuture<'_, StoreResult<()>> {
        Box::pin(async move {
            let args = to_json(&call.args)?;
            let result = call.result.as_ref().map(to_json).transpose()?;
            self.connections
                .write("start_tool_call", move |conn| {
                    let c = call;
                    touch(conn, &c.session_id)?;
                    let inserted = conn
                        .prepare_cached(
                            "INSERT INTO tool_calls (id, session_id, turn_id, name, args, result,
                                 is_error, started_at_ms, duration_ms)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                             ON CONFLICT (id) DO NOTHING",
                        )?
                        .execute(params![
                            c.id,
                            c.session_id,
                            c.turn_id,
                            c.name,
                            args,
                            result,
                            c.is_error,
                            c.started_at_ms,
                            c.duration_ms.map(int)
                        ])?;
                    if inserted == 0 {
                        return Err(StoreError::Exists(format!("tool call {}", c.id)).into());
                    }
                    Ok(())
                })
                .await
        })
    }

    fn finish_tool_call<'a>(
        &'a self,
        id: &'a str,
        result: Value,
        is_error: bool,
        duration_ms: u64,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let id = id.to_owned();
        Box::pin(async move {
            let result = to_json(&result)?;
            self.connections
                .write("finish_tool_call", move |conn| {
                    let session: String = conn
                        .prepare_cached(
                            "UPDATE tool_calls SET result = ?2, is_error = ?3, duration_ms = ?4
                             WHERE id = ?1 RETURNING session_id",
                        )?
                        .query_row(params![id, result, is_error, int(duration_ms)], |row| {
                            row.get(0)
                        })
                        .optional()?
                        .ok_or_else(|| StoreError::NotFound(format!("tool call {id}")))?;
                    touch(conn, &session)
                })
                .await
        })
    }

    fn tool_calls<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<ToolCallRecord>>> {
        let session_id = session_id.to_owned();
        Box::pin(self.connections.read("tool_calls", move |conn| {
            require_session(conn, &session_id)?;
            all(
                conn,
                "SELECT id, session_id, turn_id, name, args, result, is_error, started_at_ms,
                     duration_ms
                 FROM tool_calls WHERE session_id = ?1 ORDER BY started_at_ms, rowid",
                [&session_id],
                tool_call_row,
            )
        }))
    }

    fn set_todos<'a>(
        &'a self,
        session_id: &'a str,
        todos: Value,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let session_id = session_id.to_owned();
        Box::pin(async move {
            let text = to_json(&todos)?;
            self.connections
                .write("set_todos", move |conn| {
                    touch(conn, &session_id)?;
                    conn.prepare_cached(
                        "INSERT INTO todos (session_id, todos) VALUES (?1, ?2)
                         ON CONFLICT (session_id) DO UPDATE SET todos = excluded.todos",
                    )?
                    .execute(params![session_id, text])?;
                    Ok(())
                })
                .await
        })
    }

    fn todos<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Value>> {
        let session_id = session_id.to_owned();
        Box::pin(self.connections.read("todos", move |conn| {
            require_session(conn, &session_id)?;
            let todos = conn
                .prepare_cached("SELECT todos FROM todos WHERE session_id = ?1")?
                .query_row([&session_id], |row| row.get::<_, Json>(0))
                .optional()?;
            Ok(todos.map_or_else(|| Value::Array(Vec::new()), |json| json.0))
        }))
    }

    fn append_event<'a>(
        &'a self,
        session_id: &'a str,
        at_ms: i64,
        data: Value,
    ) -> BoxFuture<'a, StoreResult<u64>> {
        let session_id = session_id.to_owned();
        Box::pin(async move {
            let text = to_json(&data)?;
            self.connections
                .write("append_event", move |conn| {
                    let id = next_number(conn, &session_id, "last_event_id")?;
                    conn.prepare_cached(
                        "INSERT INTO events (session_id, id, at_ms, data) VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(params![session_id, id, at_ms, text])?;
                    Ok(id)
                })
                .await
        })
    }

    fn events_after<'a>(
        &'a self,
        session_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, StoreResult<Vec<EventRecord>>> {
        let session_id = session_id.to_owned();
        Box::pin(self.connections.read("events_after", move |conn| {
            require_session(conn, &session_id)?;
            all(
                conn,
                "SELECT id, at_ms, data FROM events WHERE session_id = ?1 AND id > ?2
                 ORDER BY id LIMIT ?3",
                params![session_id, int(after), int(limit as u64)],
                |row| {
                    Ok(EventRecord {
                        id: row.get(0)?,
                        session_id: session_id.clone(),
                        at_ms: row.get(1)?,
                        data: row.get::<_, Json>(2)?.0,
                    })
                },
            )
        }))
    }
}
