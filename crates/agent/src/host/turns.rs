//! Turns and calls: recording what the loop does, running a turn on its own task, direct
//! tool calls, aborts and the session's processes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt as _;
use hands_core::{BoxFuture, CancellationToken, Mode, ToolOutput};
use hands_store::{Store, ToolCallRecord};
use serde_json::Value;
use tokio::sync::watch;

use crate::event::EventKind;
use crate::model::{Message, Provider};
use crate::prompt::SystemPrompt;
use crate::turn::{self, Observer, ToolScope, ToolUse, Turn};

use super::events::Hub;
use super::ids::{fresh_id, now_ms};
use super::live::Live;
use super::lock::lock;
use super::parts::HostParts;

/// Turns what the loop reports into stored messages, tool-call records and events.
pub(super) struct TurnRecorder {
    pub(super) live: Arc<Live>,
    pub(super) hub: Arc<Hub>,
    pub(super) store: Arc<dyn Store>,
    pub(super) session_id: String,
    pub(super) turn_id: Option<String>,
    /// The store's id of each call in flight, by the model's id for it: models' ids are not
    /// unique across sessions or even turns (local servers number them `call_0`, `call_1`, …).
    pub(super) record_ids: Mutex<HashMap<String, String>>,
}

impl TurnRecorder {
    pub(super) async fn started(&self, id: &str, name: &str, args: &Value) {
        let record_id = fresh_id("call");
        lock(&self.record_ids).insert(id.to_owned(), record_id.clone());
        let record = ToolCallRecord {
            id: record_id,
            session_id: self.session_id.clone(),
            turn_id: self.turn_id.clone(),
            name: name.to_owned(),
            args: args.clone(),
            result: None,
            is_error: None,
            started_at_ms: now_ms(),
            duration_ms: None,
        };
        if let Err(err) = self.store.start_tool_call(record).await {
            tracing::warn!(session = %self.session_id, call = id, %err, "storing a tool call");
        }
        self.hub
            .emit(EventKind::ToolCallStarted {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                args: args.clone(),
            })
            .await;
    }

    pub(super) async fn finished(
        &self,
        id: &str,
        name: &str,
        output: &ToolOutput,
        duration: Duration,
    ) {
        let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let result = serde_json::to_value(output).unwrap_or(Value::Null);
        let record_id = lock(&self.record_ids).remove(id).unwrap_or_else(|| id.to_owned());
        if let Err(err) =
            self.store.finish_tool_call(&record_id, result, output.is_error, duration_ms).await
        {
            tracing::warn!(session = %self.session_id, call = id, %err, "storing a tool result");
        }
        self.hub
            .emit(EventKind::ToolCallFinished {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                duration_ms,
                is_error: output.is_error,
                summary: turn::summary(output),
            })
            .await;
        // The registry moves queued notices onto results; announce them too, as the loop does
        // for those it injects itself.
        for notice in &output.notices {
            self.hub.emit(EventKind::ProcessNotice { text: notice.text.clone() }).await;
        }
        self.live.sync().await;
    }
}

impl Observer for TurnRecorder {
    fn text(&self, delta: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let turn_id = self.turn_id.clone().unwrap_or_default();
            self.hub.emit(EventKind::TextDelta { turn_id, text: delta }).await;
        })
    }

    fn notice(&self, text: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.hub.emit(EventKind::ProcessNotice { text }).await;
        })
    }

    fn call_started<'a>(&'a self, call: &'a ToolUse) -> BoxFuture<'a, ()> {
        Box::pin(self.started(&call.id, &call.name, &call.input))
    }

    fn call_finished<'a>(
        &'a self,
        call: &'a ToolUse,
        output: &'a ToolOutput,
        duration: Duration,
    ) -> BoxFuture<'a, ()> {
        Box::pin(self.finished(&call.id, &call.name, output, duration))
    }

    fn messages<'a>(&'a self, new: &'a [Message]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            for message in new {
                let value = serde_json::to_value(message).unwrap_or(Value::Null);
                if let Err(err) = self
                    .store
                    .append_message(&self.session_id, self.turn_id.as_deref(), value)
                    .await
                {
                    tracing::warn!(session = %self.session_id, %err, "storing a message");
                    self.hub
                        .emit(EventKind::Error {
                            turn_id: self.turn_id.clone(),
                            message: format!(
                                "a message of this session could not be stored ({err}); a resumed \
                                 session will miss it"
                            ),
                        })
                        .await;
                }
            }
        })
    }
}

/// One turn on its own task.
pub(super) struct TurnTask {
    pub(super) parts: HostParts,
    pub(super) provider: Arc<dyn Provider>,
    pub(super) live: Arc<Live>,
    pub(super) turn_id: String,
    pub(super) text: String,
    pub(super) cancel: CancellationToken,
    pub(super) done: watch::Sender<Option<String>>,
}

impl TurnTask {
    pub(super) async fn run(self) {
        let hub = Arc::clone(&self.live.hub);
        let store = Arc::clone(&self.parts.store);
        let turn_id = self.turn_id.clone();
        let (status, text, error): (String, _, _) =
            match std::panic::AssertUnwindSafe(self.turn()).catch_unwind().await {
                Ok(outcome) => (outcome.reason.as_str().to_owned(), outcome.text, outcome.error),
                Err(_) => (
                    "error".to_owned(),
                    None,
                    Some("hands failed inside the turn (a bug); send the message again".into()),
                ),
            };
        if let Some(message) = error {
            hub.emit(EventKind::Error { turn_id: Some(turn_id.clone()), message }).await;
        }
        if let Err(err) = store.end_turn(&turn_id, &status, now_ms()).await {
            tracing::warn!(turn = %turn_id, %err, "storing the end of a turn");
        }
        // The turn is over before anyone hears so: a client that posts its next message as soon
        // as it sees turn_ended must not find this turn still running.
        {
            let mut state = lock(&self.live.turn);
            if state.running.as_ref().is_some_and(|r| r.id == turn_id) {
                state.running = None;
            }
            state.last_status = Some(status.clone());
        }
        hub.emit(EventKind::TurnEnded { turn_id: turn_id.clone(), reason: status.clone(), text })
            .await;
        self.done.send_replace(Some(status));
    }

    pub(super) async fn turn(&self) -> turn::Outcome {
        let session = &self.live.session;
        let prompt = SystemPrompt::load(session.root()).await;
        let render = |mode: Mode| prompt.render(mode);
        let recorder = TurnRecorder {
            live: Arc::clone(&self.live),
            hub: Arc::clone(&self.live.hub),
            store: Arc::clone(&self.parts.store),
            session_id: session.id().to_owned(),
            turn_id: Some(self.turn_id.clone()),
            record_ids: Mutex::default(),
        };
        let turn = Turn {
            provider: self.provider.as_ref(),
            registry: &self.parts.registry,
            session,
            turn_id: &self.turn_id,
            cancel: self.cancel.clone(),
            limits: self.parts.config.limits(),
            prompt: &render,
            scope: ToolScope::Mode,
            call_prefix: None,
            observer: &recorder,
        };
        let mut conversation = self.live.conversation.lock().await;
        turn.run(&mut conversation, Message::user(self.text.clone())).await
    }
}
