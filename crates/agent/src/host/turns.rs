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

use super::ids::{fresh_id, now_ms};
use super::live::Live;
use super::lock::lock;
use super::parts::HostParts;

/// Turns what the loop reports into stored messages, tool-call records and events.
pub(super) struct TurnRecorder {
    live: Arc<Live>,
    store: Arc<dyn Store>,
    session_id: String,
    turn_id: Option<String>,
    /// The store's id of each call in flight, by the model's id for it: models' ids are not
    /// unique across sessions or even turns (local servers number them `call_0`, `call_1`, …).
    record_ids: Mutex<HashMap<String, String>>,
    /// The model's text on its way to `text_delta` events: a secret split across two deltas is
    /// held back until it can be replaced whole.
    deltas: Mutex<Deltas>,
}

/// Streamed text through a redaction [`Scrubber`](hands_core::redact::Scrubber), released on
/// UTF-8 boundaries.
#[derive(Default)]
struct Deltas {
    scrubber: hands_core::redact::Scrubber,
    ready: Vec<u8>,
}

impl Deltas {
    /// Feed `delta`; the text that may be shown now.
    fn push(&mut self, delta: &str) -> String {
        self.scrubber.push(delta.as_bytes(), &mut self.ready);
        let whole = match std::str::from_utf8(&self.ready) {
            Ok(_) => self.ready.len(),
            // An incomplete character at the end waits for its other bytes.
            Err(err) if err.error_len().is_none() => err.valid_up_to(),
            Err(_) => self.ready.len(),
        };
        let out: Vec<u8> = self.ready.drain(..whole).collect();
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
    }

    /// Everything held.
    fn finish(&mut self) -> String {
        self.scrubber.finish(&mut self.ready);
        let out = std::mem::take(&mut self.ready);
        String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
    }
}

impl TurnRecorder {
    /// A recorder for the calls of `live` in the turn `turn_id` (`None`: direct calls outside a
    /// turn), writing to `store`.
    pub(super) fn new(live: Arc<Live>, store: Arc<dyn Store>, turn_id: Option<String>) -> Self {
        let session_id = live.session().id().to_owned();
        Self {
            live,
            store,
            session_id,
            turn_id,
            record_ids: Mutex::default(),
            deltas: Mutex::default(),
        }
    }

    /// Emit the text still held back (before another event, and at the end of the turn).
    pub(super) async fn flush_text(&self) {
        let text = lock(&self.deltas).finish();
        self.emit_text(text).await;
    }

    async fn emit_text(&self, text: String) {
        if !text.is_empty() {
            let turn_id = self.turn_id.clone().unwrap_or_default();
            self.live.emit(EventKind::TextDelta { turn_id, text }).await;
        }
    }

    /// A call started: its record stored, `tool_call_started` emitted.
    pub(super) async fn started(&self, id: &str, name: &str, args: &Value) {
        self.flush_text().await;
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
            if matches!(err, hands_store::StoreError::Fenced(_)) {
                // The lease moved: the call must not run here (its token is fired before the
                // tool starts).
                self.live.session().abort();
            }
        }
        self.live
            .emit(EventKind::ToolCallStarted {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                args: args.clone(),
            })
            .await;
    }

    /// A call finished: its result stored, `tool_call_finished` (and its notices) emitted, the
    /// mode and todo list synced.
    pub(super) async fn finished(
        &self,
        id: &str,
        name: &str,
        output: &ToolOutput,
        duration: Duration,
    ) {
        let duration_ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        let result = serde_json::to_value(output).unwrap_or(Value::Null);
        let failure = turn::Failure::of(output);
        let record_id = lock(&self.record_ids).remove(id).unwrap_or_else(|| id.to_owned());
        if let Err(err) =
            self.store.finish_tool_call(&record_id, result, output.is_error, duration_ms).await
        {
            tracing::warn!(session = %self.session_id, call = id, %err, "storing a tool result");
        }
        self.live
            .emit(EventKind::ToolCallFinished {
                turn_id: self.turn_id.clone(),
                call_id: id.to_owned(),
                name: name.to_owned(),
                duration_ms,
                is_error: output.is_error,
                summary: turn::summary(output),
                failure: failure.reason,
                exit_code: failure.exit_code,
                output_tail: failure.tail,
            })
            .await;
        // The registry moves queued notices onto results; announce them too, as the loop does
        // for those it injects itself.
        for notice in &output.notices {
            self.live.emit(EventKind::ProcessNotice { text: notice.text.clone() }).await;
        }
        self.live.sync().await;
    }
}

