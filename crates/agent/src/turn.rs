//! The agent loop: one user message is one turn.
//!
//! Each step builds a [`ModelRequest`] (the system prompt for the session's current mode, the
//! conversation, the tools the mode offers — re-read every step, since enter/exit_plan_mode change
//! it), injects the session's queued notices into the user content that goes with it, elides old
//! tool results when the request nears the context window ([`crate::elide`]), and streams one
//! response. The tool calls of the response run through [`Registry::dispatch_with`] with the turn's
//! id (per-turn de-duplication keys on it) and the turn's cancel token: consecutive read-only calls
//! run together, a mutating call runs alone, and the results go back in the order of the calls as
//! one user message. The turn ends when the model answers without tool calls (`completed`), after
//! `max_steps` model calls (`max_steps`), when the session is aborted (`aborted`), or when the
//! provider fails (`error`).
//!
//! The conversation stays valid whatever happens: every tool use gets a result (calls cut short by
//! an abort answer "aborted", calls never started answer "not run"), and consecutive messages of
//! the same role (a user message after an aborted model call, or after a turn that ended with
//! tool results) are merged when a request is built.
//!
//! The loop knows nothing about events or storage: it reports through an [`Observer`], which the
//! host turns into stored events and stored messages, and which a sub-agent turns into progress.

use std::time::{Duration, Instant};

use base64::Engine as _;
use hands_core::{
    BoxFuture, CallOptions, CancellationToken, Content, Mode, PreparedCall, Registry, Session,
    ToolCall, ToolOutput,
};
use serde_json::Value;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::elide;
use crate::model::{
    Block, Message, ModelRequest, ModelResponse, Provider, ProviderError, ResultPart, Role,
    ToolDef, Usage,
};

/// The loop's limits (from `[agent]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Model calls per turn.
    pub max_steps: u32,
    /// Output tokens per response.
    pub max_tokens: u32,
    /// Fraction of the context window at which old tool results are elided.
    pub elide_at: f64,
}

/// Which tools the model is offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolScope {
    /// Those the session's current mode offers ([`Registry::list`]), re-read every step.
    Mode,
    /// Exactly these (canonical names); calls of any other tool are refused before dispatch.
    Only(Vec<String>),
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// The provider's id for it.
    pub id: String,
    /// The tool, as the model wrote it.
    pub name: String,
    /// The arguments.
    pub input: Value,
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The model answered without tool calls.
    Completed,
    /// `max_steps` model calls were made.
    MaxSteps,
    /// The session was aborted.
    Aborted,
    /// The provider failed.
    Error,
}

impl EndReason {
    /// `completed`, `max_steps`, `aborted`, `error` (the stored turn status).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxSteps => "max_steps",
            Self::Aborted => "aborted",
            Self::Error => "error",
        }
    }
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Why.
    pub reason: EndReason,
    /// The model's last text, when it wrote any.
    pub text: Option<String>,
    /// For `Error`: what went wrong and what to do.
    pub error: Option<String>,
    /// Model calls made.
    pub steps: u32,
    /// Tokens used, summed over the steps.
    pub usage: Usage,
}

fn done<'a>() -> BoxFuture<'a, ()> {
    Box::pin(std::future::ready(()))
}

/// What the loop reports as it goes. Every method has a no-op default.
pub trait Observer: Send + Sync {
    /// Streamed text (deltas that arrived together are joined).
    fn text(&self, _delta: String) -> BoxFuture<'_, ()> {
        done()
    }
    /// A notice was injected for the model.
    fn notice(&self, _text: String) -> BoxFuture<'_, ()> {
        done()
    }
    /// A tool call starts.
    fn call_started<'a>(&'a self, _call: &'a ToolUse) -> BoxFuture<'a, ()> {
        done()
    }
    /// A tool call ended with `output` after `duration`.
    fn call_finished<'a>(
        &'a self,
        _call: &'a ToolUse,
        _output: &'a ToolOutput,
        _duration: Duration,
    ) -> BoxFuture<'a, ()> {
        done()
    }
    /// Messages appended to the conversation since the last report (persist them).
    fn messages<'a>(&'a self, _new: &'a [Message]) -> BoxFuture<'a, ()> {
        done()
    }
    /// A model call is about to be made (step counts from 1).
    fn step(&self, _step: u32) -> BoxFuture<'_, ()> {
        done()
    }
    /// A checkpoint of the project was taken (before the turn's first change, or at its end).
    fn checkpoint<'a>(
        &'a self,
        _checkpoint: &'a hands_checkpoint::Checkpoint,
    ) -> BoxFuture<'a, ()> {
        done()
    }
}

