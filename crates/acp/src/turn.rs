//! One `session/prompt`: post the prompt as a hands turn, follow the session's events and turn
//! them into `session/update` notifications and permission requests, and answer with the stop
//! reason when the turn ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, EmbeddedResourceResource, Plan, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionNotification,
    SessionUpdate, StopReason, TextContent, ToolCall, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use hands_agent::event::EventKind;
use hands_agent::host::HostError;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::map::{self, Choice, Info, lock};
use crate::session::{AcpSession, internal, invalid};

/// How long a call may stay `pending` before it is shown `in_progress`: hands asks for approval
/// right after a call starts, so a call not asked about by then runs.
const SETTLE: Duration = Duration::from_millis(40);

/// Run the prompt and answer it.
pub(crate) async fn run(
    session: Arc<AcpSession>,
    request: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
) {
    let result = Turn::new(session, cx).drive(request).await;
    if let Err(err) = responder.respond_with_result(result) {
        tracing::warn!(%err, "answering session/prompt");
    }
}

/// A call of the turn, as the editor was told of it.
struct Call {
    name: String,
    /// What the registry says of the tool.
    info: Info,
    args: Value,
    /// The files a file-writing call may change, with their text before it ran.
    before: Vec<(PathBuf, Option<String>)>,
    started: Instant,
    /// `in_progress` was sent.
    running: bool,
    /// A permission request was sent (or the tool is allowed always).
    asked: bool,
}

/// A call's permission was answered: (call id, approved).
type Decided = (String, bool);

struct Turn {
    session: Arc<AcpSession>,
    cx: ConnectionTo<Client>,
    calls: HashMap<String, Call>,
    /// Call ids in the order they started.
    order: Vec<String>,
    /// Permission answers: (call id, approved).
    decided: (mpsc::UnboundedSender<Decided>, mpsc::UnboundedReceiver<Decided>),
    error: Option<String>,
}

impl Turn {
    fn new(session: Arc<AcpSession>, cx: ConnectionTo<Client>) -> Self {
        let decided = mpsc::unbounded_channel();
        Self { session, cx, calls: HashMap::new(), order: Vec::new(), decided, error: None }
    }

    async fn drive(mut self, request: PromptRequest) -> Result<PromptResponse, Error> {
        let text = prompt_text(&request.prompt);
        if text.trim().is_empty() {
            return Err(invalid("the prompt has no text: send a text block".to_owned()));
        }
        let cancel = {
            let mut token = lock(&self.session.cancel);
            *token = hands_core::CancellationToken::new();
            token.clone()
        };
        let host = Arc::clone(&self.session.host);
        let id = self.session.id.clone();
        let mut events = host.subscribe(&id, 0).await.map_err(|err| internal(err.to_string()))?;
        events.replay.clear();
        let turn_id = host.post_message(&id, text).await.map_err(|err| match err {
            HostError::Conflict(message) | HostError::BadRequest(message) => invalid(message),
            other => internal(other.to_string()),
        })?;
        let mut aborting = false;
        let reason = loop {
            let settle =
                self.unsettled().map(|since| tokio::time::sleep_until((since + SETTLE).into()));
            tokio::select! {
                event = events.next() => {
                    let Some(event) = event else {
                        return Err(internal(format!("the session {id} was closed during the turn")));
                    };
                    if let EventKind::TurnEnded { turn_id: ended, reason, .. } = &event.kind
                        && *ended == turn_id
                    {
                        let _ = host.wait_turn(&id).await;
                        break reason.clone();
                    }
                    self.event(event.kind).await;
                }
                () = cancel.cancelled(), if !aborting => {
                    aborting = true;
                    let host = Arc::clone(&host);
                    let id = id.clone();
                    tokio::spawn(async move {
                        if let Err(err) = host.abort_session(&id).await {
                            tracing::warn!(session = %id, %err, "aborting the turn");
                        }
                    });
                }
                Some((call, approved)) = self.decided.1.recv() => {
                    if approved {
                        self.running(&call);
                    }
                }
                () = async { if let Some(settle) = settle { settle.await } }, if self.unsettled().is_some() => {
                    let due: Vec<String> = self
                        .order
                        .iter()
                        .filter(|c| self.calls.get(*c).is_some_and(|c| !c.running && !c.asked && c.started.elapsed() >= SETTLE))
                        .cloned()
                        .collect();
                    for call in due {
                        self.running(&call);
                    }
                }
            }
        };
        // Calls that never finished (an abort): failed.
        for call in std::mem::take(&mut self.order) {
            if self.calls.remove(&call).is_some() {
                self.update(&call, ToolCallUpdateFields::new().status(ToolCallStatus::Failed));
            }
        }
        let stop = match reason.as_str() {
            _ if cancel.is_cancelled() => StopReason::Cancelled,
            "completed" => StopReason::EndTurn,
            "aborted" => StopReason::Cancelled,
            "max_steps" => StopReason::MaxTurnRequests,
            _ => {
                let message =
                    self.error.take().unwrap_or_else(|| format!("the turn ended: {reason}"));
                return Err(internal(message));
            }
        };
        Ok(PromptResponse::new(stop))
    }

