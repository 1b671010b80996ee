//! [`Cluster`]: what several hands nodes on one database coordinate through, beside the
//! [`Store`](crate::Store) itself — the nodes that are up and where each is reached, one lease
//! per session saying which node runs its turns (with an expiry and a fencing token), a view of
//! the store whose writes hold only while a lease does, and the announcements of new events.
//! The `postgres` backend implements it; a single node (SQLite, memory) has none.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::postgres::Fence;
use crate::{BoxFuture, Store, StoreResult};

/// An announcement from the database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The session has an event with this id (0: the session was deleted).
    Event {
        /// The session.
        session_id: String,
        /// The event's id, or 0 for "gone".
        id: u64,
    },
    /// Announcements may have been missed (the listening connection was re-made): every
    /// follower re-reads the store after the last event it has.
    Resync,
}

/// Who holds a session's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    /// The node.
    pub node_id: String,
    /// Where the node is reached (its `advertise_url`), if it registered one.
    pub url: Option<String>,
    /// Milliseconds until the lease expires unless renewed.
    pub expires_in_ms: i64,
}

/// The outcome of [`Cluster::acquire`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// The lease is this node's, under `token`.
    Granted {
        /// The fencing token every write under the lease carries.
        token: i64,
        /// The node whose expired lease was taken over, if it was one.
        took_over: Option<String>,
    },
    /// Another node holds it, unexpired.
    Held(LeaseOwner),
}

/// Coordination between nodes (see the module documentation).
pub trait Cluster: Send + Sync {
    /// Register (or re-register) this node and where other nodes reach it.
    fn join<'a>(&'a self, node_id: &'a str, url: &'a str) -> BoxFuture<'a, StoreResult<()>>;
    /// Mark the node as draining (it takes no new leases), or forget it (`gone`).
    fn leave<'a>(&'a self, node_id: &'a str, gone: bool) -> BoxFuture<'a, StoreResult<()>>;
    /// Take the session's lease for `ttl`: granted when free, expired, or already this
    /// process's under `held` (then renewed, same token); `Held` when another node holds it;
    /// `NotFound` when the session does not exist. A lease of `node_id` under another token
    /// than `held` (a previous process with this node id, or one this process forgot) is taken
    /// over at once: a new token, `took_over` naming the node.
    fn acquire<'a>(
        &'a self,
        session_id: &'a str,
        node_id: &'a str,
        held: Option<i64>,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Acquired>>;
    /// Extend the leases `held` (session, token) of `node_id` by `ttl`; returns the sessions
    /// whose lease is still this node's. Also marks the node as seen.
    fn renew<'a>(
        &'a self,
        node_id: &'a str,
        held: Vec<(String, i64)>,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>>;
    /// Give the lease up (nothing happens when the token is no longer current).
    fn release<'a>(&'a self, session_id: &'a str, token: i64) -> BoxFuture<'a, StoreResult<()>>;
    /// Where node `node_id` is reached, while it is registered (a node that left for good, or
    /// was unseen for a day, is not).
    fn node_url<'a>(&'a self, node_id: &'a str) -> BoxFuture<'a, StoreResult<Option<String>>>;
    /// Who holds the session's lease, when someone does and it has not expired.
    fn owner<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Option<LeaseOwner>>>;
    /// Sessions with a turn left running and no live lease (their node died): at most `limit`.
    fn orphans(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<String>>>;
    /// The store, but every write to `fence.session_id` holds only while its lease carries
    /// `fence.token` (else `StoreError::Fenced`); writes are redacted like the store's.
    fn fenced(&self, fence: Fence) -> Arc<dyn Store>;
    /// Announcements of new events, from one listening connection per process.
    fn notes(&self) -> broadcast::Receiver<Note>;
    /// The schema version of the database and the one this build needs (readiness).
    fn schema(&self) -> BoxFuture<'_, StoreResult<(i32, i32)>>;
}