/// An observer that reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {}

/// Renders the system prompt for the session's mode.
pub type PromptFn<'a> = &'a (dyn Fn(Mode) -> String + Send + Sync);

/// One turn to run.
pub struct Turn<'a> {
    /// The model.
    pub provider: &'a dyn Provider,
    /// The tools.
    pub registry: &'a Registry,
    /// The session the calls run in.
    pub session: &'a Session,
    /// The turn's id (de-duplication scope of the calls).
    pub turn_id: &'a str,
    /// Fired by an abort: ends the turn, cancels the model call and the tool calls.
    pub cancel: CancellationToken,
    /// Limits.
    pub limits: Limits,
    /// The system prompt.
    pub prompt: PromptFn<'a>,
    /// The tools offered.
    pub scope: ToolScope,
    /// Prefixed to the provider's call ids for the registry (a sub-agent's calls, so that their
    /// spilled outputs do not collide with the parent's).
    pub call_prefix: Option<String>,
    /// Where progress goes.
    pub observer: &'a dyn Observer,
    /// Where the turn's checkpoints go (none: no checkpoint).
    pub checkpoints: Option<Arc<hands_checkpoint::Store>>,
}

/// What the user is told when the model provider fails.
pub fn provider_advice(error: &ProviderError) -> String {
    let what_to_do = match error {
        ProviderError::Auth(_) => {
            "Check the API key: the environment variable named by [model] api_key_env must hold a \
             valid key for this provider."
        }
        ProviderError::UnknownModel(_) => {
            "Check [model] model: the provider does not offer this model (or this key cannot use it)."
        }
        ProviderError::ContextOverflow(_) => {
            "Start a new session, or lower [agent] elide_at so that old tool results are dropped \
             sooner."
        }
        ProviderError::RateLimited { .. } => {
            "Wait a little and send the message again, or raise the provider's rate limit."
        }
        ProviderError::Server { .. } => {
            "The provider is having trouble; send the message again in a moment."
        }
        ProviderError::BadRequest { message, .. } => bad_request_advice(message),
        ProviderError::Transport(_) => {
            "Check the network connection and [model] base_url, then send the message again."
        }
        ProviderError::Protocol(_) => {
            "Send the message again; report it as a bug in hands if it keeps happening."
        }
        ProviderError::Cancelled => "The turn was aborted.",
    };
    format!("{error}. {what_to_do}")
}

/// What to do about a 4xx the provider explained: its words decide (an account out of credit or
/// quota, a model this key cannot use, a request too large); only a request the provider could
/// not parse points at hands.
fn bad_request_advice(message: &str) -> &'static str {
    let said = message.to_ascii_lowercase();
    let any = |words: &[&str]| words.iter().any(|w| said.contains(w));
    if any(&[
        "credit",
        "billing",
        "quota",
        "balance",
        "insufficient_quota",
        "payment",
        "spend limit",
    ]) {
        "The provider's account cannot pay for this request: add credit or raise the plan's limit \
         with the provider (its message above says which), then send the message again."
    } else if any(&["model"]) {
        "Check [model] model: the provider's message above is about the model (its name, or what \
         this key may use)."
    } else if any(&["too large", "too long", "maximum", "exceeds", "max_tokens"]) {
        "The request is larger than the provider accepts (its message above says which limit): \
         start a new session, or lower [agent] elide_at."
    } else if any(&[
        "invalid json",
        "could not parse",
        "malformed",
        "unexpected field",
        "unknown field",
    ]) {
        "The provider could not read the request hands built: send the message again, and report \
         it as a bug in hands (with the provider's message above) if it keeps happening."
    } else {
        "The provider's message above says what it refused: fix the setting it names (the key's \
         permissions, [model]) and send the message again, or report it as a bug in hands if it is \
         about the request hands built."
    }
}