    /// The start of the oldest call not yet shown running nor asked about.
    fn unsettled(&self) -> Option<Instant> {
        self.calls.values().filter(|c| !c.running && !c.asked).map(|c| c.started).min()
    }

    fn notify(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session.id.clone(), update);
        if let Err(err) = self.cx.send_notification(notification) {
            tracing::debug!(%err, "sending session/update");
        }
    }

    fn update(&self, call: &str, fields: ToolCallUpdateFields) {
        self.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(call.to_owned(), fields)));
    }

    fn running(&mut self, call: &str) {
        if let Some(c) = self.calls.get_mut(call)
            && !c.running
        {
            c.running = true;
            self.update(call, ToolCallUpdateFields::new().status(ToolCallStatus::InProgress));
        }
    }

    async fn event(&mut self, kind: EventKind) {
        match kind {
            EventKind::TextDelta { text, .. } => {
                let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
                self.notify(SessionUpdate::AgentMessageChunk(chunk));
            }
            EventKind::ToolCallStarted { call_id, name, args, .. } => {
                self.started(call_id, name, args)
            }
            EventKind::ApprovalRequested { approval_id, tool, details, .. } => {
                self.approval(approval_id, &tool, details);
            }
            EventKind::ToolCallFinished { call_id, name, is_error, summary, .. } => {
                self.finished(call_id, &name, is_error, summary).await;
            }
            EventKind::TodosChanged { todos } => {
                self.notify(SessionUpdate::Plan(Plan::new(map::plan_entries(&todos))));
            }
            EventKind::ModeChanged { mode } => {
                self.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                    map::mode_id(mode),
                )));
            }
            EventKind::Error { message, .. } => self.error = Some(message),
            _ => {}
        }
    }

    fn started(&mut self, call_id: String, name: String, args: Value) {
        let root = &self.session.root;
        let info = Info::of(&self.session.registry, &name);
        let before = map::edited_files(root, &info, &args)
            .into_iter()
            .map(|path| {
                let text = std::fs::read_to_string(&path).ok();
                (path, text)
            })
            .collect();
        let call = ToolCall::new(call_id.clone(), map::title(&name, &info, &args))
            .kind(map::kind(&info))
            .status(ToolCallStatus::Pending)
            .locations(map::locations(root, &args))
            .raw_input(args.clone());
        self.notify(SessionUpdate::ToolCall(call));
        self.calls.insert(
            call_id.clone(),
            Call {
                name,
                info,
                args,
                before,
                started: Instant::now(),
                running: false,
                asked: false,
            },
        );
        self.order.push(call_id);
    }

    /// hands asks: the latest call of `tool` not yet asked about is the one.
    fn approval(&mut self, approval_id: String, tool: &str, details: Option<String>) {
        let call_id = self
            .order
            .iter()
            .rev()
            .find(|c| self.calls.get(*c).is_some_and(|c| c.name == tool && !c.asked))
            .cloned();
        let session = Arc::clone(&self.session);
        let Some(call_id) = call_id else {
            // A call the turn does not know (none started here): refuse rather than guess.
            let _ = session.host.decide(
                &session.id,
                &approval_id,
                false,
                Some("hands acp could not show this call to the user".to_owned()),
            );
            return;
        };
        let Some(call) = self.calls.get_mut(&call_id) else { return };
        call.asked = true;
        if lock(&session.allowed).contains(tool) {
            let _ = session.host.decide(&session.id, &approval_id, true, None);
            self.running(&call_id);
            return;
        }
        let info = call.info;
        let plan = info.plan_key().is_some();
        let content = permission_content(&session.root, &info, &call.args, details);
        let fields = ToolCallUpdateFields::new()
            .title(map::title(tool, &info, &call.args))
            .kind(map::kind(&info))
            .status(ToolCallStatus::Pending)
            .locations(map::locations(&session.root, &call.args))
            .content(content);
        let request = RequestPermissionRequest::new(
            session.id.clone(),
            ToolCallUpdate::new(call_id.clone(), fields),
            map::permission_options(tool, plan),
        );
        let cx = self.cx.clone();
        let decided = self.decided.0.clone();
        let tool = tool.to_owned();
        tokio::spawn(async move {
            let option = match cx.send_request(request).block_task().await {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => {
                        Some(selected.option_id.0.to_string())
                    }
                    _ => None,
                },
                Err(err) => {
                    tracing::warn!(%err, "session/request_permission failed");
                    None
                }
            };
            let choice = map::choice(plan, option.as_deref());
            let (approve, reason) = match choice {
                Choice::Once => (true, None),
                Choice::Always => {
                    lock(&session.allowed).insert(tool);
                    (true, None)
                }
                Choice::Reject(reason) => (false, Some(reason)),
            };
            // Settled meanwhile (an abort): nothing waits any more.
            if let Err(err) = session.host.decide(&session.id, &approval_id, approve, reason) {
                tracing::debug!(%err, "approval not delivered");
            }
            let _ = decided.send((call_id, approve));
        });
    }

    async fn finished(&mut self, call_id: String, name: &str, is_error: bool, summary: String) {
        let Some(call) = self.calls.remove(&call_id) else { return };
        self.order.retain(|c| *c != call_id);
        if !call.running && !is_error {
            self.update(&call_id, ToolCallUpdateFields::new().status(ToolCallStatus::InProgress));
        }
        let changes = call
            .before
            .into_iter()
            .map(|(path, old)| {
                let new = std::fs::read_to_string(&path).ok();
                (path, old, new)
            })
            .collect();
        let text = self.result_text(&call_id, name).await.unwrap_or(summary);
        let text = hands_core::redact::text(&text).into_owned();
        let content = map::finished_content(is_error, text, map::diffs(changes));
        let status = if is_error { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
        self.update(&call_id, ToolCallUpdateFields::new().status(status).content(content));
    }

    /// The whole text of the call's result, as stored (the event carries its first lines).
    async fn result_text(&self, call_id: &str, name: &str) -> Option<String> {
        let records = self.session.store.tool_calls(&self.session.id).await.ok()?;
        let record = records
            .iter()
            .rev()
            .find(|r| r.id == call_id)
            .or_else(|| records.iter().rev().find(|r| r.name == name && r.result.is_some()))?;
        record.result.as_ref().map(map::result_text)
    }
}

