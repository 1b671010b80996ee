//! The host as one node of several: where a session's requests belong ([`Host::route`]), taking
//! a session's lease before loading it (and ending a dead node's turns first), the background
//! loops (announcements into feeds, lease renewal and the release of idle sessions' leases, the
//! sweep for turns whose node died), memory kept bounded by closing idle sessions past
//! `[cluster] cached_sessions`, readiness, metrics and the drain at shutdown.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use hands_core::Session;
use hands_store::{Note, Store, StoreError};
use tokio::sync::broadcast::error::RecvError;

use super::api::Host;
use super::error::{HostError, HostResult};
use super::events::Hub;
use super::live::Live;
use super::lock::lock;
use super::metrics::MetricsSnapshot;
use super::node::Route;
use super::parts::SessionInfo;
use super::takeover;

impl Host {
    /// Start the background loops (they end when the host is dropped).
    pub(super) fn started(self: Arc<Self>) -> Arc<Self> {
        let Some(cluster) = self.node.cluster.clone() else { return self };
        let stop = self.shutdown.clone();
        let mut notes = cluster.notes();
        let node = Arc::clone(&self.node);
        let until = stop.clone();
        tokio::spawn(async move {
            loop {
                let note = tokio::select! {
                    () = until.cancelled() => break,
                    note = notes.recv() => note,
                };
                match note {
                    Ok(note) => node.on_note(note),
                    Err(RecvError::Lagged(_)) => node.on_note(Note::Resync),
                    Err(RecvError::Closed) => break,
                }
            }
        });
        let renew = Duration::from_millis(self.node.config.renew_ms.max(100));
        let sweep = Duration::from_millis(self.node.config.sweep_ms.max(100));
        every(renew, Arc::downgrade(&self), stop.clone(), |host| Box::pin(host.renew()));
        every(sweep, Arc::downgrade(&self), stop, |host| Box::pin(host.sweep()));
        self
    }

    /// The hub of a live session: appends to `store`, delivered on the node's feed of it; a
    /// write refused for a lost lease aborts the session's work here.
    pub(super) fn hub(&self, session: &Session, store: &Arc<dyn Store>) -> Hub {
        let feed = self.node.feed(session.id(), &self.parts.store);
        let (node, lost) = (Arc::clone(&self.node), session.clone());
        Hub::new(
            session.id().to_owned(),
            Arc::clone(store),
            feed,
            Arc::clone(&self.node.metrics),
            Box::new(move || {
                node.forget(lost.id());
                lost.abort();
            }),
        )
    }

    /// The live session `id` if this node has it (and, with a cluster, still holds its lease;
    /// one whose lease was lost is dropped here).
    pub(super) fn cached(&self, id: &str) -> Option<Arc<Live>> {
        let mut map = lock(&self.live);
        let live = Arc::clone(map.get(id)?);
        if self.node.lease(id).is_none() {
            map.remove(id);
            drop(map);
            let session = live.session().clone();
            tokio::spawn(async move { session.close().await });
            return None;
        }
        live.used(self.node.tick());
        Some(live)
    }

    /// The store a session loaded now writes to: with a cluster, the session's lease is taken
    /// (`Elsewhere` when another node holds it) and the view is fenced by it; turns the store
    /// still has running are a dead node's (none runs here: the session was not live) and are
    /// ended first.
    pub(super) async fn own(&self, id: &str) -> HostResult<Arc<dyn Store>> {
        let Some(cluster) = &self.node.cluster else { return Ok(Arc::clone(&self.parts.store)) };
        if self.node.draining() {
            return Err(HostError::Draining);
        }
        match self.node.acquire(cluster, id).await? {
            Ok((store, took_over)) => {
                let from = took_over.unwrap_or_else(|| "an earlier node".into());
                if let Err(err) = takeover::end_orphaned_turns(&store, id, &from).await {
                    self.node.forget(id);
                    return Err(err.into());
                }
                Ok(store)
            }
            Err(route) => Err(HostError::Elsewhere(route)),
        }
    }

    /// A session this node does not hold, as the store describes it.
    pub(super) async fn stored_info(&self, id: &str) -> HostResult<SessionInfo> {
        let record = match self.parts.store.get_session(id).await {
            Ok(record) => record,
            Err(StoreError::NotFound(_)) => return Err(super::error::not_found(id)),
            Err(err) => return Err(err.into()),
        };
        let turns = self.parts.store.turns(id).await?;
        let mut info = super::api::info_of(&record);
        info.running_turn = turns.into_iter().rev().find(|t| t.status == "running").map(|t| t.id);
        Ok(info)
    }