/// The tool uses of an assistant message, in order.
pub fn tool_uses(message: &Message) -> Vec<ToolUse> {
    message
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => {
                Some(ToolUse { id: id.clone(), name: name.clone(), input: input.clone() })
            }
            _ => None,
        })
        .collect()
}

/// A tool's output as the model sees it, its notices (`[notice] …`) last.
pub fn result_block(tool_use_id: &str, output: &ToolOutput) -> Block {
    let mut content: Vec<ResultPart> = output
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text { text } if text.is_empty() => None,
            Content::Text { text } => Some(ResultPart::Text { text: text.clone() }),
            Content::Image { data, mime_type } => Some(ResultPart::Image {
                media_type: mime_type.clone(),
                data: base64::engine::general_purpose::STANDARD.encode(data),
            }),
        })
        .collect();
    if !content.iter().any(|p| matches!(p, ResultPart::Text { .. })) {
        let text = match &output.structured {
            Some(value) => value.to_string(),
            None if content.is_empty() => "(no output)".to_owned(),
            None => String::new(),
        };
        if !text.is_empty() {
            content.push(ResultPart::Text { text });
        }
    }
    content.extend(output.notices.iter().map(|n| ResultPart::Text { text: n.render() }));
    Block::ToolResult { tool_use_id: tool_use_id.to_owned(), content, is_error: output.is_error }
}

/// The first line(s) of a result, at most 300 characters (the `summary` of ToolCallFinished).
pub fn summary(output: &ToolOutput) -> String {
    let text = output.joined_text();
    let text = text.trim();
    let mut out: String = text.chars().take(300).collect();
    if text.chars().count() > 300 {
        out.pop();
        out.push('…');
    }
    if out.is_empty() && output.content.iter().any(|c| matches!(c, Content::Image { .. })) {
        out = "[image]".to_owned();
    }
    out
}

/// Lines of a failed call's output its `tool_call_finished` event carries.
const TAIL_LINES: usize = 5;
/// Characters of each such line.
const TAIL_LINE_CHARS: usize = 200;

/// How a shell command failed, from its call's structured result: a non-zero exit, a timeout or
/// a signal (a result the model may read as an answer is still a failure to the user), with the
/// last lines of what it printed. A command's result is told by its shape (`output`,
/// `timed_out` and `output_bytes`, as bash gives them), not by the tool's name: the agent does not
/// know the tools. Nothing for other results, or a command that succeeded.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Failure {
    /// `exit 1`, `timed out`, `killed by signal 9 (SIGKILL)`.
    pub reason: Option<String>,
    /// The exit code, when the shell exited.
    pub exit_code: Option<i32>,
    /// The last [`TAIL_LINES`] lines of the output, when there is output.
    pub tail: Option<String>,
}

impl Failure {
    /// The failure of the call that gave `output`, if it ran a command that failed.
    pub fn of(output: &ToolOutput) -> Self {
        let command = |r: &&Value| {
            r.get("output").is_some_and(Value::is_string)
                && r.get("timed_out").is_some_and(Value::is_boolean)
                && r.get("output_bytes").is_some_and(Value::is_u64)
        };
        let Some(result) = output.structured.as_ref().filter(command) else {
            return Self::default();
        };
        let exit_code =
            result.get("exit_code").and_then(Value::as_i64).and_then(|c| i32::try_from(c).ok());
        let signal = result.get("signal").and_then(Value::as_i64);
        let reason = if result.get("timed_out").and_then(Value::as_bool) == Some(true) {
            "timed out".to_owned()
        } else if let Some(signal) = signal {
            match signal_name(signal) {
                Some(name) => format!("killed by signal {signal} ({name})"),
                None => format!("killed by signal {signal}"),
            }
        } else {
            match exit_code {
                Some(code) if code != 0 => format!("exit {code}"),
                _ => return Self::default(),
            }
        };
        let text = result.get("output").and_then(Value::as_str).unwrap_or("");
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let tail: Vec<String> = lines[lines.len().saturating_sub(TAIL_LINES)..]
            .iter()
            .map(|l| {
                let mut line: String = l.chars().take(TAIL_LINE_CHARS).collect();
                if l.chars().count() > TAIL_LINE_CHARS {
                    line.push('…');
                }
                line
            })
            .collect();
        let tail = tail.join("\n");
        Self {
            reason: Some(reason),
            exit_code,
            tail: (!tail.trim().is_empty()).then(|| hands_core::redact::text(&tail).into_owned()),
        }
    }
}

