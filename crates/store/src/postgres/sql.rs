//! The statements of `ops`, one per [`Store`](crate::Store) method (and the checks that explain
//! a write that changed nothing). Fenced writes add the lease condition of [`fenced!`].

/// The fence condition every fenced write adds, with the token as `$T` and the session as `$S`.
macro_rules! fenced {
    ($s:literal, $t:literal) => {
        concat!(
            "($",
            $t,
            "::bigint IS NULL OR EXISTS (SELECT 1 FROM leases WHERE session_id = $",
            $s,
            " AND token = $",
            $t,
            " FOR SHARE))"
        )
    };
}

pub(super) const CREATE_SESSION: &str = "
WITH s AS (
    INSERT INTO sessions (id, project_id, root, mode, title, created_at_ms, updated_at_ms)
    VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING
    RETURNING project_id, root, created_at_ms
), p AS (
    INSERT INTO projects (id, root, first_seen_ms, last_seen_ms)
    SELECT project_id, root, created_at_ms, created_at_ms FROM s
    ON CONFLICT (id) DO UPDATE SET root = excluded.root,
        first_seen_ms = LEAST(projects.first_seen_ms, excluded.first_seen_ms),
        last_seen_ms = GREATEST(projects.last_seen_ms, excluded.last_seen_ms)
    RETURNING 1
)
SELECT (SELECT count(*) FROM s)";

pub(super) const GET_SESSION: &str = "SELECT id, project_id, root, mode, title, created_at_ms, updated_at_ms FROM sessions WHERE id = $1";

pub(super) const LIST_SESSIONS: &str = "SELECT id, project_id, root, mode, title, created_at_ms, \
     updated_at_ms FROM sessions ORDER BY updated_at_ms DESC, id";

pub(super) const UPDATE_SESSION: &str = concat!(
    "UPDATE sessions SET mode = coalesce($2, mode), title = coalesce($3, title),
         updated_at_ms = GREATEST(updated_at_ms, $4)
     WHERE id = $1 AND ",
    fenced!("1", "5"),
    " RETURNING 1"
);

pub(super) const DELETE_SESSION: &str = "DELETE FROM sessions WHERE id = $1 RETURNING 1";

pub(super) const NOTIFY_GONE: &str = "SELECT pg_notify('hands_events', $1::text || ':0')::text";

pub(super) const LIST_PROJECTS: &str =
    "SELECT id, root, first_seen_ms, last_seen_ms FROM projects ORDER BY last_seen_ms DESC, id";

pub(super) const START_TURN: &str = concat!(
    "WITH s AS (
         UPDATE sessions SET updated_at_ms = GREATEST(updated_at_ms, $7)
         WHERE id = $2 AND NOT EXISTS (SELECT 1 FROM turns WHERE id = $1) AND ",
    fenced!("2", "8"),
    " RETURNING id
     )
     INSERT INTO turns (id, session_id, status, user_message, started_at_ms, ended_at_ms)
     SELECT $1::text, id, $3::text, $4::text, $5::bigint, $6::bigint FROM s ON CONFLICT (id) DO NOTHING RETURNING 1"
);

pub(super) const END_TURN: &str = concat!(
    "WITH t AS (
         UPDATE turns SET status = $2, ended_at_ms = $3
         WHERE id = $1 AND ($5::bigint IS NULL OR session_id = $6) AND ",
    fenced!("6", "5"),
    " RETURNING session_id
     )
     UPDATE sessions SET updated_at_ms = GREATEST(updated_at_ms, $4)
     WHERE id IN (SELECT session_id FROM t) RETURNING 1"
);

pub(super) const TURNS: &str = "SELECT id, session_id, status, user_message, started_at_ms, ended_at_ms \
     FROM turns WHERE session_id = $1 ORDER BY started_at_ms, rec";

pub(super) const ABANDON: &str = "UPDATE turns SET status = 'aborted', ended_at_ms = $1 \
     WHERE status = 'running' \
     RETURNING id, session_id, status, user_message, started_at_ms, ended_at_ms";

pub(super) const APPEND_MESSAGE: &str = concat!(
    "WITH s AS (
         UPDATE sessions SET last_message_seq = last_message_seq + 1,
             updated_at_ms = GREATEST(updated_at_ms, $4)
         WHERE id = $1 AND ",
    fenced!("1", "5"),
    " RETURNING last_message_seq
     )
     INSERT INTO messages (session_id, seq, turn_id, message)
     SELECT $1::text, last_message_seq, $2::text, $3::text::json FROM s RETURNING seq"
);