impl Observer for TurnRecorder {
    fn text(&self, delta: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let text = lock(&self.deltas).push(&delta);
            self.emit_text(text).await;
        })
    }

    fn notice(&self, text: String) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.flush_text().await;
            self.live.emit(EventKind::ProcessNotice { text }).await;
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

    fn checkpoint<'a>(&'a self, checkpoint: &'a hands_checkpoint::Checkpoint) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.flush_text().await;
            self.live.emit(EventKind::checkpoint_created(checkpoint)).await;
        })
    }

    fn messages<'a>(&'a self, new: &'a [Message]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.flush_text().await;
            for message in new {
                let value = serde_json::to_value(message).unwrap_or(Value::Null);
                if let Err(err) = self
                    .store
                    .append_message(&self.session_id, self.turn_id.as_deref(), value)
                    .await
                {
                    tracing::warn!(session = %self.session_id, %err, "storing a message");
                    self.live
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
    parts: HostParts,
    provider: Arc<dyn Provider>,
    live: Arc<Live>,
    turn_id: String,
    text: String,
    cancel: CancellationToken,
    done: watch::Sender<Option<String>>,
}

impl TurnTask {
    /// The turn `turn_id` of `live` for the user's `text`, already marked running: `done` and
    /// `cancel` come from [`Live::start_turn`].
    pub(super) fn new(
        parts: HostParts,
        provider: Arc<dyn Provider>,
        live: Arc<Live>,
        turn_id: String,
        text: String,
        done: watch::Sender<Option<String>>,
        cancel: CancellationToken,
    ) -> Self {
        Self { parts, provider, live, turn_id, text, cancel, done }
    }

    /// Run the turn on its own task.
    pub(super) fn spawn(self) {
        // The caller's trace context (the session API's `traceparent`) goes with the turn.
        let parent = hands_core::telemetry::remote_parent();
        tokio::spawn(hands_core::telemetry::with_remote_parent(parent, self.run()));
    }

    /// Run the loop, then record how the turn ended: `error` (if any), the turn's record, the
    /// live state, `turn_ended`, and last the final status for those who wait.
    async fn run(self) {
        let live = Arc::clone(&self.live);
        // Busy until `turn_ended` is out, not only while `running` (which ends just before it):
        // an idle session's lease may be given up, and a write after that would be refused.
        let _in_flight = live.direct_call();
        let store = Arc::clone(self.live.store());
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
            live.emit(EventKind::Error { turn_id: Some(turn_id.clone()), message }).await;
        }
        if let Err(err) = store.end_turn(&turn_id, &status, now_ms()).await {
            tracing::warn!(turn = %turn_id, %err, "storing the end of a turn");
        }
        // The turn is over before anyone hears so: a client that posts its next message as soon
        // as it sees turn_ended must not find this turn still running.
        live.end_turn(&turn_id, &status);
        live.emit(EventKind::TurnEnded { turn_id: turn_id.clone(), reason: status.clone(), text })
            .await;
        self.done.send_replace(Some(status));
    }

    async fn turn(&self) -> turn::Outcome {
        let session = self.live.session();
        let prompt = SystemPrompt::load(session.root()).await;
        let registry = &self.parts.registry;
        let render = |mode: Mode| prompt.render(mode, &registry.list(mode));
        let recorder = TurnRecorder::new(
            Arc::clone(&self.live),
            Arc::clone(self.live.store()),
            Some(self.turn_id.clone()),
        );
        let checkpoints = self.parts.checkpoints(session.root()).await;
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
            checkpoints,
        };
        let mut conversation = self.live.conversation().await;
        let outcome = turn.run(&mut conversation, Message::user(self.text.clone())).await;
        recorder.flush_text().await;
        outcome
    }
}