/// The usual names of the signals that end a shell.
fn signal_name(signal: i64) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// If the conversation ends with tool uses that have no results (hands stopped mid-call), the
/// user message that answers them with "not finished" errors, to be appended before going on.
pub fn repair(messages: &[Message]) -> Option<Message> {
    let last = messages.last()?;
    if last.role != Role::Assistant {
        return None;
    }
    let uses = tool_uses(last);
    if uses.is_empty() {
        return None;
    }
    Some(Message {
        role: Role::User,
        content: uses
            .iter()
            .map(|u| {
                result_block(
                    &u.id,
                    &ToolOutput::error(format!(
                        "{} did not finish: hands stopped while it ran. Check its effects before \
                         calling it again.",
                        u.name
                    )),
                )
            })
            .collect(),
    })
}

/// The conversation as sent: consecutive messages of the same role merged into one (a user
/// message after an aborted model call, tool results followed by the next user message).
pub fn merged(messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for message in messages {
        if message.content.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(prev) if prev.role == message.role => {
                prev.content.extend(message.content.iter().cloned());
            }
            _ => out.push(message.clone()),
        }
    }
    out
}

fn not_run(name: &str) -> ToolOutput {
    ToolOutput::error(format!("{name} was not run: the turn was aborted before it started."))
}

