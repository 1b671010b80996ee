//! A session's event log ([`Hub`]: stored, then broadcast) and its readers ([`Subscription`]).

use std::collections::VecDeque;
use std::sync::Arc;

use hands_store::{EventRecord, Store, StoreResult};
use tokio::sync::broadcast;

use crate::event::{Event, EventKind};

use super::ids::now_ms;

/// Events read from the store per page.
const PAGE: usize = 1000;

/// Live events buffered per session for slow subscribers (who then read the store).
const BROADCAST_CAPACITY: usize = 1024;

/// Events of one session: first the stored ones after the requested id, then live ones. Live
/// events with an id ≤ the last replayed one are skipped by [`Subscription::next`].
pub struct Subscription {
    /// Stored events after the requested id, oldest first.
    pub replay: Vec<Event>,
    /// Live events.
    pub live: broadcast::Receiver<Event>,
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
                Ok(event) => {
                    self.last = event.id;
                    return Some(event);
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(session = %self.session_id, missed, "subscriber lagged");
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
async fn read_events(store: &dyn Store, session: &str, after: u64) -> StoreResult<Vec<Event>> {
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

/// A session's event log: append to the store, then broadcast, in id order.
pub(super) struct Hub {
    session_id: String,
    store: Arc<dyn Store>,
    tx: broadcast::Sender<Event>,
    /// Held from storing an event to broadcasting it, so that the broadcast order is the id order.
    order: tokio::sync::Mutex<()>,
}

impl Hub {
    /// The event log of the session `session_id`, kept in `store`.
    pub(super) fn new(session_id: String, store: Arc<dyn Store>) -> Self {
        Self {
            session_id,
            store,
            tx: broadcast::Sender::new(BROADCAST_CAPACITY),
            order: tokio::sync::Mutex::new(()),
        }
    }

    /// Events after `after` (0: from the start), then live ones: first the live receiver,
    /// then the store (see the module documentation of the host for why nothing is lost).
    pub(super) async fn subscribe(&self, after: u64) -> StoreResult<Subscription> {
        let store = Arc::clone(&self.store);
        let receiver = self.tx.subscribe();
        let replay = read_events(store.as_ref(), &self.session_id, after).await?;
        let last = replay.last().map_or(after, |e| e.id.max(after));
        Ok(Subscription {
            replay,
            live: receiver,
            cursor: 0,
            last,
            backlog: VecDeque::new(),
            store,
            session_id: self.session_id.clone(),
        })
    }

    /// Store the event, then broadcast it. A store failure is logged and the event dropped (it
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
        let _order = self.order.lock().await;
        let at_ms = now_ms();
        match self.store.append_event(&self.session_id, at_ms, data).await {
            Ok(id) => {
                let event = Event { id, session_id: self.session_id.clone(), at_ms, kind };
                let _ = self.tx.send(event.clone());
                Some(event)
            }
            Err(err) => {
                tracing::warn!(session = %self.session_id, %err, event = kind.name(), "storing an event");
                None
            }
        }
    }
}
