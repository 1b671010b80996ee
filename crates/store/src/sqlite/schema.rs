//! The database's layout, built by numbered migrations. `PRAGMA user_version` holds how many have
//! run; opening applies the missing ones in one immediate transaction (so two processes opening a
//! new file at once cannot both build it), and refuses a file written by a newer hands — a version
//! past the last one known here — rather than guess at its layout.

use rusqlite::{Connection, TransactionBehavior};

use super::Fail;
use crate::StoreError;

/// Entry `i` migrates version `i` to `i + 1`. Append only: never edit one that has shipped.
const MIGRATIONS: &[&str] = &[V1];

/// Version 1. Every table is STRICT (a wrong type is an error, not a silent conversion); JSON is
/// stored as text. Message `seq` and event `id` come from the counters in `sessions`, bumped in the
/// same transaction as the insert; their primary keys start with `session_id`, which also serves
/// the cascade from `sessions` and the per-session reads (`seq`/`id` order, `id > ?` for replay).
const V1: &str = "
CREATE TABLE projects (
    id            TEXT NOT NULL PRIMARY KEY,
    root          TEXT NOT NULL,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms  INTEGER NOT NULL
) STRICT;
CREATE INDEX projects_by_last_seen ON projects (last_seen_ms DESC);

CREATE TABLE sessions (
    id               TEXT NOT NULL PRIMARY KEY,
    project_id       TEXT NOT NULL REFERENCES projects (id),
    root             TEXT NOT NULL,
    mode             TEXT NOT NULL,
    title            TEXT,
    created_at_ms    INTEGER NOT NULL,
    updated_at_ms    INTEGER NOT NULL,
    last_message_seq INTEGER NOT NULL DEFAULT 0,
    last_event_id    INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX sessions_by_update ON sessions (updated_at_ms DESC, id);
CREATE INDEX sessions_by_project ON sessions (project_id);

CREATE TABLE turns (
    id            TEXT NOT NULL PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    status        TEXT NOT NULL,
    user_message  TEXT NOT NULL,
    started_at_ms INTEGER NOT NULL,
    ended_at_ms   INTEGER
) STRICT;
CREATE INDEX turns_by_session ON turns (session_id, started_at_ms);
CREATE INDEX turns_running ON turns (status) WHERE status = 'running';

CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    turn_id    TEXT,
    message    TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;

CREATE TABLE tool_calls (
    id            TEXT NOT NULL PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id       TEXT,
    name          TEXT NOT NULL,
    args          TEXT NOT NULL,
    result        TEXT,
    is_error      INTEGER,
    started_at_ms INTEGER NOT NULL,
    duration_ms   INTEGER
) STRICT;
CREATE INDEX tool_calls_by_session ON tool_calls (session_id, started_at_ms);

CREATE TABLE todos (
    session_id TEXT NOT NULL PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    todos      TEXT NOT NULL
) STRICT;

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id         INTEGER NOT NULL,
    at_ms      INTEGER NOT NULL,
    data       TEXT NOT NULL,
    PRIMARY KEY (session_id, id)
) STRICT;
";

/// The version this build writes.
pub(super) fn latest() -> i64 {
    MIGRATIONS.len() as i64
}

/// Bring the database to [`latest`]; `what` names it in errors (its path, or `:memory:`).
pub(super) fn migrate(conn: &mut Connection, what: &str) -> Result<(), Fail> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version > latest() {
        return Err(StoreError::Backend(format!(
            "{what} has schema version {version}, but this hands knows only up to version {}: \
             it was written by a newer hands; upgrade hands, or set [store] path to another file",
            latest()
        ))
        .into());
    }
    for sql in MIGRATIONS.iter().skip(usize::try_from(version).unwrap_or(0)) {
        tx.execute_batch(sql)?;
    }
    tx.pragma_update(None, "user_version", latest())?;
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(conn: &Connection) -> i64 {
        conn.pragma_query_value(None, "user_version", |row| row.get(0)).unwrap()
    }

    #[test]
    fn a_new_database_gets_every_migration_and_a_second_run_changes_nothing() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, "test").unwrap();
        assert_eq!(version(&conn), latest());
        let tables: Vec<String> = conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            tables,
            ["events", "messages", "projects", "sessions", "todos", "tool_calls", "turns"]
        );
        migrate(&mut conn, "test").unwrap();
        assert_eq!(version(&conn), latest());
    }

    #[test]
    fn a_newer_version_is_refused_with_a_clear_error() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", latest() + 1).unwrap();
        let err = migrate(&mut conn, "/x/sessions.db").unwrap_err().into_store("open");
        let text = err.to_string();
        assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
        assert!(text.contains("/x/sessions.db") && text.contains("newer hands"), "{text}");
        // Nothing was built on top of the unknown layout.
        let tables: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0)).unwrap();
        assert_eq!(tables, 0);
    }
}