impl Turn<'_> {
    /// The tools offered now, as the model sees them.
    pub fn tool_defs(&self) -> Vec<ToolDef> {
        let specs = self.registry.list(self.session.mode());
        specs
            .into_iter()
            .filter(|spec| match &self.scope {
                ToolScope::Mode => true,
                ToolScope::Only(names) => names.contains(&spec.name),
            })
            .map(|spec| ToolDef {
                name: spec.name.clone(),
                description: spec.description.clone(),
                input_schema: spec.input_schema.clone(),
            })
            .collect()
    }

    /// Run the turn: `user` is appended to `messages`, and so is everything that follows.
    pub async fn run(&self, messages: &mut Vec<Message>, user: Message) -> Outcome {
        let span = crate::telemetry::turn_span(self.session, self.turn_id, self.provider);
        let run = tracing::Instrument::instrument(self.run_traced(messages, user), span.clone());
        let outcome = run.await;
        crate::telemetry::record_turn_end(
            &span,
            outcome.reason.as_str(),
            outcome.steps,
            outcome.usage,
        );
        outcome
    }

    async fn run_traced(&self, messages: &mut Vec<Message>, user: Message) -> Outcome {
        // While the turn runs no restore may change the project under it (see checkpointing).
        let _running = self.hold_project().await;
        // A checkpoint before the turn's first call of a tool that is not read-only, and one at
        // its end when there was one: the project's changes are undoable turn by turn. Each
        // records how long the conversation was then: before this turn's message, and after
        // the turn.
        let mutated = AtomicBool::new(false);
        let before = messages.len() as u64;
        let outcome = self.steps(messages, user, &mutated, before).await;
        if mutated.load(Ordering::Relaxed) {
            self.checkpoint(hands_checkpoint::Kind::TurnEnd, messages.len() as u64).await;
        }
        outcome
    }

    async fn steps(
        &self,
        messages: &mut Vec<Message>,
        user: Message,
        mutated: &AtomicBool,
        before: u64,
    ) -> Outcome {
        let mut saved = messages.len();
        messages.push(user);
        let mut steps = 0;
        let mut usage = Usage::default();
        let mut last_text: Option<String> = None;
        let outcome =
            |reason, text, error, steps, usage| Outcome { reason, text, error, steps, usage };
        loop {
            if self.cancel.is_cancelled() {
                self.flush(messages, &mut saved).await;
                return outcome(EndReason::Aborted, last_text, None, steps, usage);
            }
            if steps >= self.limits.max_steps {
                self.flush(messages, &mut saved).await;
                return outcome(EndReason::MaxSteps, last_text, None, steps, usage);
            }
            self.inject_notices(messages).await;
            self.flush(messages, &mut saved).await;

            let mode = self.session.mode();
            let system = (self.prompt)(mode);
            let tools = self.tool_defs();
            let overhead = elide::request_tokens(&ModelRequest {
                system: system.clone(),
                tools: tools.clone(),
                ..ModelRequest::default()
            });
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let threshold =
                (self.limits.elide_at * self.provider.context_window() as f64).max(0.0) as u64;
            let elided = elide::elide(messages, overhead, threshold);
            if elided.results > 0 {
                tracing::debug!(
                    turn = self.turn_id,
                    results = elided.results,
                    tokens = elided.tokens_saved,
                    "elided old tool results"
                );
            }
            let request = ModelRequest {
                system,
                messages: merged(messages),
                tools,
                max_tokens: self.limits.max_tokens,
            };
            steps += 1;
            self.observer.step(steps).await;
            let response = match self.call_model(&request).await {
                Ok(response) => response,
                Err(ProviderError::Cancelled) => {
                    return outcome(EndReason::Aborted, last_text, None, steps, usage);
                }
                Err(error) => {
                    let advice = provider_advice(&error);
                    return outcome(EndReason::Error, last_text, Some(advice), steps, usage);
                }
            };
            usage.input_tokens += response.usage.input_tokens;
            usage.output_tokens += response.usage.output_tokens;
            let uses = tool_uses(&response.message);
            let text = response.message.text();
            if !text.trim().is_empty() {
                last_text = Some(text);
            }
            if !response.message.content.is_empty() {
                messages.push(Message { role: Role::Assistant, content: response.message.content });
                self.flush(messages, &mut saved).await;
            }
            if uses.is_empty() {
                return outcome(EndReason::Completed, last_text, None, steps, usage);
            }
            if !mutated.load(Ordering::Relaxed) && uses.iter().any(|u| self.may_change(u)) {
                self.checkpoint(hands_checkpoint::Kind::TurnStart, before).await;
                mutated.store(true, Ordering::Relaxed);
            }
            let outputs = self.run_calls(&uses).await;
            messages.push(Message {
                role: Role::User,
                content: uses.iter().zip(&outputs).map(|(u, o)| result_block(&u.id, o)).collect(),
            });
        }
    }

    /// Report the messages not reported yet.
    async fn flush(&self, messages: &[Message], saved: &mut usize) {
        if *saved < messages.len() {
            self.observer.messages(&messages[*saved..]).await;
            *saved = messages.len();
        }
    }

    /// Queued notices ride on the user content that goes with the next model call.
    async fn inject_notices(&self, messages: &mut [Message]) {
        let notices = self.session.take_notices();
        if notices.is_empty() {
            return;
        }
        for notice in notices {
            if let Some(last) = messages.last_mut().filter(|m| m.role == Role::User) {
                last.content.push(Block::Text { text: notice.render() });
            }
            self.observer.notice(notice.text).await;
        }
    }

    /// One model call; streamed text goes to the observer, deltas that queued up while it was
    /// busy joined into one. Ends with `Cancelled` as soon as the turn is aborted.
    async fn call_model(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let span = crate::telemetry::model_span(self.session, self.provider, request);
        let started = Instant::now();
        let result =
            tracing::Instrument::instrument(self.stream_model(request), span.clone()).await;
        crate::telemetry::record_model_end(&span, &result, started.elapsed());
        result
    }

    async fn stream_model(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let sink = move |delta: &str| {
            let _ = tx.send(delta.to_owned());
        };
        let call = self.provider.complete(request, &sink, &self.cancel);
        tokio::pin!(call);
        let result = loop {
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => break Err(ProviderError::Cancelled),
                result = &mut call => break result,
                Some(mut text) = rx.recv() => {
                    while let Ok(more) = rx.try_recv() {
                        text.push_str(&more);
                    }
                    self.observer.text(text).await;
                }
            }
        };
        let mut rest = String::new();
        while let Ok(more) = rx.try_recv() {
            rest.push_str(&more);
        }
        if !rest.is_empty() && result.is_ok() {
            self.observer.text(rest).await;
        }
        result
    }

    /// True when `call`'s tool may change the project (a call of it may; the turn-start
    /// checkpoint is taken before any such call runs). Unknown tools only produce an error.
    fn may_change(&self, call: &ToolUse) -> bool {
        self.registry.get(&call.name).is_some_and(|tool| !tool.spec().annotations.read_only)
    }

    /// Run the calls: consecutive calls that change nothing together, the others one at a time,
    /// in order. Each call is prepared once, when it is reached (after the calls before it ran:
    /// a write may bring a tool that the next call names), and its prepared policy says whether
    /// it may run alongside its neighbours.
    async fn run_calls(&self, uses: &[ToolUse]) -> Vec<ToolOutput> {
        let mut outputs: Vec<ToolOutput> = Vec::with_capacity(uses.len());
        let mut i = 0;
        // A call prepared while a batch was gathered, that must run alone after it.
        let mut next: Option<Ready> = None;
        while i < uses.len() {
            if self.cancel.is_cancelled() {
                outputs.extend(uses[i..].iter().map(|u| not_run(&u.name)));
                break;
            }
            let first = next.take().unwrap_or_else(|| self.prepare(&uses[i]));
            if first.mutates() {
                outputs.push(self.call(&uses[i], first).await);
                i += 1;
                continue;
            }
            let mut batch = vec![(&uses[i], first)];
            let mut end = i + 1;
            while end < uses.len() {
                let ready = self.prepare(&uses[end]);
                if ready.mutates() {
                    next = Some(ready);
                    break;
                }
                batch.push((&uses[end], ready));
                end += 1;
            }
            let batch = batch.into_iter().map(|(u, ready)| self.call(u, ready));
            outputs.extend(futures_util::future::join_all(batch).await);
            i = end;
        }
        outputs
    }

    /// `call` prepared once: its arguments parsed and its policy known, or answered at once (a
    /// tool outside this turn's scope).
    fn prepare(&self, call: &ToolUse) -> Ready {
        if let ToolScope::Only(names) = &self.scope {
            let canonical = self.registry.get(&call.name).map(|t| t.spec().name.clone());
            if !canonical.as_ref().is_some_and(|c| names.contains(c)) {
                return Ready::OutOfScope(ToolOutput::error(format!(
                    "`{}` is not available here. Available tools: {}.",
                    call.name,
                    names.join(", ")
                )));
            }
        }
        let id = match &self.call_prefix {
            Some(prefix) => format!("{prefix}{}", call.id),
            None => call.id.clone(),
        };
        let request =
            ToolCall::new(id, call.name.clone(), call.input.clone()).in_turn(self.turn_id);
        Ready::Call(Box::new(self.registry.prepare(self.session, request)))
    }

    async fn call(&self, call: &ToolUse, ready: Ready) -> ToolOutput {
        self.observer.call_started(call).await;
        let prepared = match ready {
            Ready::OutOfScope(output) => {
                self.observer.call_finished(call, &output, Duration::ZERO).await;
                return output;
            }
            Ready::Call(prepared) => *prepared,
        };
        let started = Instant::now();
        let options = CallOptions { progress: None, cancel: Some(self.cancel.clone()) };
        let output = match self.registry.run(self.session, prepared, options).await {
            Ok(output) => output,
            Err(error) => ToolOutput::error(format!(
                "hands could not run {}: {error}. Try again; if it keeps failing, tell the user.",
                call.name
            )),
        };
        // The call's running time: the wait for the user's approval is not part of it.
        let ran = started.elapsed().saturating_sub(output.approval_wait);
        self.observer.call_finished(call, &output, ran).await;
        output
    }
}

