//! This node among others: `[cluster]`, the leases it holds, the feeds of the sessions it
//! streams, and the background work of a host — renewing leases (and giving up those of idle
//! sessions), ending the turns of nodes that died (the sweep), following the database's
//! announcements into feeds, and keeping memory bounded by closing idle sessions past
//! `cached_sessions`. A host without a [`Cluster`] (SQLite, memory) is a node alone: it owns
//! every session and only evicts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use hands_store::{Acquired, Cluster, Fence, Note, Store};
use serde::{Deserialize, Serialize};

use super::events::Feed;
use super::lock::lock;
use super::metrics::Metrics;

/// `[cluster]`: several `hands serve` nodes on one PostgreSQL database (`[store] backend =
/// "postgres"`); `cached_sessions` and `drain_grace_ms` apply to a single node too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// This node's name among the others (default: host name and process id).
    pub node_id: String,
    /// Where the other nodes reach this one, e.g. `http://10.0.3.7:7777` (default: the address
    /// `hands serve` listens on).
    pub advertise_url: String,
    /// Forward requests to other nodes over plain `http://` on addresses that are not loopback.
    /// A forwarded request carries the client's bearer token, so by default a node only forwards
    /// to an `https://` URL or to a loopback address, and a node whose own `advertise_url` would
    /// need plain HTTP does not start. Set it only where the network between nodes is private
    /// and encrypted by other means (a service mesh's mTLS, a VPN).
    pub plain_http_forwarding: bool,
    /// How long a session's lease lasts unless renewed: after a node dies, its turns are ended
    /// by another node this long after its last renewal.
    pub lease_ms: u64,
    /// How often leases are renewed (well under `lease_ms`).
    pub renew_ms: u64,
    /// How often a node looks for turns whose node died.
    pub sweep_ms: u64,
    /// Idle sessions kept in memory (the rest are loaded from the store when asked for).
    pub cached_sessions: usize,
    /// On SIGTERM: how long running turns may go on before they are aborted.
    pub drain_grace_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            node_id: String::new(),
            advertise_url: String::new(),
            plain_http_forwarding: false,
            lease_ms: 10_000,
            renew_ms: 3_000,
            sweep_ms: 2_000,
            cached_sessions: 256,
            drain_grace_ms: 10_000,
        }
    }
}

/// What a host is opened with besides its parts.
#[derive(Clone, Default)]
pub struct HostOptions {
    /// The database's coordination, when several nodes share it.
    pub cluster: Option<Arc<dyn Cluster>>,
    /// `[cluster]`.
    pub config: ClusterConfig,
}

/// Where a request about a session is handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Here.
    Local,
    /// On the node holding the session's lease.
    Forward {
        /// The node.
        node_id: String,
        /// Where it is reached.
        url: String,
        /// Milliseconds until its lease expires unless renewed.
        expires_in_ms: i64,
    },
}

/// A lease held by this node.
struct Held {
    token: i64,
    /// When the session was last busy (leases of sessions idle for a while are given up).
    busy_at: Instant,
}

/// The node's state.
pub(super) struct Node {
    pub(super) cluster: Option<Arc<dyn Cluster>>,
    pub(super) id: String,
    pub(super) config: ClusterConfig,
    pub(super) metrics: Arc<Metrics>,
    leases: Mutex<HashMap<String, Held>>,
    feeds: Mutex<HashMap<String, Weak<Feed>>>,
    draining: AtomicBool,
    /// A clock for least-recently-used eviction.
    clock: AtomicU64,
}

impl Node {
    pub(super) fn new(options: HostOptions) -> Self {
        let mut config = options.config;
        if config.node_id.trim().is_empty() {
            config.node_id = hands_store::default_node_id();
        }
        Self {
            cluster: options.cluster,
            id: config.node_id.clone(),
            config,
            metrics: Arc::new(Metrics::default()),
            leases: Mutex::new(HashMap::new()),
            feeds: Mutex::new(HashMap::new()),
            draining: AtomicBool::new(false),
            clock: AtomicU64::new(0),
        }
    }

    /// A tick of the eviction clock.
    pub(super) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    pub(super) fn lease_time(&self) -> Duration {
        Duration::from_millis(self.config.lease_ms.max(500))
    }

    pub(super) fn draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    pub(super) fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// The token of this node's lease of `session`, if it holds one (always `Some(0)` alone).
    pub(super) fn lease(&self, session: &str) -> Option<i64> {
        if self.cluster.is_none() {
            return Some(0);
        }
        lock(&self.leases).get(session).map(|h| h.token)
    }

    pub(super) fn held(&self) -> Vec<(String, i64)> {
        lock(&self.leases).iter().map(|(s, h)| (s.clone(), h.token)).collect()
    }

    pub(super) fn hold(&self, session: &str, token: i64) {
        lock(&self.leases).insert(session.to_owned(), Held { token, busy_at: Instant::now() });
    }

    /// Forget the lease (lost, or released); its token.
    pub(super) fn forget(&self, session: &str) -> Option<i64> {
        lock(&self.leases).remove(session).map(|h| h.token)
    }

    /// Note that the session is busy now; how long it had been idle before.
    pub(super) fn busy(&self, session: &str, busy: bool) -> Duration {
        let mut leases = lock(&self.leases);
        let Some(held) = leases.get_mut(session) else { return Duration::ZERO };
        if busy {
            held.busy_at = Instant::now();
        }
        held.busy_at.elapsed()
    }

