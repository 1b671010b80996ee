//! The session store: everything a session needs to survive a restart of hands — projects,
//! sessions, turns, messages, tool calls and their results, todos and the event log — behind the
//! [`Store`] trait. [`SqliteStore`] (WAL, one file) is the default, [`MemoryStore`] keeps the same
//! contract in memory (tests, `--ephemeral`), and [`open_store`] picks one from `[store]`.
//!
//! ```
//! use hands_store::{SessionRecord, SqliteStore, Store};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), hands_store::StoreError> {
//! let store = SqliteStore::in_memory()?; // SqliteStore::open("~/.local/share/…") for a file
//! store
//!     .create_session(SessionRecord {
//!         id: "s1".into(),
//!         project_id: "app".into(),
//!         root: "/work/app".into(),
//!         mode: "build".into(),
//!         title: None,
//!         created_at_ms: 0,
//!         updated_at_ms: 0,
//!     })
//!     .await?;
//! let first = store.append_event("s1", 0, json!({"type": "turn_started"})).await?;
//! let second = store.append_event("s1", 1, json!({"type": "turn_ended"})).await?;
//! assert_eq!((first, second), (1, 2));
//! // A client reconnecting with `Last-Event-ID: 1` gets what it missed.
//! let missed = store.events_after("s1", 1, 100).await?;
//! assert_eq!(missed[0].data["type"], "turn_ended");
//! # Ok(())
//! # }
//! ```
//!
//! The trait is shaped so that a PostgreSQL store can back several hands instances later:
//!
//! - **Ids.** Session, turn and tool-call ids are strings chosen by the caller, so no instance needs
//!   a database round trip to name a thing; `INSERT … ON CONFLICT DO NOTHING` plus the row count
//!   gives `Exists` exactly as here.
//! - **Sequences.** Message `seq` and event `id` are per-session counters kept in the session's row
//!   (`last_message_seq`, `last_event_id` in SQLite) and bumped in the same transaction as the
//!   insert: `UPDATE sessions SET next_event_id = next_event_id + 1 WHERE id = $1 RETURNING
//!   next_event_id` takes the row lock, so concurrent appends from any number of instances queue
//!   on it and get consecutive ids with no gaps (a rolled-back append rolls its bump back too —
//!   unlike a PostgreSQL `SEQUENCE`, which would leave gaps and is therefore not used). No row:
//!   `NotFound`. Appends to different sessions lock different rows and do not wait on each other.
//! - **Live events across instances.** The append's transaction also runs `SELECT pg_notify(
//!   'hands_events', session_id || ':' || id)`, which PostgreSQL delivers at commit, so never for a
//!   rolled-back event. Every instance `LISTEN`s on one dedicated connection and wakes its local
//!   subscribers of that session, which read the bodies with `events_after(last_seen)`: the payload
//!   carries no data (the 8000-byte limit never matters), a missed notification is repaired by the
//!   next one, and after the listening connection drops, a catch-up `events_after` per subscribed
//!   session covers the gap.
//! - **Tables and indexes.** The same tables, `ON DELETE CASCADE` foreign keys and indexes
//!   (`(session_id, seq)`, `(session_id, id)`, …). JSON columns as `json` or `text`, not `jsonb`:
//!   `jsonb` reorders object keys, and the store returns a message exactly as it was given.
//! - **Connections.** A pool of `tokio-postgres` clients (`deadpool-postgres`) replaces the
//!   writer thread and the readers: the database itself serialises what must be serialised. The
//!   schema is migrated the same way, with the version in a `schema_version` table.
mod clock;
mod cluster;
mod config;
mod memory;
pub mod postgres;
mod records;
mod redacting;
mod sqlite;
mod store;

pub use cluster::{Acquired, Cluster, LeaseOwner, Note};
pub use config::{
    DEFAULT_URL_ENV, Opened, StoreBackend, StoreConfig, default_node_id, default_path, open,
    open_store,
};
pub use memory::MemoryStore;
pub use postgres::{Fence, PgCluster, PostgresOptions, PostgresStore};
pub use records::{
    EventRecord, MessageRecord, ProjectRecord, SessionRecord, ToolCallRecord, TurnRecord,
};
pub use redacting::Redacting;
pub use sqlite::SqliteStore;
pub use store::{BoxFuture, Store, StoreError, StoreResult};
