//! [`PostgresStore`]: the [`Store`] in a PostgreSQL database, which several hands nodes share.
//! Each method is one statement (or two) on a pooled connection (`pool`), TLS as the URL's
//! `sslmode` says (`tls`). The layout comes from the numbered migrations of `schema`, applied
//! under an advisory lock by the first call of the first node (or by `hands store migrate`).
//! Message `seq` and event `id` are counters in the session's row, bumped by the statement that
//! inserts the row they number: the row lock queues concurrent appends from every node, so ids
//! are consecutive, commit in id order, and a reader never sees a gap. An appended event is
//! announced with `pg_notify('hands_events', 'session:id')`, delivered at commit.

mod error;
mod fenced;
mod lease;
mod notify;
mod ops;
mod pool;
pub mod schema;
mod sql;
mod store;
mod tls;

pub use self::lease::PgCluster;
pub use self::ops::Fence;
pub use self::store::{PostgresOptions, PostgresStore};
