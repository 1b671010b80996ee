//! Shared by the loop and host tests: a scripted [`Provider`], test tools that record when they
//! run, the real registry (hands-fs, hands-exec, the agent's session tools and spawn_subagent), and
//! a host over a memory store.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hands_agent::event::{Event, EventKind};
use hands_agent::host::{AgentConfig, Host, HostParts, NewSession, Subscription};
use hands_agent::model::{
    Block, Message, ModelRequest, ModelResponse, Provider, ProviderError, Role, StopReason,
    TextSink, Usage,
};
use hands_agent::turn::{Observer, ToolUse};
use hands_core::{
    Annotations, BoxFuture, CancellationToken, Context, CoreConfig, Mode, Registry,
    RegistryBuilder, Tool, ToolError, ToolOutput,
};
use hands_store::MemoryStore;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A fresh tool-use id (unique in the process: the store keys tool calls by it).
pub fn next_id() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!("toolu_{}", N.fetch_add(1, Ordering::Relaxed) + 1)
}

/// One scripted model response.
pub enum Step {
    /// Stream `text` (in two deltas), then ask for `tools` (name, input).
    Reply { text: String, tools: Vec<(String, Value)>, delay: Duration },
    /// Fail.
    Fail(ProviderError),
    /// Wait until cancelled.
    Hang,
}

/// Text only: the turn ends.
pub fn say(text: &str) -> Step {
    Step::Reply { text: text.into(), tools: Vec::new(), delay: Duration::ZERO }
}

/// One tool call.
pub fn call(name: &str, input: Value) -> Step {
    calls(vec![(name, input)])
}

/// Several tool calls in one response.
pub fn calls(tools: Vec<(&str, Value)>) -> Step {
    Step::Reply {
        text: String::new(),
        tools: tools.into_iter().map(|(n, i)| (n.to_owned(), i)).collect(),
        delay: Duration::ZERO,
    }
}

type Rule = Box<dyn Fn(&ModelRequest) -> Step + Send + Sync>;

/// A provider that plays a script: a queue of steps, or a rule that answers each request.
pub struct Script {
    steps: Mutex<VecDeque<Step>>,
    rule: Option<Rule>,
    /// Every request received, in order.
    pub requests: Mutex<Vec<ModelRequest>>,
    window: u64,
    /// Number the calls of each response `call_0`, `call_1`, … as local model servers do.
    local_ids: bool,
}

impl Script {
    pub fn new(steps: Vec<Step>) -> Self {
        Self {
            steps: Mutex::new(steps.into()),
            rule: None,
            requests: Mutex::new(Vec::new()),
            window: 200_000,
            local_ids: false,
        }
    }

    /// Answer each request with `rule` (for concurrent sessions).
    pub fn rule(rule: impl Fn(&ModelRequest) -> Step + Send + Sync + 'static) -> Self {
        Self { rule: Some(Box::new(rule)), ..Self::new(Vec::new()) }
    }

    /// Tool-use ids `call_0`, `call_1`, … in every response (they repeat across responses).
    pub fn with_local_ids(mut self) -> Self {
        self.local_ids = true;
        self
    }

    pub fn with_window(mut self, window: u64) -> Self {
        self.window = window;
        self
    }

    pub fn push(&self, step: Step) {
        self.steps.lock().unwrap().push_back(step);
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn left(&self) -> usize {
        self.steps.lock().unwrap().len()
    }
}

impl Provider for Script {
    fn name(&self) -> &str {
        "script"
    }

    fn model(&self) -> &str {
        "scripted"
    }

