//! [`PgCluster`]: the [`Cluster`] of the `postgres` backend. Leases are rows of `leases` (owner
//! node, expiry by the database's clock, fencing token from a sequence); taking one is a short
//! transaction that locks the row, so two nodes racing for an expired lease serialise and the
//! second finds it held. Nodes are rows of `nodes` (where each is reached, when last seen).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::broadcast;

use super::error::backend;
use super::fenced::Fenced;
use super::store::PostgresStore;
use super::{notify, schema};
use crate::cluster::{Acquired, Cluster, LeaseOwner, Note};
use crate::redacting::Redacting;
use crate::{BoxFuture, Fence, Store, StoreError, StoreResult};

/// Announcements buffered per process before a slow follower is told to resync.
const NOTES: usize = 4096;

/// Several nodes on one PostgreSQL database.
pub struct PgCluster {
    store: Arc<PostgresStore>,
    notes: broadcast::Sender<Note>,
    /// Set once the listening task runs.
    listening: Mutex<bool>,
}

fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

const OWNER: &str = "SELECT l.node_id, n.url, \
     (extract(epoch FROM l.expires_at - now()) * 1000)::bigint \
     FROM leases l LEFT JOIN nodes n ON n.id = l.node_id \
     WHERE l.session_id = $1 AND l.expires_at > now()";

const RENEW: &str = "WITH seen AS (UPDATE nodes SET seen_at = now() WHERE id = $1)
     UPDATE leases l SET expires_at = now() + $4::bigint * interval '1 millisecond'
     FROM unnest($2::text[], $3::bigint[]) AS h(session_id, token)
     WHERE l.session_id = h.session_id AND l.token = h.token AND l.node_id = $1
     RETURNING l.session_id";

const RELEASE: &str = "DELETE FROM leases WHERE session_id = $1 AND token = $2";

const ORPHANS: &str = "SELECT DISTINCT t.session_id FROM turns t \
     LEFT JOIN leases l ON l.session_id = t.session_id \
     WHERE t.status = 'running' AND (l.session_id IS NULL OR l.expires_at < now()) LIMIT $1";

const JOIN: &str = "INSERT INTO nodes (id, url) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE \
     SET url = excluded.url, seen_at = now(), draining = false";

impl PgCluster {
    /// The cluster over `store` (the same pool). Nothing listens until [`Cluster::notes`].
    pub fn new(store: Arc<PostgresStore>) -> Self {
        Self { store, notes: broadcast::Sender::new(NOTES), listening: Mutex::new(false) }
    }

    async fn acquire_once(
        &self,
        session_id: &str,
        node_id: &str,
        held: Option<i64>,
        ttl: Duration,
    ) -> StoreResult<Option<Acquired>> {
        let op = "acquiring a lease";
        let mut conn = self.store.conn(op).await?;
        let tx = conn.client.transaction().await.map_err(|e| backend(op, &e))?;
        let rows = tx
            .query(
                "SELECT l.node_id, l.token, l.expires_at <= now(), n.url, \
                 (extract(epoch FROM l.expires_at - now()) * 1000)::bigint \
                 FROM leases l LEFT JOIN nodes n ON n.id = l.node_id \
                 WHERE l.session_id = $1 FOR UPDATE OF l",
                &[&session_id],
            )
            .await
            .map_err(|e| backend(op, &e))?;
        let ttl = millis(ttl);
        let acquired = match rows.first() {
            Some(row) => {
                let (owner, token, expired): (String, i64, bool) =
                    (row.get(0), row.get(1), row.get(2));
                // Only the process holding the token renews it. One that reuses a dead one's
                // node id (a restarted pod), or that forgot a lease it held, takes it over like
                // anyone else, expired or not: a new token (what the old token writes is
                // refused), and the turns left behind are ended.
                let ours = owner == node_id && held == Some(token);
                if ours && !expired {
                    tx.execute(
                        "UPDATE leases SET expires_at = now() + $2::bigint * interval \
                         '1 millisecond' WHERE session_id = $1",
                        &[&session_id, &ttl],
                    )
                    .await
                    .map_err(|e| backend(op, &e))?;
                    Acquired::Granted { token, took_over: None }
                } else if !expired && owner != node_id {
                    Acquired::Held(LeaseOwner {
                        node_id: owner,
                        url: row.get(3),
                        expires_in_ms: row.get(4),
                    })
                } else {
                    let token: i64 = tx
                        .query_one(
                            "UPDATE leases SET node_id = $2, token = nextval('lease_tokens'), \
                             acquired_at = now(), \
                             expires_at = now() + $3::bigint * interval '1 millisecond' \
                             WHERE session_id = $1 RETURNING token",
                            &[&session_id, &node_id, &ttl],
                        )
                        .await
                        .map_err(|e| backend(op, &e))?
                        .get(0);
                    Acquired::Granted { token, took_over: Some(owner) }
                }
            }
            None => {
                let inserted = tx
                    .query(
                        "INSERT INTO leases (session_id, node_id, token, expires_at) \
                         SELECT id, $2, nextval('lease_tokens'), \
                             now() + $3::bigint * interval '1 millisecond' \
                         FROM sessions WHERE id = $1 \
                         ON CONFLICT (session_id) DO NOTHING RETURNING token",
                        &[&session_id, &node_id, &ttl],
                    )
                    .await
                    .map_err(|e| backend(op, &e))?;
                match inserted.first() {
                    Some(row) => Acquired::Granted { token: row.get(0), took_over: None },
                    None => {
                        let exists = tx
                            .query("SELECT 1 FROM sessions WHERE id = $1", &[&session_id])
                            .await
                            .map_err(|e| backend(op, &e))?;
                        if exists.is_empty() {
                            return Err(StoreError::NotFound(format!("session {session_id}")));
                        }
                        // Another node inserted it meanwhile: look again.
                        return Ok(None);
                    }
                }
            }
        };
        tx.commit().await.map_err(|e| backend(op, &e))?;
        Ok(Some(acquired))
    }
}

