//! A live session: its core session, event hub, conversation and turn state. Other files of the
//! host ask it for what they want (its session, an event, a turn started or ended); its state is
//! its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_core::{CancellationToken, Mode, Session};
use hands_store::{SessionRecord, Store};
use serde_json::Value;
use tokio::sync::watch;

use crate::event::{Event, EventKind};
use crate::model::Message;

use super::events::Hub;
use super::ids::now_ms;
use super::lock::lock;

/// The running turn of a session, and how the last one ended.
#[derive(Default)]
struct TurnState {
    running: Option<Running>,
    last_status: Option<String>,
}

/// A turn that runs: its id, and where its final status will appear.
struct Running {
    id: String,
    done: watch::Receiver<Option<String>>,
}

/// A live session.
pub(super) struct Live {
    session: Session,
    hub: Arc<Hub>,
    store: Arc<dyn Store>,
    record: Mutex<SessionRecord>,
    conversation: tokio::sync::Mutex<Vec<Message>>,
    turn: Mutex<TurnState>,
    /// The mode and todo list last announced (and stored).
    announced: tokio::sync::Mutex<(Mode, Vec<crate::Todo>)>,
    /// Direct tool calls ([`Host::call_tool`](super::Host::call_tool)) in flight: an abort of the
    /// project counts a session busy with one.
    direct_calls: AtomicU64,
    /// The node's eviction clock when the session was last asked for.
    last_used: AtomicU64,
}

/// A direct call in flight ([`Live::direct_call`]); counted until dropped.
pub(super) struct DirectCall<'a>(&'a AtomicU64);

impl Drop for DirectCall<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Live {
    /// A live session over `session` (its mode and todo list taken as already announced), with
    /// the stored `record`, its conversation so far and how its last turn ended.
    pub(super) fn new(
        session: Session,
        hub: Arc<Hub>,
        store: Arc<dyn Store>,
        record: SessionRecord,
        messages: Vec<Message>,
        last_status: Option<String>,
    ) -> Self {
        let announced = (session.mode(), crate::todos(&session).borrow().clone());
        Self {
            session,
            hub,
            store,
            record: Mutex::new(record),
            conversation: tokio::sync::Mutex::new(messages),
            turn: Mutex::new(TurnState { running: None, last_status }),
            announced: tokio::sync::Mutex::new(announced),
            direct_calls: AtomicU64::new(0),
            last_used: AtomicU64::new(0),
        }
    }

    /// The store its writes go to (fenced by its lease when several nodes share the database).
    pub(super) fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Its event feed on this node.
    pub(super) fn feed(&self) -> &Arc<super::events::Feed> {
        self.hub.feed()
    }

    /// Asked for at `tick` of the node's eviction clock.
    pub(super) fn used(&self, tick: u64) {
        self.last_used.store(tick, Ordering::Relaxed);
    }

    /// The tick it was last asked for at.
    pub(super) fn last_used(&self) -> u64 {
        self.last_used.load(Ordering::Relaxed)
    }

    /// The core session.
    pub(super) fn session(&self) -> &Session {
        &self.session
    }

    /// The stored record as it is now (title, mode and last change kept up to date).
    pub(super) fn record(&self) -> SessionRecord {
        lock(&self.record).clone()
    }

    /// Whether the session has no title yet.
    pub(super) fn untitled(&self) -> bool {
        lock(&self.record).title.is_none()
    }

    /// Keep the title (already stored).
    pub(super) fn set_title(&self, title: String) {
        lock(&self.record).title = Some(title);
    }

    /// Note a change now.
    pub(super) fn touch(&self) {
        lock(&self.record).updated_at_ms = now_ms();
    }

    /// Store the event, then broadcast it to the session's subscribers.
    pub(super) async fn emit(&self, kind: EventKind) -> Option<Event> {
        self.hub.emit(kind).await
    }