    fn context_window(&self) -> u64 {
        self.window
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        on_text: TextSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            self.requests.lock().unwrap().push(request.clone());
            let step = match &self.rule {
                Some(rule) => rule(request),
                None => {
                    self.steps.lock().unwrap().pop_front().unwrap_or_else(|| say("(script over)"))
                }
            };
            match step {
                Step::Fail(err) => Err(err),
                Step::Hang => {
                    cancel.cancelled().await;
                    Err(ProviderError::Cancelled)
                }
                Step::Reply { text, tools, delay } => {
                    if !text.is_empty() {
                        let mid =
                            text.char_indices().nth(text.chars().count() / 2).map_or(0, |(i, _)| i);
                        on_text(&text[..mid]);
                        on_text(&text[mid..]);
                    }
                    if !delay.is_zero() {
                        tokio::select! {
                            () = tokio::time::sleep(delay) => {}
                            () = cancel.cancelled() => return Err(ProviderError::Cancelled),
                        }
                    }
                    let mut content = Vec::new();
                    if !text.is_empty() {
                        content.push(Block::Text { text });
                    }
                    let has_tools = !tools.is_empty();
                    for (n, (name, input)) in tools.into_iter().enumerate() {
                        let id = if self.local_ids { format!("call_{n}") } else { next_id() };
                        content.push(Block::ToolUse { id, name, input });
                    }
                    Ok(ModelResponse {
                        message: Message { role: Role::Assistant, content },
                        stop: if has_tools { StopReason::ToolUse } else { StopReason::EndTurn },
                        usage: Usage { input_tokens: 10, output_tokens: 5 },
                    })
                }
            }
        })
    }
}

/// When each test tool call ran.
#[derive(Clone, Default)]
pub struct Probe(pub Arc<Mutex<Vec<(String, Instant, Instant)>>>);

impl Probe {
    pub fn labels(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().map(|(l, _, _)| l.clone()).collect()
    }

    pub fn span(&self, label: &str) -> (Instant, Instant) {
        let log = self.0.lock().unwrap();
        let (_, a, b) = log.iter().find(|(l, _, _)| l == label).unwrap();
        (*a, *b)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeArgs {
    /// Recorded.
    pub label: String,
    /// How long the call takes.
    #[serde(default)]
    pub ms: u64,
}

async fn probe_call(
    probe: &Probe,
    ctx: &Context,
    args: ProbeArgs,
) -> Result<ToolOutput, ToolError> {
    let start = Instant::now();
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(args.ms)) => {}
        () = ctx.cancel_token().cancelled() => return Ok(ToolOutput::error("cancelled")),
    }
    probe.0.lock().unwrap().push((args.label.clone(), start, Instant::now()));
    Ok(ToolOutput::text(format!("done {}", args.label)))
}

/// A slow read-only tool.
pub struct SlowRead(pub Probe);

impl Tool for SlowRead {
    type Args = ProbeArgs;
    fn name(&self) -> &'static str {
        "slow_read"
    }
    fn description(&self) -> Cow<'static, str> {
        "Reads slowly.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }
    fn cacheable(&self) -> bool {
        false
    }
    async fn call(&self, ctx: Context, args: ProbeArgs) -> Result<ToolOutput, ToolError> {
        probe_call(&self.0, &ctx, args).await
    }
}

/// A mutating tool that records the order it ran in.
pub struct Record(pub Probe);

impl Tool for Record {
    type Args = ProbeArgs;
    fn name(&self) -> &'static str {
        "record"
    }
    fn description(&self) -> Cow<'static, str> {
        "Records its label.".into()
    }
    fn annotations(&self) -> Annotations {
        Annotations::default()
    }
    fn needs_approval(&self) -> bool {
        false
    }
    async fn call(&self, ctx: Context, args: ProbeArgs) -> Result<ToolOutput, ToolError> {
        probe_call(&self.0, &ctx, args).await
    }
}

/// The real registry plus the probe tools.
pub fn registry_with(config: CoreConfig, probe: &Probe) -> Arc<Registry> {
    registry_builder(config, probe).build().into()
}

pub fn registry_builder(config: CoreConfig, probe: &Probe) -> RegistryBuilder {
    let builder = Registry::builder(config);
    let builder = hands_fs::register(builder, &hands_fs::FsConfig::default());
    let exec = hands_exec::ExecConfig { background_processes: true, ..Default::default() };
    let builder = hands_exec::register(builder, &exec);
    let builder = hands_agent::register(builder);
    let builder = hands_agent::subagent::register(builder, true);
    builder.tool(SlowRead(probe.clone())).tool(Record(probe.clone()))
}

/// Everything a host test needs.
pub struct Fixture {
    pub host: Arc<Host>,
    pub store: Arc<MemoryStore>,
    pub script: Arc<Script>,
    pub registry: Arc<Registry>,
    pub probe: Probe,
    pub root: tempfile::TempDir,
}