    /// The feed of `session`, made on first use (and followed from the announcements).
    pub(super) fn feed(&self, session: &str, store: &Arc<dyn Store>) -> Arc<Feed> {
        let mut feeds = lock(&self.feeds);
        if let Some(feed) = feeds.get(session).and_then(Weak::upgrade) {
            return feed;
        }
        if feeds.len() > 64 && feeds.len().is_power_of_two() {
            feeds.retain(|_, f| f.strong_count() > 0);
        }
        let feed = Arc::new(Feed::new(session.to_owned(), Arc::clone(store)));
        feeds.insert(session.to_owned(), Arc::downgrade(&feed));
        feed
    }

    /// The feed of `session`, if this node has one.
    pub(super) fn existing_feed(&self, session: &str) -> Option<Arc<Feed>> {
        lock(&self.feeds).get(session).and_then(Weak::upgrade)
    }

    /// Subscribers on this node, all sessions.
    pub(super) fn subscribers(&self) -> usize {
        lock(&self.feeds).values().filter_map(Weak::upgrade).map(|f| f.subscribers()).sum()
    }

    /// Follow an announcement into the feed it concerns.
    pub(super) fn on_note(&self, note: Note) {
        match note {
            Note::Event { session_id, id } => {
                let Some(feed) = self.existing_feed(&session_id) else { return };
                if id == 0 {
                    tokio::spawn(async move { feed.catch_up(u64::MAX).await });
                } else if feed.behind(id) {
                    tokio::spawn(async move { feed.catch_up(id).await });
                }
            }
            Note::Resync => {
                let feeds: Vec<Arc<Feed>> =
                    lock(&self.feeds).values().filter_map(Weak::upgrade).collect();
                for feed in feeds {
                    tokio::spawn(async move { feed.resync().await });
                }
            }
        }
    }

    /// Take the session's lease: `Ok(Some(fenced store, node taken over from))`, or `Ok(None)`
    /// with the owner when another node holds it.
    pub(super) async fn acquire(
        &self,
        cluster: &Arc<dyn Cluster>,
        session: &str,
    ) -> hands_store::StoreResult<Result<(Arc<dyn Store>, Option<String>), Route>> {
        let held = lock(&self.leases).get(session).map(|h| h.token);
        match cluster.acquire(session, &self.id, held, self.lease_time()).await? {
            Acquired::Granted { token, took_over } => {
                if took_over.is_some() {
                    self.metrics.took_over();
                }
                self.hold(session, token);
                let fenced = cluster.fenced(Fence { session_id: session.to_owned(), token });
                Ok(Ok((fenced, took_over)))
            }
            Acquired::Held(owner) => Ok(Err(Route::Forward {
                node_id: owner.node_id,
                url: owner.url.unwrap_or_default(),
                expires_in_ms: owner.expires_in_ms,
            })),
        }
    }
}

/// Whether the client's token may be sent to `url`, a node's advertise URL: over `https://`
/// always; over `http://` only to a loopback address (`127.0.0.0/8`, `::1`, `localhost`) unless
/// `plain_http` (`[cluster] plain_http_forwarding`) allows any. The error says what to change.
pub fn forwarding_allowed(url: &str, plain_http: bool) -> Result<(), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("the node URL {url:?} has no scheme: use https://HOST:PORT"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.rsplit_once(':').map_or(host_port, |(h, _)| h),
    };
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if loopback || plain_http => Ok(()),
        "http" => Err(format!(
            "the node URL {url} is plain http:// on an address that is not loopback: forwarded \
             requests carry the client's token, so they go over https:// only. Serve the nodes \
             behind TLS and set [cluster] advertise_url = \"https://…\", or, where the network \
             between nodes is encrypted by other means, set [cluster] plain_http_forwarding = true"
        )),
        other => Err(format!("the node URL {url} has the scheme {other}: use https://")),
    }
}

#[cfg(test)]
mod tests {
    use super::forwarding_allowed;

    #[test]
    fn the_token_goes_over_https_or_to_loopback_only() {
        for ok in [
            "https://10.0.3.7:7777",
            "https://nodes.example:443/",
            "http://127.0.0.1:7777",
            "http://127.9.9.9:1",
            "http://[::1]:7777/",
            "http://localhost:80",
            "HTTP://LOCALHOST:80",
        ] {
            assert_eq!(forwarding_allowed(ok, false), Ok(()), "{ok}");
        }
        for refused in [
            "http://10.0.3.7:7777",
            "http://0.0.0.0:7777",
            "http://[::]:7777",
            "http://127.0.0.1.nip.io:7777",
            "http://localhost.example:7777",
            "http://user@10.0.0.1:7777",
            "ftp://127.0.0.1/",
            "10.0.3.7:7777",
        ] {
            let err = forwarding_allowed(refused, false).unwrap_err();
            assert!(err.contains(refused) || err.contains("scheme"), "{refused}: {err}");
        }
        assert_eq!(forwarding_allowed("http://10.0.3.7:7777", true), Ok(()));
        assert!(forwarding_allowed("ftp://10.0.3.7", true).is_err());
    }
}