/// What a permission request shows: a plan to approve whole, the diff a file-changing call
/// would make, else what hands computed about the call (its resolved command, its target).
fn permission_content(
    root: &std::path::Path,
    info: &Info,
    args: &Value,
    details: Option<String>,
) -> Vec<ToolCallContent> {
    if let Some(key) = info.plan_key()
        && let Some(plan) = args.get(key).and_then(Value::as_str)
    {
        return vec![ToolCallContent::from(plan.to_owned())];
    }
    let current = args
        .get("path")
        .and_then(Value::as_str)
        .and_then(|p| std::fs::read_to_string(map::absolute(root, p)).ok());
    if let Some(diff) = map::proposed_diff(root, info, args, current) {
        return vec![diff];
    }
    details.map(ToolCallContent::from).into_iter().collect()
}

/// The prompt's text: text blocks as they are, links as `[name](uri)`, embedded text resources
/// with their URI. Images and audio are not declared, so not sent.
fn prompt_text(blocks: &[ContentBlock]) -> String {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, link.uri))
            }
            ContentBlock::Resource(resource) => {
                if let EmbeddedResourceResource::TextResourceContents(text) = &resource.resource {
                    parts
                        .push(format!("<context uri=\"{}\">\n{}\n</context>", text.uri, text.text));
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}