impl Fixture {
    pub async fn new(script: Script) -> Self {
        Self::with(script, CoreConfig::default(), AgentConfig::default()).await
    }

    pub async fn with(script: Script, core: CoreConfig, agent: AgentConfig) -> Self {
        let probe = Probe::default();
        let registry = registry_with(core, &probe);
        let store = Arc::new(MemoryStore::new());
        let script = Arc::new(script);
        let host = Host::open(HostParts {
            store: store.clone(),
            registry: Arc::clone(&registry),
            provider: Some(script.clone()),
            config: agent,
            checkpoints: hands_checkpoint::Settings { enabled: false, ..Default::default() },
        })
        .await
        .unwrap();
        Self { host, store, script, registry, probe, root: tempfile::tempdir().unwrap() }
    }

    /// A new session over the fixture's root.
    pub async fn session(&self, mode: Mode) -> String {
        self.host
            .create_session(NewSession {
                id: None,
                project_id: Some("proj".into()),
                root: self.root.path().to_owned(),
                mode,
                title: None,
            })
            .await
            .unwrap()
            .id
    }

    /// Post `text` and wait for the turn; its status.
    pub async fn turn(&self, session: &str, text: &str) -> String {
        self.host.post_message(session, text.into()).await.unwrap();
        within(30, self.host.wait_turn(session)).await.unwrap().unwrap()
    }

    /// Every stored event of `session`.
    pub async fn events(&self, session: &str) -> Vec<Event> {
        self.host.subscribe(session, 0).await.unwrap().replay
    }
}

/// `fut`, or a panic after `secs` seconds.
pub async fn within<T>(secs: u64, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut).await.expect("timed out")
}

/// Read events from `sub` until one matches `done`; all of them, the match last.
pub async fn until(sub: &mut Subscription, done: impl Fn(&EventKind) -> bool) -> Vec<Event> {
    let mut seen = Vec::new();
    within(30, async {
        while let Some(event) = sub.next().await {
            let stop = done(&event.kind);
            seen.push(event);
            if stop {
                break;
            }
        }
    })
    .await;
    seen
}

/// The text of a tool result block.
pub fn result_text(block: &Block) -> String {
    match block {
        Block::ToolResult { content, .. } => content
            .iter()
            .filter_map(|p| match p {
                hands_agent::model::ResultPart::Text { text } => Some(text.as_str()),
                hands_agent::model::ResultPart::Image { .. } => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Every tool_use of the conversation has a tool_result later on.
pub fn assert_valid(messages: &[Message]) {
    for (i, m) in messages.iter().enumerate() {
        for b in &m.content {
            if let Block::ToolUse { id, .. } = b {
                let answered = messages[i + 1..].iter().any(|later| {
                    later.content.iter().any(
                        |b| matches!(b, Block::ToolResult { tool_use_id, .. } if tool_use_id == id),
                    )
                });
                assert!(answered, "tool_use {id} has no result in {messages:#?}");
            }
        }
    }
}

/// An observer that writes down what the loop reports.
#[derive(Default)]
pub struct Notes(pub Mutex<Vec<String>>, pub Mutex<Vec<Message>>);

impl Notes {
    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Observer for Notes {
    fn text(&self, delta: String) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(format!("text {delta}"));
        Box::pin(async {})
    }
    fn notice(&self, text: String) -> BoxFuture<'_, ()> {
        self.0.lock().unwrap().push(format!("notice {text}"));
        Box::pin(async {})
    }
    fn call_started<'a>(&'a self, call: &'a ToolUse) -> BoxFuture<'a, ()> {
        self.0.lock().unwrap().push(format!("start {}", call.name));
        Box::pin(async {})
    }
    fn call_finished<'a>(
        &'a self,
        call: &'a ToolUse,
        output: &'a ToolOutput,
        _duration: Duration,
    ) -> BoxFuture<'a, ()> {
        self.0.lock().unwrap().push(format!("end {} error={}", call.name, output.is_error));
        Box::pin(async {})
    }
    fn messages<'a>(&'a self, new: &'a [Message]) -> BoxFuture<'a, ()> {
        self.1.lock().unwrap().extend(new.iter().cloned());
        Box::pin(async {})
    }
}
