//! A live session: its core session, event hub, conversation and turn state.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hands_core::{Mode, Session};
use hands_store::{SessionRecord, Store};
use serde_json::Value;
use tokio::sync::watch;

use crate::event::EventKind;
use crate::model::Message;

use super::events::Hub;
use super::ids::now_ms;
use super::lock::lock;

/// The running turn of a session, and how the last one ended.
#[derive(Default)]
pub(super) struct TurnState {
    pub(super) running: Option<Running>,
    pub(super) last_status: Option<String>,
}

pub(super) struct Running {
    pub(super) id: String,
    pub(super) done: watch::Receiver<Option<String>>,
}

/// A live session.
pub(super) struct Live {
    pub(super) session: Session,
    pub(super) hub: Arc<Hub>,
    pub(super) store: Arc<dyn Store>,
    pub(super) record: Mutex<SessionRecord>,
    pub(super) conversation: tokio::sync::Mutex<Vec<Message>>,
    pub(super) turn: Mutex<TurnState>,
    /// The mode and todo list last announced (and stored).
    pub(super) announced: tokio::sync::Mutex<(Mode, Vec<crate::Todo>)>,
    /// Direct tool calls ([`Host::call_tool`]) in flight: an abort of the project counts a
    /// session busy with one.
    pub(super) direct_calls: AtomicU64,
}

impl Live {
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

    pub(super) fn running(&self) -> Option<(String, watch::Receiver<Option<String>>)> {
        lock(&self.turn).running.as_ref().map(|r| (r.id.clone(), r.done.clone()))
    }

    /// Wait (at most `limit`) for the running turn, if any, to end; its status.
    pub(super) async fn wait_turn(&self, limit: Option<Duration>) -> Option<String> {
        let Some((_, mut done)) = self.running() else {
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
