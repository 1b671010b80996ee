//! A session's event log on this node: [`Feed`] (the events in id order to this node's
//! subscribers, from this node's appends and from the store when another node appended), [`Hub`]
//! (appends for the session's live state: store, then feed) and [`Subscription`] (one reader).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hands_store::{EventRecord, Store, StoreError, StoreResult};
use tokio::sync::broadcast;

use crate::event::{Event, EventKind};

use super::ids::now_ms;
use super::lock::lock;
use super::metrics::Metrics;

/// Events read from the store per page.
const PAGE: usize = 1000;

/// Live events buffered per session for slow subscribers (who then read the store).
const BROADCAST_CAPACITY: usize = 256;

/// What keeps a subscription's feed alive; hold it as long as the [`Subscription::live`]
/// receiver is read.
#[derive(Clone)]
pub struct FeedHandle(#[allow(dead_code)] Arc<Feed>);

/// Events of one session: first the stored ones after the requested id, then live ones. Live
/// events with an id ≤ the last replayed one are skipped by [`Subscription::next`].
pub struct Subscription {
    /// Stored events after the requested id, oldest first.
    pub replay: Vec<Event>,
    /// Live events.
    pub live: broadcast::Receiver<Event>,
    /// Keeps the feed of `live` going.
    pub feed: FeedHandle,
    /// Replay events handed out by `next`.
    cursor: usize,
    /// The id of the last event handed out (or replayed).
    last: u64,
    /// Events read from the store after the live receiver lagged.
    backlog: VecDeque<Event>,
    store: Arc<dyn Store>,
    session_id: String,
}

impl Subscription {
    /// The next event: the replay first, then live ones (none twice, none missed); `None` once the
    /// session is gone (deleted, or the host closed).
    pub async fn next(&mut self) -> Option<Event> {
        if let Some(event) = self.replay.get(self.cursor) {
            self.cursor += 1;
            self.last = self.last.max(event.id);
            return Some(event.clone());
        }
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.id > self.last {
                    self.last = event.id;
                    return Some(event);
                }
                continue;
            }
            match self.live.recv().await {
                Ok(event) if event.id <= self.last => {}
                Ok(event) if event.id == self.last + 1 => {
                    self.last = event.id;
                    return Some(event);
                }
                // A gap (the feed started after this subscription's replay) or a lag: the store
                // has what was missed.
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                    tracing::debug!(session = %self.session_id, "subscriber re-reads the store");
                    match read_events(self.store.as_ref(), &self.session_id, self.last).await {
                        Ok(events) => self.backlog.extend(events),
                        Err(err) => {
                            tracing::warn!(session = %self.session_id, %err, "re-reading events")
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }
}

/// All stored events of `session` after `after`, page by page.
pub(super) async fn read_events(
    store: &dyn Store,
    session: &str,
    after: u64,
) -> StoreResult<Vec<Event>> {
    let mut events = Vec::new();
    let mut from = after;
    loop {
        let page = store.events_after(session, from, PAGE).await?;
        let full = page.len() == PAGE;
        for record in page {
            from = record.id;
            if let Some(event) = to_event(record) {
                events.push(event);
            }
        }
        if !full {
            return Ok(events);
        }
    }
}

fn to_event(record: EventRecord) -> Option<Event> {
    match serde_json::from_value::<EventKind>(record.data) {
        Ok(kind) => {
            Some(Event { id: record.id, session_id: record.session_id, at_ms: record.at_ms, kind })
        }
        Err(err) => {
            tracing::warn!(session = %record.session_id, id = record.id, %err, "unreadable event");
            None
        }
    }
}

/// One session's events in id order to this node's subscribers. This node's appends are
/// delivered as they are stored; another node's are read from the store when announced (or when
/// an append here skips ids). Nothing is delivered twice or out of order: `delivered` is the id
/// of the last event sent, and anything between it and a newer id is read from the store first.
pub(super) struct Feed {
    session_id: String,
    /// Unfenced: only reads.
    store: Arc<dyn Store>,
    /// `None` once the session is gone: receivers then see `Closed`.
    tx: Mutex<Option<broadcast::Sender<Event>>>,
    /// The id of the last event sent (`None`: nothing sent yet).
    delivered: tokio::sync::Mutex<Option<u64>>,
    /// `delivered`, readable without waiting (announcements of what was sent are skipped).
    hint: AtomicU64,
}

impl Feed {
    pub(super) fn new(session_id: String, store: Arc<dyn Store>) -> Self {
        Self {
            session_id,
            store,
            tx: Mutex::new(Some(broadcast::Sender::new(BROADCAST_CAPACITY))),
            delivered: tokio::sync::Mutex::new(None),
            hint: AtomicU64::new(0),
        }
    }

    fn send(&self, event: Event) {
        self.hint.fetch_max(event.id, Ordering::SeqCst);
        if let Some(tx) = lock(&self.tx).as_ref() {
            let _ = tx.send(event);
        }
    }

    /// Subscribers on this node.
    pub(super) fn subscribers(&self) -> usize {
        lock(&self.tx).as_ref().map_or(0, broadcast::Sender::receiver_count)
    }

    /// Whether an announcement of `id` may bring something new.
    pub(super) fn behind(&self, id: u64) -> bool {
        id > self.hint.load(Ordering::SeqCst)
    }

    /// This node stored `event`: send it, after whatever came before it from elsewhere.
    pub(super) async fn deliver(&self, event: Event) {
        let mut delivered = self.delivered.lock().await;
        match *delivered {
            Some(last) if event.id <= last => {}
            Some(last) if event.id > last + 1 => {
                self.read_and_send(&mut delivered, last).await;
                if delivered.is_none_or(|d| d < event.id) {
                    *delivered = Some(event.id);
                    self.send(event);
                }
            }
            _ => {
                *delivered = Some(event.id);
                self.send(event);
            }
        }
    }

    /// The store has events up to `id` (announced): send those not sent yet.
    pub(super) async fn catch_up(&self, id: u64) {
        let mut delivered = self.delivered.lock().await;
        let from = match *delivered {
            Some(last) if id <= last => return,
            Some(last) => last,
            None => id.saturating_sub(1),
        };
        self.read_and_send(&mut delivered, from).await;
    }

    /// Announcements may have been missed: send whatever the store has after the last sent.
    pub(super) async fn resync(&self) {
        let mut delivered = self.delivered.lock().await;
        if let Some(last) = *delivered {
            self.read_and_send(&mut delivered, last).await;
        }
    }

    async fn read_and_send(&self, delivered: &mut Option<u64>, after: u64) {
        match read_events(self.store.as_ref(), &self.session_id, after).await {
            Ok(events) => {
                for event in events {
                    if delivered.is_none_or(|d| event.id > d) {
                        *delivered = Some(event.id);
                        self.send(event);
                    }
                }
            }
            Err(StoreError::NotFound(_)) => self.close(),
            Err(err) => tracing::warn!(session = %self.session_id, %err, "reading new events"),
        }
    }

    /// The session is gone: subscribers' streams end.
    pub(super) fn close(&self) {
        lock(&self.tx).take();
    }

    /// Events after `after` (0: from the start), then live ones: first the live receiver,
    /// then the store (see the module documentation of the host for why nothing is lost).
    pub(super) async fn subscribe(self: &Arc<Self>, after: u64) -> StoreResult<Subscription> {
        let receiver = lock(&self.tx)
            .as_ref()
            .map(broadcast::Sender::subscribe)
            .ok_or_else(|| StoreError::NotFound(format!("session {}", self.session_id)))?;
        let replay = read_events(self.store.as_ref(), &self.session_id, after).await?;
        let last = replay.last().map_or(after, |e| e.id.max(after));
        Ok(Subscription {
            replay,
            live: receiver,
            feed: FeedHandle(Arc::clone(self)),
            cursor: 0,
            last,
            backlog: VecDeque::new(),
            store: Arc::clone(&self.store),
            session_id: self.session_id.clone(),
        })
    }
}

/// A live session's appends: to its store (fenced when the session's lease is this node's),
/// then to its feed.
pub(super) struct Hub {
    session_id: String,
    store: Arc<dyn Store>,
    feed: Arc<Feed>,
    metrics: Arc<Metrics>,
    /// Called when a write is refused for a lost lease.
    lost: Box<dyn Fn() + Send + Sync>,
}

impl Hub {
    /// The appends of the session `session_id` to `store`, delivered on `feed`.
    pub(super) fn new(
        session_id: String,
        store: Arc<dyn Store>,
        feed: Arc<Feed>,
        metrics: Arc<Metrics>,
        lost: Box<dyn Fn() + Send + Sync>,
    ) -> Self {
        Self { session_id, store, feed, metrics, lost }
    }

    /// The feed.
    pub(super) fn feed(&self) -> &Arc<Feed> {
        &self.feed
    }

    /// Store the event, then deliver it. A store failure is logged and the event dropped (it
    /// has no id without the store).
    pub(super) async fn emit(&self, kind: EventKind) -> Option<Event> {
        let mut data = match serde_json::to_value(&kind) {
            Ok(data) => data,
            Err(err) => {
                tracing::error!(%err, "event to JSON");
                return None;
            }
        };
        // Stored and streamed (SSE) without secrets: the typed event is rebuilt from the
        // redacted JSON when it held one (a placeholder is a string wherever a value was).
        let kind = if hands_core::redact::json(&mut data) {
            match serde_json::from_value(data.clone()) {
                Ok(clean) => clean,
                Err(err) => {
                    tracing::error!(%err, event = kind.name(), "redacted event from JSON");
                    return None;
                }
            }
        } else {
            kind
        };
        let at_ms = now_ms();
        let started = std::time::Instant::now();
        let stored = self.store.append_event(&self.session_id, at_ms, data).await;
        self.metrics.appended(started.elapsed());
        match stored {
            Ok(id) => {
                let event = Event { id, session_id: self.session_id.clone(), at_ms, kind };
                self.feed.deliver(event.clone()).await;
                Some(event)
            }
            Err(err) => {
                if matches!(err, StoreError::Fenced(_)) {
                    self.metrics.fenced();
                    (self.lost)();
                }
                tracing::warn!(session = %self.session_id, %err, event = kind.name(), "storing an event");
                None
            }
        }
    }
}