    /// The conversation, held for a turn.
    pub(super) async fn conversation(&self) -> tokio::sync::MutexGuard<'_, Vec<Message>> {
        self.conversation.lock().await
    }

    /// Count a direct call in flight until the returned guard is dropped.
    pub(super) fn direct_call(&self) -> DirectCall<'_> {
        self.direct_calls.fetch_add(1, Ordering::SeqCst);
        DirectCall(&self.direct_calls)
    }

    /// Whether a turn or a direct call runs.
    pub(super) fn busy(&self) -> bool {
        self.running().is_some() || self.direct_calls.load(Ordering::SeqCst) > 0
    }

    /// Mark the turn `id` running: the sender its task reports the final status on, and the
    /// session's cancel token for it (an abort from now on ends it). `Err` with the id of the
    /// turn that runs already.
    pub(super) fn start_turn(
        &self,
        id: &str,
    ) -> Result<(watch::Sender<Option<String>>, CancellationToken), String> {
        let (done_tx, done_rx) = watch::channel(None);
        {
            let mut state = lock(&self.turn);
            if let Some(running) = &state.running {
                return Err(running.id.clone());
            }
            state.running = Some(Running { id: id.to_owned(), done: done_rx });
        }
        Ok((done_tx, self.session.cancel_token()))
    }

    /// The turn `id` did not start after all (its record could not be stored).
    pub(super) fn cancel_turn(&self, id: &str) {
        let mut state = lock(&self.turn);
        if state.running.as_ref().is_some_and(|r| r.id == id) {
            state.running = None;
        }
    }

    /// The turn `id` ended with `status`: no longer running, and the last status.
    pub(super) fn end_turn(&self, id: &str, status: &str) {
        let mut state = lock(&self.turn);
        if state.running.as_ref().is_some_and(|r| r.id == id) {
            state.running = None;
        }
        state.last_status = Some(status.to_owned());
    }

    /// Announce and store the session's mode and todo list if they changed since the last
    /// announcement. Called by the session's watcher on every change, and after every tool call
    /// (so that `mode_changed` / `todos_changed` come right after the call that caused them, and
    /// before the turn's end); the lock makes each change announced once.
    pub(super) async fn sync(&self) {
        let mut announced = self.announced.lock().await;
        let id = self.session.id();
        let mode = self.session.mode();
        if announced.0 != mode {
            announced.0 = mode;
            let text = mode.to_string();
            if let Err(err) = self.store.update_session(id, Some(&text), None).await {
                tracing::warn!(session = %id, %err, "storing the mode");
            }
            {
                let mut record = lock(&self.record);
                record.mode = text;
                record.updated_at_ms = now_ms();
            }
            self.hub.emit(EventKind::ModeChanged { mode }).await;
        }
        let todos = crate::todos(&self.session).borrow().clone();
        if announced.1 != todos {
            let list = serde_json::to_value(&todos).unwrap_or(Value::Array(Vec::new()));
            announced.1 = todos;
            if let Err(err) = self.store.set_todos(id, list.clone()).await {
                tracing::warn!(session = %id, %err, "storing the todo list");
            }
            self.hub.emit(EventKind::TodosChanged { todos: list }).await;
        }
    }

    /// The id of the running turn, if any.
    pub(super) fn running(&self) -> Option<String> {
        lock(&self.turn).running.as_ref().map(|r| r.id.clone())
    }

    /// Wait (at most `limit`) for the running turn, if any, to end; its status.
    pub(super) async fn wait_turn(&self, limit: Option<Duration>) -> Option<String> {
        let running = lock(&self.turn).running.as_ref().map(|r| r.done.clone());
        let Some(mut done) = running else {
            return lock(&self.turn).last_status.clone();
        };
        let wait = done.wait_for(Option::is_some);
        let ended = match limit {
            Some(limit) => tokio::time::timeout(limit, wait).await.ok().and_then(Result::ok),
            None => wait.await.ok(),
        };
        ended.and_then(|status| status.clone()).or_else(|| lock(&self.turn).last_status.clone())
    }
}