impl Cluster for PgCluster {
    fn join<'a>(&'a self, node_id: &'a str, url: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let mut conn = self.store.conn("registering the node").await?;
            conn.query(JOIN, &[&node_id, &url]).await.map_err(|e| backend("joining", &e))?;
            // Nodes unseen for a day are gone for good.
            let _ = conn
                .client
                .execute("DELETE FROM nodes WHERE seen_at < now() - interval '1 day'", &[])
                .await;
            Ok(())
        })
    }

    fn leave<'a>(&'a self, node_id: &'a str, gone: bool) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let conn = self.store.conn("leaving").await?;
            let sql = if gone {
                "DELETE FROM nodes WHERE id = $1"
            } else {
                "UPDATE nodes SET draining = true WHERE id = $1"
            };
            conn.client.execute(sql, &[&node_id]).await.map_err(|e| backend("leaving", &e))?;
            Ok(())
        })
    }

    fn acquire<'a>(
        &'a self,
        session_id: &'a str,
        node_id: &'a str,
        held: Option<i64>,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Acquired>> {
        Box::pin(async move {
            for _ in 0..3 {
                if let Some(acquired) = self.acquire_once(session_id, node_id, held, ttl).await? {
                    return Ok(acquired);
                }
            }
            Err(StoreError::Backend(format!("the lease of session {session_id} is contended")))
        })
    }

    fn renew<'a>(
        &'a self,
        node_id: &'a str,
        held: Vec<(String, i64)>,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        Box::pin(async move {
            let (sessions, tokens): (Vec<String>, Vec<i64>) = held.into_iter().unzip();
            let mut conn = self.store.conn("renewing leases").await?;
            let rows = conn
                .query(RENEW, &[&node_id, &sessions, &tokens, &millis(ttl)])
                .await
                .map_err(|e| backend("renewing leases", &e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    fn release<'a>(&'a self, session_id: &'a str, token: i64) -> BoxFuture<'a, StoreResult<()>> {
        Box::pin(async move {
            let mut conn = self.store.conn("releasing a lease").await?;
            conn.query(RELEASE, &[&session_id, &token])
                .await
                .map_err(|e| backend("releasing a lease", &e))?;
            Ok(())
        })
    }

    fn node_url<'a>(&'a self, node_id: &'a str) -> BoxFuture<'a, StoreResult<Option<String>>> {
        Box::pin(async move {
            let mut conn = self.store.conn("reading a node").await?;
            let rows = conn
                .query("SELECT url FROM nodes WHERE id = $1", &[&node_id])
                .await
                .map_err(|e| backend("reading a node", &e))?;
            Ok(rows.first().map(|row| row.get(0)))
        })
    }

    fn owner<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, StoreResult<Option<LeaseOwner>>> {
        Box::pin(async move {
            let mut conn = self.store.conn("reading a lease").await?;
            let rows = conn.query(OWNER, &[&session_id]).await.map_err(|e| backend("lease", &e))?;
            Ok(rows.first().map(|row| LeaseOwner {
                node_id: row.get(0),
                url: row.get(1),
                expires_in_ms: row.get(2),
            }))
        })
    }

    fn orphans(&self, limit: usize) -> BoxFuture<'_, StoreResult<Vec<String>>> {
        Box::pin(async move {
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let mut conn = self.store.conn("finding orphaned turns").await?;
            let rows = conn
                .query(ORPHANS, &[&limit])
                .await
                .map_err(|e| backend("finding orphaned turns", &e))?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    fn fenced(&self, fence: Fence) -> Arc<dyn Store> {
        let fenced: Arc<dyn Store> = Arc::new(Fenced::new(Arc::clone(&self.store), fence));
        Arc::new(Redacting(fenced))
    }

    fn notes(&self) -> broadcast::Receiver<Note> {
        let receiver = self.notes.subscribe();
        let mut listening =
            self.listening.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*listening {
            *listening = true;
            tokio::spawn(notify::run(Arc::clone(&self.store), self.notes.clone()));
        }
        receiver
    }

    fn schema(&self) -> BoxFuture<'_, StoreResult<(i32, i32)>> {
        Box::pin(async move {
            // Through the pool's first checkout: that applies the migrations when configured.
            drop(self.store.conn("checking the schema").await?);
            let (have, want) = self.store.schema_version().await?;
            debug_assert_eq!(want, schema::latest());
            Ok((have, want))
        })
    }
}
