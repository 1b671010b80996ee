//! The database layout, as numbered migrations recorded in `hands_schema` (one row per version:
//! its name, when and by which node it was applied). [`migrate`] takes a session-level advisory
//! lock first, so that nodes starting at once on an empty database queue on it and the first one
//! applies each migration (in a transaction of its own) while the others find them applied. A
//! database migrated by a newer hands — a version past the last one known here — is refused.

use tokio_postgres::Client;

use crate::StoreError;

/// The advisory lock every migration runs under ("hands" in ASCII).
const LOCK: i64 = 0x68_61_6e_64_73;

/// `(name, SQL)`; entry `i` migrates version `i` to `i + 1`. Append only.
const MIGRATIONS: &[(&str, &str)] = &[("sessions", V1), ("cluster", V2)];

/// Version 1: the tables of the `Store` trait. Keys compare bytewise (`COLLATE "C"`), as in
/// SQLite; JSON is `json` (kept as given, key order included; `jsonb` would reorder); `rec`
/// numbers rows in the order they were recorded, the tie-break of the listings.
const V1: &str = r#"
CREATE TABLE projects (
    id            TEXT COLLATE "C" PRIMARY KEY,
    root          TEXT NOT NULL,
    first_seen_ms BIGINT NOT NULL,
    last_seen_ms  BIGINT NOT NULL
);
CREATE INDEX projects_by_last_seen ON projects (last_seen_ms DESC, id);

CREATE TABLE sessions (
    id               TEXT COLLATE "C" PRIMARY KEY,
    project_id       TEXT COLLATE "C" NOT NULL REFERENCES projects (id),
    root             TEXT NOT NULL,
    mode             TEXT NOT NULL,
    title            TEXT,
    created_at_ms    BIGINT NOT NULL,
    updated_at_ms    BIGINT NOT NULL,
    last_message_seq BIGINT NOT NULL DEFAULT 0,
    last_event_id    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_update ON sessions (updated_at_ms DESC, id);
CREATE INDEX sessions_by_project ON sessions (project_id);

CREATE TABLE turns (
    rec           BIGINT GENERATED ALWAYS AS IDENTITY,
    id            TEXT COLLATE "C" PRIMARY KEY,
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    status        TEXT NOT NULL,
    user_message  TEXT NOT NULL,
    started_at_ms BIGINT NOT NULL,
    ended_at_ms   BIGINT
);
CREATE INDEX turns_by_session ON turns (session_id, started_at_ms, rec);
CREATE INDEX turns_running ON turns (session_id) WHERE status = 'running';

CREATE TABLE messages (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    turn_id    TEXT,
    message    JSON NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE tool_calls (
    rec           BIGINT GENERATED ALWAYS AS IDENTITY,
    id            TEXT COLLATE "C" PRIMARY KEY,
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn_id       TEXT,
    name          TEXT NOT NULL,
    args          JSON NOT NULL,
    result        JSON,
    is_error      BOOLEAN,
    started_at_ms BIGINT NOT NULL,
    duration_ms   BIGINT
);
CREATE INDEX tool_calls_by_session ON tool_calls (session_id, started_at_ms, rec);

CREATE TABLE todos (
    session_id TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    todos      JSON NOT NULL
);

CREATE TABLE events (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id         BIGINT NOT NULL,
    at_ms      BIGINT NOT NULL,
    data       JSON NOT NULL,
    PRIMARY KEY (session_id, id)
);
"#;

/// Version 2: several nodes on one database. `nodes`: who is up and where it is reached;
/// `leases`: which node runs a session's turns, until when (the database's clock), under which
/// fencing token (from a sequence, so a token is never given twice, even after a lease row is
/// deleted and made again).
const V2: &str = r#"
CREATE TABLE nodes (
    id         TEXT COLLATE "C" PRIMARY KEY,
    url        TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    seen_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    draining   BOOLEAN NOT NULL DEFAULT false
);

CREATE SEQUENCE lease_tokens;

CREATE TABLE leases (
    session_id  TEXT COLLATE "C" PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    node_id     TEXT COLLATE "C" NOT NULL,
    token       BIGINT NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX leases_by_node ON leases (node_id);
CREATE INDEX leases_by_expiry ON leases (expires_at);
"#;

/// The version this build writes.
pub fn latest() -> i32 {
    i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX)
}

/// What [`migrate`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migrated {
    /// The version found.
    pub from: i32,
    /// The version now (== [`latest`]).
    pub to: i32,
}

fn failed(e: &tokio_postgres::Error) -> StoreError {
    super::error::backend("migrating the session store", e)
}

/// The version the database is at (0: never migrated).
pub async fn version(client: &Client) -> Result<i32, StoreError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('hands_schema') IS NOT NULL", &[])
        .await
        .map_err(|e| super::error::backend("reading the schema version", &e))?
        .get(0);
    if !exists {
        return Ok(0);
    }
    let row = client
        .query_one("SELECT coalesce(max(version), 0) FROM hands_schema", &[])
        .await
        .map_err(|e| super::error::backend("reading the schema version", &e))?;
    Ok(row.get(0))
}

/// Bring the database to [`latest`] under the advisory lock; `node` is recorded as who did.
pub async fn migrate(client: &mut Client, node: &str) -> Result<Migrated, StoreError> {
    client.execute("SELECT pg_advisory_lock($1)", &[&LOCK]).await.map_err(|e| failed(&e))?;
    let result = migrate_locked(client, node).await;
    // Unlocked also after a failure; a connection that broke has lost the lock anyway.
    let _ = client.execute("SELECT pg_advisory_unlock($1)", &[&LOCK]).await;
    result
}

async fn migrate_locked(client: &mut Client, node: &str) -> Result<Migrated, StoreError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS hands_schema (
                 version    INTEGER PRIMARY KEY,
                 name       TEXT NOT NULL,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                 applied_by TEXT NOT NULL
             )",
        )
        .await
        .map_err(|e| failed(&e))?;
    let from = version(client).await?;
    if from > latest() {
        return Err(StoreError::Backend(format!(
            "the session database has schema version {from}, but this hands knows only up to \
             version {}: it was migrated by a newer hands; upgrade this node",
            latest()
        )));
    }
    for (index, (name, sql)) in
        MIGRATIONS.iter().enumerate().skip(usize::try_from(from).unwrap_or(0))
    {
        let version = i32::try_from(index + 1).unwrap_or(i32::MAX);
        let tx = client.transaction().await.map_err(|e| failed(&e))?;
        tx.batch_execute(sql).await.map_err(|e| failed(&e))?;
        tx.execute(
            "INSERT INTO hands_schema (version, name, applied_by) VALUES ($1, $2, $3)",
            &[&version, name, &node],
        )
        .await
        .map_err(|e| failed(&e))?;
        tx.commit().await.map_err(|e| failed(&e))?;
        tracing::info!(version, name, "session store migrated");
    }
    Ok(Migrated { from, to: latest() })
}