/// A call of the model's, prepared.
enum Ready {
    /// Outside this turn's tools: answered without running.
    OutOfScope(ToolOutput),
    /// Prepared by the registry.
    Call(Box<PreparedCall>),
}

impl Ready {
    /// True when the call may change things, so it runs alone.
    fn mutates(&self) -> bool {
        match self {
            Ready::OutOfScope(_) => false,
            Ready::Call(prepared) => prepared.policy().mutates,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merging_joins_same_role_neighbours_and_drops_empty_messages() {
        let results = Message {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: "a".into(),
                content: vec![],
                is_error: false,
            }],
        };
        let messages = vec![
            Message::user("one"),
            Message::user("two"),
            Message { role: Role::Assistant, content: vec![] },
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolUse {
                    id: "a".into(),
                    name: "x".into(),
                    input: json!({}),
                }],
            },
            results,
            Message::user("three"),
        ];
        let merged = merged(&messages);
        assert_eq!(merged.len(), 3);
        assert_eq!(merged[0].text(), "onetwo");
        assert!(matches!(merged[2].content[0], Block::ToolResult { .. }));
        assert_eq!(merged[2].text(), "three");
    }

    #[test]
    fn repair_answers_dangling_tool_uses() {
        let assistant = Message {
            role: Role::Assistant,
            content: vec![
                Block::Text { text: "let me".into() },
                Block::ToolUse { id: "a".into(), name: "bash".into(), input: json!({}) },
            ],
        };
        let fix = repair(&[Message::user("hi"), assistant]).unwrap();
        assert!(
            matches!(&fix.content[..], [Block::ToolResult { tool_use_id, is_error: true, .. }] if tool_use_id == "a")
        );
        assert!(repair(&[Message::user("hi")]).is_none());
    }

    #[test]
    fn results_keep_images_and_fall_back_to_structured_text() {
        let out = ToolOutput::image(vec![1, 2, 3], "image/png");
        let Block::ToolResult { content, .. } = result_block("x", &out) else { panic!() };
        assert_eq!(
            content,
            vec![ResultPart::Image { media_type: "image/png".into(), data: "AQID".into() }]
        );
        let out = ToolOutput::default().with_structured(json!({"n": 1}));
        let Block::ToolResult { content, .. } = result_block("x", &out) else { panic!() };
        assert_eq!(content, vec![ResultPart::Text { text: "{\"n\":1}".into() }]);
        let Block::ToolResult { content, .. } = result_block("x", &ToolOutput::default()) else {
            panic!()
        };
        assert_eq!(content, vec![ResultPart::Text { text: "(no output)".into() }]);
    }

    #[test]
    fn summaries_are_cut_at_300_characters() {
        assert_eq!(summary(&ToolOutput::text("short")), "short");
        let long = summary(&ToolOutput::text("é".repeat(400)));
        assert_eq!(long.chars().count(), 300);
        assert!(long.ends_with('…'));
    }

    // Issue 34, item 3: a bash call that exited 1 was shown as a success.
    #[test]
    fn a_bash_call_fails_by_its_exit_code_timeout_or_signal_with_its_last_lines() {
        let bash = |mut result: serde_json::Value| {
            result["output_bytes"] = json!(10);
            Failure::of(&ToolOutput::text("x").with_structured(result))
        };
        let output: String = (1..=7).map(|n| format!("line {n}\n")).collect();
        let exited = bash(json!({"output": output, "exit_code": 3, "timed_out": false}));
        assert_eq!(exited.reason.as_deref(), Some("exit 3"));
        assert_eq!(exited.exit_code, Some(3));
        assert_eq!(exited.tail.as_deref(), Some("line 3\nline 4\nline 5\nline 6\nline 7"));
        let timed_out = bash(json!({"output": "", "timed_out": true}));
        assert_eq!((timed_out.reason.as_deref(), timed_out.tail), (Some("timed out"), None));
        let killed = bash(json!({"output": "x", "signal": 9, "timed_out": false}));
        assert_eq!(killed.reason.as_deref(), Some("killed by signal 9 (SIGKILL)"));
        assert_eq!(
            bash(json!({"output": "ok", "exit_code": 0, "timed_out": false})),
            Failure::default()
        );
        let other = ToolOutput::text("x").with_structured(json!({"exit_code": 1}));
        assert_eq!(Failure::of(&other), Failure::default());
    }
}