/// Deletes the session's messages after `$2` when the fence holds; one row (the count) if it did.
/// The counter in the session's row stays: deleted numbers are not given again.
pub(super) const TRUNCATE_MESSAGES: &str = concat!(
    "WITH s AS (
         UPDATE sessions SET updated_at_ms = GREATEST(updated_at_ms, $3)
         WHERE id = $1 AND ",
    fenced!("1", "4"),
    " RETURNING id
     ), d AS (
         DELETE FROM messages WHERE session_id = $1 AND seq > $2 AND EXISTS (SELECT 1 FROM s)
         RETURNING 1
     )
     SELECT (SELECT count(*) FROM d)::bigint FROM s"
);

pub(super) const MESSAGES: &str =
    "SELECT seq, turn_id, message::text FROM messages WHERE session_id = $1 ORDER BY seq";

pub(super) const START_TOOL_CALL: &str = concat!(
    "WITH s AS (
         UPDATE sessions SET updated_at_ms = GREATEST(updated_at_ms, $10)
         WHERE id = $2 AND NOT EXISTS (SELECT 1 FROM tool_calls WHERE id = $1) AND ",
    fenced!("2", "11"),
    " RETURNING id
     )
     INSERT INTO tool_calls (id, session_id, turn_id, name, args, result, is_error,
         started_at_ms, duration_ms)
     SELECT $1::text, id, $3::text, $4::text, $5::text::json, $6::text::json, $7::boolean,
         $8::bigint, $9::bigint FROM s
     ON CONFLICT (id) DO NOTHING RETURNING 1"
);

pub(super) const FINISH_TOOL_CALL: &str = concat!(
    "WITH c AS (
         UPDATE tool_calls SET result = $2::text::json, is_error = $3, duration_ms = $4
         WHERE id = $1 AND ($6::bigint IS NULL OR session_id = $7) AND ",
    fenced!("7", "6"),
    " RETURNING session_id
     )
     UPDATE sessions SET updated_at_ms = GREATEST(updated_at_ms, $5)
     WHERE id IN (SELECT session_id FROM c) RETURNING 1"
);

pub(super) const TOOL_CALLS: &str = "SELECT id, session_id, turn_id, name, args::text, result::text, \
     is_error, started_at_ms, duration_ms FROM tool_calls WHERE session_id = $1 \
     ORDER BY started_at_ms, rec";

pub(super) const SET_TODOS: &str = concat!(
    "WITH s AS (
         UPDATE sessions SET updated_at_ms = GREATEST(updated_at_ms, $3)
         WHERE id = $1 AND ",
    fenced!("1", "4"),
    " RETURNING id
     )
     INSERT INTO todos (session_id, todos) SELECT id, $2::text::json FROM s
     ON CONFLICT (session_id) DO UPDATE SET todos = excluded.todos RETURNING 1"
);

pub(super) const TODOS: &str = "SELECT todos::text FROM todos WHERE session_id = $1";

/// The event is announced on `hands_events` as `session:id`, delivered at commit.
pub(super) const APPEND_EVENT: &str = concat!(
    "WITH s AS (
         UPDATE sessions SET last_event_id = last_event_id + 1,
             updated_at_ms = GREATEST(updated_at_ms, $4)
         WHERE id = $1 AND ",
    fenced!("1", "5"),
    " RETURNING last_event_id
     ), e AS (
         INSERT INTO events (session_id, id, at_ms, data)
         SELECT $1::text, last_event_id, $2::bigint, $3::text::json FROM s RETURNING id
     )
     SELECT id, pg_notify('hands_events', $1::text || ':' || id)::text FROM e"
);

pub(super) const EVENTS_AFTER: &str = "SELECT id, at_ms, data::text FROM events \
     WHERE session_id = $1 AND id > $2 ORDER BY id LIMIT $3";

pub(super) const DIAGNOSE: &str = "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1), \
     EXISTS (SELECT 1 FROM leases WHERE session_id = $1 AND token = $2)";

pub(super) const SESSION_EXISTS: &str = "SELECT 1 FROM sessions WHERE id = $1";
