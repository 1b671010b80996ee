//! `GET /v1/sessions/{id}/events`: the session's events as Server-Sent Events (`id:` the event id,
//! `event:` its type, `data:` its JSON). A client resumes after the last id it saw
//! (`Last-Event-ID`, or `?after=N` on the first connection) and gets exactly the events it missed:
//! the stored ones first, then live ones. Live delivery is a broadcast channel; when this stream
//! falls behind it (lag) or sees a gap in the ids, it reads the store again after the last id it
//! sent, so a slow client loses nothing and never sees an event twice.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use hands_agent::event::Event;
use hands_agent::host::{FeedHandle, Host, Subscription};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::state::AppState;

/// How often an idle stream sends a comment, so that proxies keep it open.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// `?after=N`.
#[derive(Debug, Deserialize)]
pub struct EventsQuery {
    /// Send the events after this id (0: from the start).
    #[serde(default)]
    pub after: Option<u64>,
}

/// The handler. 404 for an unknown session (before any event is sent); 400 for a
/// `Last-Event-ID` that is not a number.
pub async fn stream(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<EventsQuery>,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    // A reconnecting EventSource sends the header while its URL still carries the first `after`:
    // the header is the newer position.
    let after = match headers.get("last-event-id") {
        Some(value) => {
            let text = value.to_str().unwrap_or("").trim();
            text.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "Last-Event-ID {text:?} is not an event id: send the `id:` of the last \
                     event received"
                ))
            })?
        }
        None => query.after.unwrap_or(0),
    };
    let subscription = state.host.subscribe(&id, after).await?;
    let events = events(Arc::clone(&state.host), id, after, subscription, state.shutdown.clone());
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
}

/// Where one stream is.
struct Cursor {
    host: Arc<Host>,
    session: String,
    /// The id of the last event sent (or the client's starting point).
    last_sent: u64,
    replay: VecDeque<Event>,
    live: tokio::sync::broadcast::Receiver<Event>,
    /// Keeps the session's feed on this node going while `live` is read.
    _feed: FeedHandle,
    shutdown: CancellationToken,
}

/// What the cursor does next.
enum Step {
    /// Boxed: an event is much larger than the other steps.
    Send(Box<Event>),
    /// Read the store again after `last_sent` (a lag or a gap).
    Resubscribe,
    End,
}

fn events(
    host: Arc<Host>,
    session: String,
    after: u64,
    subscription: Subscription,
    shutdown: CancellationToken,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let cursor = Cursor {
        host,
        session,
        last_sent: after,
        replay: subscription.replay.into(),
        live: subscription.live,
        _feed: subscription.feed,
        shutdown,
    };
    stream::unfold(cursor, |mut cursor| async move {
        loop {
            match cursor.step().await {
                Step::Send(event) => {
                    cursor.last_sent = event.id;
                    return Some((Ok(to_sse(&event)), cursor));
                }
                Step::Resubscribe => {
                    match cursor.host.subscribe(&cursor.session, cursor.last_sent).await {
                        Ok(subscription) => {
                            cursor.replay = subscription.replay.into();
                            cursor.live = subscription.live;
                            cursor._feed = subscription.feed;
                        }
                        // The session is gone (deleted) or the store failed: end the stream;
                        // the client reconnects with its Last-Event-ID and gets the reason.
                        Err(err) => {
                            tracing::debug!(session = %cursor.session, %err, "event stream ends");
                            return None;
                        }
                    }
                }
                Step::End => return None,
            }
        }
    })
}

impl Cursor {
    async fn step(&mut self) -> Step {
        while let Some(event) = self.replay.pop_front() {
            if event.id > self.last_sent {
                return Step::Send(Box::new(event));
            }
        }
        loop {
            let received = tokio::select! {
                () = self.shutdown.cancelled() => return Step::End,
                received = self.live.recv() => received,
            };
            match received {
                Ok(event) if event.id <= self.last_sent => continue,
                Ok(event) if event.id == self.last_sent + 1 => return Step::Send(Box::new(event)),
                // Ids have no gaps: a jump means this receiver missed some; the store has them.
                Ok(_) | Err(RecvError::Lagged(_)) => return Step::Resubscribe,
                Err(RecvError::Closed) => return Step::End,
            }
        }
    }
}

fn to_sse(event: &Event) -> SseEvent {
    let sse = SseEvent::default().id(event.id.to_string()).event(event.kind.name());
    match serde_json::to_string(event) {
        Ok(json) => sse.data(json),
        // An event is plain data; should serialisation ever fail, the id still advances and
        // the client sees why.
        Err(err) => sse.data(format!("{{\"error\":{:?}}}", err.to_string())),
    }
}