    /// Whether the session must stay in memory: a turn or direct call, a question or approval
    /// waiting, or a background process running (closing the session would stop it).
    async fn pinned(&self, live: &Live) -> bool {
        let id = live.session().id();
        if live.busy() || !self.approvals.pending(id).is_empty() {
            return true;
        }
        if self.questions.pending().iter().any(|q| q.session == id) {
            return true;
        }
        match self.parts.registry.service::<Arc<dyn hands_core::ProcessService>>() {
            Some(processes) => processes
                .list(live.session())
                .await
                .processes
                .iter()
                .any(|p| p.status == hands_core::process::ProcessStatus::Running),
            None => false,
        }
    }

    /// Close idle sessions past `[cluster] cached_sessions`, least recently used first (their
    /// leases released); they are loaded again when asked for.
    pub(super) async fn evict(&self) {
        let cap = self.node.config.cached_sessions.max(1);
        let candidates: Vec<Arc<Live>> = {
            let map = lock(&self.live);
            if map.len() <= cap {
                return;
            }
            let mut idle: Vec<Arc<Live>> = map
                .values()
                .filter(|l| !l.busy() && l.feed().subscribers() == 0)
                .cloned()
                .collect();
            idle.sort_by_key(|l| l.last_used());
            idle.truncate(map.len() - cap);
            idle
        };
        for live in candidates {
            if !self.pinned(&live).await {
                self.forget_live(&live).await;
            }
        }
    }

    /// Drop `live` from memory (closing its session) and give its lease up.
    async fn forget_live(&self, live: &Arc<Live>) {
        let id = live.session().id().to_owned();
        {
            let mut map = lock(&self.live);
            if map.get(&id).is_some_and(|l| Arc::ptr_eq(l, live)) {
                map.remove(&id);
            }
        }
        let session = live.session().clone();
        tokio::spawn(async move { session.close().await });
        if let (Some(cluster), Some(token)) = (&self.node.cluster, self.node.forget(&id))
            && let Err(err) = cluster.release(&id, token).await
        {
            tracing::warn!(session = %id, %err, "releasing a lease");
        }
    }

    /// One renewal round: leases of sessions idle for two rounds are released, the others
    /// renewed in one statement; a lease the database no longer gives this node is lost (the
    /// session's work here is aborted and it is dropped from memory).
    async fn renew(&self) {
        let Some(cluster) = self.node.cluster.clone() else { return };
        let linger = Duration::from_millis(self.node.config.renew_ms.max(100) * 2);
        for (session, _) in self.node.held() {
            let live = lock(&self.live).get(&session).cloned();
            let busy = match &live {
                Some(live) => self.pinned(live).await,
                None => false,
            };
            let idle_for = self.node.busy(&session, busy);
            if !busy && idle_for >= linger && !self.node.draining() {
                match live {
                    Some(live) => self.forget_live(&live).await,
                    None => {
                        if let Some(token) = self.node.forget(&session) {
                            let _ = cluster.release(&session, token).await;
                        }
                    }
                }
            }
        }
        let held = self.node.held();
        let started = Instant::now();
        match cluster.renew(&self.node.id, held.clone(), self.node.lease_time()).await {
            Ok(kept) => {
                self.node.metrics.renewed(started.elapsed());
                for (session, _) in held.iter().filter(|(s, _)| !kept.contains(s)) {
                    tracing::warn!(session = %session, "this node lost the session's lease");
                    self.node.forget(session);
                    let live = lock(&self.live).remove(session);
                    if let Some(live) = live {
                        live.session().abort();
                        let session = live.session().clone();
                        tokio::spawn(async move { session.close().await });
                    }
                }
            }
            Err(err) => tracing::warn!(%err, "renewing this node's leases"),
        }
    }

    /// Take over the sessions whose turn's node died (their lease expired), which ends the turn.
    async fn sweep(&self) {
        let Some(cluster) = self.node.cluster.clone() else { return };
        if self.node.draining() {
            return;
        }
        let orphans = match cluster.orphans(16).await {
            Ok(orphans) => orphans,
            Err(err) => {
                tracing::warn!(%err, "looking for turns of stopped nodes");
                return;
            }
        };
        for session in orphans {
            if self.node.lease(&session).is_some() {
                continue;
            }
            match self.live(&session).await {
                Ok(_) | Err(HostError::Elsewhere(_) | HostError::NotFound(_)) => {}
                Err(err) => tracing::warn!(%session, %err, "taking over a session"),
            }
        }
    }

    /// Where requests about session `id` are handled: here, unless another node holds its
    /// lease (then forward them there).
    pub async fn route(&self, id: &str) -> HostResult<Route> {
        let Some(cluster) = &self.node.cluster else { return Ok(Route::Local) };
        if self.node.lease(id).is_some() {
            return Ok(Route::Local);
        }
        Ok(match cluster.owner(id).await? {
            Some(owner) if owner.node_id != self.node.id => Route::Forward {
                node_id: owner.node_id,
                url: owner.url.unwrap_or_default(),
                expires_in_ms: owner.expires_in_ms,
            },
            _ => Route::Local,
        })
    }

    /// Where node `node_id` is reached (its advertise URL), while it is registered; `None` alone
    /// or for a node that is not (it left for good).
    pub async fn node_url(&self, node_id: &str) -> HostResult<Option<String>> {
        let Some(cluster) = &self.node.cluster else { return Ok(None) };
        Ok(cluster.node_url(node_id).await?)
    }

    /// This node's name, and whether it shares the store with others.
    pub fn node_id(&self) -> (&str, bool) {
        (&self.node.id, self.node.cluster.is_some())
    }

    /// `[cluster] advertise_url`, when set.
    pub fn advertise_url(&self) -> Option<String> {
        Some(self.node.config.advertise_url.trim().to_owned()).filter(|u| !u.is_empty())
    }

    /// Whether the client's token may be forwarded to `url`: over https, or plain http to loopback
    /// unless `[cluster] plain_http_forwarding` allows any address.
    pub fn may_forward_to(&self, url: &str) -> Result<(), String> {
        super::node::forwarding_allowed(url, self.node.config.plain_http_forwarding)
    }

    /// `[cluster] drain_grace_ms`.
    pub fn drain_grace(&self) -> Duration {
        Duration::from_millis(self.node.config.drain_grace_ms)
    }

    /// How long a lease lasts (`[cluster] lease_ms`).
    pub fn lease_time(&self) -> Duration {
        self.node.lease_time()
    }

    /// Register this node, reached at `url`, with the others (no-op alone).
    pub async fn join(&self, url: &str) -> HostResult<()> {
        if let Some(cluster) = &self.node.cluster {
            cluster.join(&self.node.id, url).await?;
        }
        Ok(())
    }

    /// Whether the node can take requests: its store answers (with a cluster: at the schema
    /// version this build needs) and it is not draining. `Err` says why not.
    pub async fn ready(&self) -> Result<(), String> {
        if self.node.draining() {
            return Err("the node is draining (shutting down)".into());
        }
        match &self.node.cluster {
            Some(cluster) => match cluster.schema().await {
                Ok((have, want)) if have == want => Ok(()),
                Ok((have, want)) => Err(format!(
                    "the session database is at schema version {have}, this hands needs {want}: \
                     run `hands store migrate`"
                )),
                Err(err) => Err(format!("the session store does not answer: {err}")),
            },
            None => match self.parts.store.get_session("readyz-probe").await {
                Ok(_) | Err(StoreError::NotFound(_)) => Ok(()),
                Err(err) => Err(format!("the session store does not answer: {err}")),
            },
        }
    }

    /// The node's figures for `/metrics`.
    pub fn metrics(&self) -> MetricsSnapshot {
        let mut snapshot = self.node.metrics.snapshot();
        let lives: Vec<Arc<Live>> = lock(&self.live).values().cloned().collect();
        snapshot.turns_running = lives.iter().filter(|l| l.running().is_some()).count() as u64;
        snapshot.sessions_live = lives.len() as u64;
        snapshot.leases_held =
            if self.node.cluster.is_some() { self.node.held().len() as u64 } else { 0 };
        snapshot.subscribers = self.node.subscribers() as u64;
        snapshot.draining = self.node.draining();
        snapshot
    }

    /// Stop taking turns, let running ones end within `grace`, abort the rest (recorded under
    /// this node's leases), then give every lease up and leave the cluster. Event streams and
    /// other requests go on meanwhile; `close` follows.
    pub async fn drain(&self, grace: Duration) {
        self.node.set_draining();
        if let Some(cluster) = &self.node.cluster {
            let _ = cluster.leave(&self.node.id, false).await;
        }
        let deadline = Instant::now() + grace;
        loop {
            let running = lock(&self.live).values().any(|l| l.busy());
            if !running || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let lives: Vec<Arc<Live>> = lock(&self.live).values().cloned().collect();
        let busy: Vec<&Arc<Live>> = lives.iter().filter(|l| l.busy()).collect();
        if !busy.is_empty() {
            tracing::warn!(
                turns = busy.len(),
                "aborting the turns still running at the drain's end"
            );
        }
        futures_util::future::join_all(busy.into_iter().map(|live| async move {
            live.session().abort();
            live.wait_turn(Some(Duration::from_secs(10))).await;
        }))
        .await;
        if let Some(cluster) = &self.node.cluster {
            for (session, token) in self.node.held() {
                self.node.forget(&session);
                let _ = cluster.release(&session, token).await;
            }
            let _ = cluster.leave(&self.node.id, true).await;
        }
    }
}

/// Run `work` on `host` every `period` until `stop` fires or the host is gone.
fn every(
    period: Duration,
    host: Weak<Host>,
    stop: tokio_util::sync::CancellationToken,
    work: for<'a> fn(&'a Host) -> hands_core::BoxFuture<'a, ()>,
) {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => break,
                _ = interval.tick() => {}
            }
            let Some(host) = host.upgrade() else { break };
            work(&host).await;
        }
    });
}
