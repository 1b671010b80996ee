//! The registry: the tools of its [sources](crate::ToolSource), which ones each mode offers
//! (from each tool's [`Policy`](crate::Policy)), and `dispatch`, which resolves a call and runs it
//! through the middleware chain into the project's sandbox.
//!
//! The tool list is live: sources add and remove tools while sessions run. The registry keeps the
//! list as an immutable [`Snapshot`] behind an `RwLock<Arc<_>>` that is held only to clone the
//! `Arc`, never across an await; a call reads one snapshot from start to end. A rebuild (a source
//! reported a change, [`Registry::refresh`], a mutating call or a listing after which a source saw
//! a change) swaps in a new snapshot and, when the list differs, bumps the version that
//! [`Registry::subscribe`] hands out, so that front ends tell their clients.

use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use tokio::sync::watch;

use crate::middleware::{self, DynMiddleware, Endpoint, Layer, Middleware, Next, Place, Request};
use crate::services::Services;
use crate::snapshot::{RegistryError, Snapshot};
use crate::source::{Builtins, Changes, Condition, Conditions, ConditionsReader, Rebuild, Refresh};
use crate::tool::Erased;
use crate::{
    BoxFuture, CallPolicy, ChainError, Context, CoreConfig, DispatchError, DynTool, LocalProvider,
    Mode, Modes, Prepared, SandboxProvider, Session, Tool, ToolCall, ToolError, ToolOutput,
    ToolSource, ToolSpec,
};

/// What a front end adds to one call.
#[derive(Clone, Default)]
pub struct CallOptions {
    /// Where the call's progress reports go.
    pub progress: Option<crate::ProgressSink>,
    /// Cancels this call alone.
    pub cancel: Option<crate::CancellationToken>,
}

/// Builds a [`Registry`].
pub struct RegistryBuilder {
    config: CoreConfig,
    conditions: ConditionsReader,
    provider: Arc<dyn SandboxProvider>,
    tools: Vec<(Option<Condition>, Arc<dyn DynTool>)>,
    sources: Vec<Arc<dyn ToolSource>>,
    layers: Vec<Layer>,
    services: Services,
    spill_hint: &'static str,
    tools_only: bool,
    project_root: Option<std::path::PathBuf>,
    offer: Option<Offer>,
}

/// Which tools a registry offers at all ([`RegistryBuilder::offer_only`]).
pub type Offer = Arc<dyn Fn(&ToolSpec) -> bool + Send + Sync>;

impl RegistryBuilder {
    /// A registry that only runs its tools: no approval, timeout, dedup, truncation, redaction
    /// or recovery of its own (the schema check of debug builds stays). For the hands inside a
    /// sandbox: the host's chain owns every step, once, and the calls it sends in were approved,
    /// timed and are truncated and redacted there.
    #[must_use]
    pub fn tools_only(mut self) -> Self {
        self.tools_only = true;
        self
    }

    /// How truncation's marker tells the model to read a spilled output, in the words of the
    /// crate whose tools read files (`read it with read_file and offset/limit, or grep it`).
    #[must_use]
    pub fn spill_hint(mut self, hint: &'static str) -> Self {
        self.spill_hint = hint;
        self
    }

    /// Install a service for front ends (e.g. `Arc<dyn ProcessService>`); one per type.
    #[must_use]
    pub fn service<T: Clone + Send + Sync + 'static>(mut self, service: T) -> Self {
        self.services.insert(service);
        self
    }

    /// The service of type `T` installed so far (a later crate may wrap or replace it).
    pub fn installed<T: Clone + 'static>(&self) -> Option<T> {
        self.services.get()
    }

    /// Add `middleware` to the chain at `place` (see [`middleware`] for the order).
    #[must_use]
    pub fn layer<M: Middleware>(mut self, place: Place, middleware: M) -> Self {
        self.layers.push((place, Arc::new(middleware)));
        self
    }

    /// Register `tool`.
    #[must_use]
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        self.tools.push((None, Arc::new(Erased::new(tool))));
        self
    }

    /// Register `tool`, offered while `predicate` holds for the configuration and environment.
    /// The predicate is evaluated at build and again on every [`Registry::refresh`].
    #[must_use]
    pub fn tool_if<T: Tool>(
        mut self,
        predicate: impl Fn(&Conditions) -> bool + Send + Sync + 'static,
        tool: T,
    ) -> Self {
        self.tools.push((Some(Arc::new(predicate)), Arc::new(Erased::new(tool))));
        self
    }

    /// Register an already-erased tool (dynamic tools that are always there).
    #[must_use]
    pub fn dyn_tool(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.tools.push((None, tool));
        self
    }

    /// Add a source of tools that may change while sessions run (remote MCP servers, preview
    /// detection). Sources come after the built-ins, in the order added; on a name conflict the
    /// earlier one keeps the name.
    #[must_use]
    pub fn source(mut self, source: Arc<dyn ToolSource>) -> Self {
        self.sources.push(source);
        self
    }

    /// The project whose kind conditions see ([`Conditions::project`](crate::Conditions)):
    /// probed at build, on every refresh, after every call that is not read-only, and before a
    /// listing (at most once a second).
    #[must_use]
    pub fn project_root(mut self, root: impl Into<std::path::PathBuf>) -> Self {
        self.project_root = Some(root.into());
        self
    }

    /// Offer only the tools `offer` accepts, from every source (a front end's tool profile):
    /// the others are neither listed nor callable.
    #[must_use]
    pub fn offer_only(mut self, offer: impl Fn(&ToolSpec) -> bool + Send + Sync + 'static) -> Self {
        self.offer = Some(Arc::new(offer));
        self
    }

    /// What conditional registration sees: fixed `conditions`.
    #[must_use]
    pub fn conditions(self, conditions: Conditions) -> Self {
        self.conditions_with(move || conditions.clone())
    }

    /// What conditional registration sees: whatever `reader` returns, at build and on every
    /// [`Registry::refresh`] (e.g. `move || Conditions::from_process(config())` re-reads the
    /// environment).
    #[must_use]
    pub fn conditions_with(
        mut self,
        reader: impl Fn() -> Conditions + Send + Sync + 'static,
    ) -> Self {
        self.conditions = Arc::new(reader);
        self
    }

    /// Where tools run (default: [`LocalProvider`]).
    #[must_use]
    pub fn sandbox(mut self, provider: Arc<dyn SandboxProvider>) -> Self {
        self.provider = provider;
        self
    }

    /// Finish.
    ///
    /// # Panics
    /// When two built-in tools claim the same name or alias: a bug in the code that lists them,
    /// reported with both names (use [`RegistryBuilder::try_build`] to get it as an error).
    pub fn build(self) -> Registry {
        match self.try_build() {
            Ok(registry) => registry,
            // A conflict among built-ins is a programming error found by any test that builds
            // the registry; there is no sensible registry to go on with.
            #[allow(clippy::panic)]
            Err(err) => panic!("the tool registry cannot be built: {err}"),
        }
    }

    /// Finish, or say which built-in names collide. Within the built-ins a later tool with the
    /// same name replaces an earlier one; an alias may not collide with any name or alias.
    pub fn try_build(self) -> Result<Registry, RegistryError> {
        let chain = if self.tools_only {
            middleware::tools_only()
        } else {
            middleware::chain(
                &self.config,
                Arc::clone(&self.provider),
                &self.layers,
                self.spill_hint,
            )
        };
        let builtins: Arc<dyn ToolSource> =
            Arc::new(Builtins::new(self.tools, self.conditions, self.project_root));
        let mut sources = vec![builtins];
        sources.extend(self.sources);
        let snapshot = Snapshot::build(collect(&sources, self.offer.as_ref()))?;
        let (version, _) = watch::channel(0);
        let live = Arc::new(Live {
            sources,
            snapshot: RwLock::new(Arc::new(snapshot)),
            rebuilding: Mutex::new(()),
            version,
            offer: self.offer,
        });
        for source in &live.sources {
            let weak: std::sync::Weak<dyn Rebuild> = Arc::downgrade(&live) as _;
            source.start(Changes(weak));
        }
        let endpoint = SandboxEndpoint { provider: self.provider };
        Ok(Registry { live, chain, endpoint, services: self.services })
    }
}

/// The sources and the current snapshot, shared with the sources' [`Changes`] handles.
pub(crate) struct Live {
    sources: Vec<Arc<dyn ToolSource>>,
    snapshot: RwLock<Arc<Snapshot>>,
    /// One rebuild at a time, so that a slower one cannot swap in an older list.
    rebuilding: Mutex<()>,
    version: watch::Sender<u64>,
    /// The front end's tool profile, if any.
    offer: Option<Offer>,
}

impl Live {
    fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Ask every source to look again because of `why`; rebuild when one may have changed.
    /// True when the list changed.
    fn check(&self, why: Refresh) -> bool {
        // Every source looks (no short circuit): each keeps its own state up to date.
        let maybe = self.sources.iter().fold(false, |any, source| source.refresh(why) | any);
        maybe && self.rebuild()
    }

    /// Rebuild the snapshot from the sources; bump the version when the list changed.
    pub(crate) fn rebuild(&self) -> bool {
        let _one = self.rebuilding.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = match Snapshot::build(collect(&self.sources, self.offer.as_ref())) {
            Ok(fresh) => fresh,
            Err(err) => {
                // The built-ins were valid at build; a condition can only remove some of them.
                tracing::error!(%err, "the tool list cannot be rebuilt; keeping the old one");
                return false;
            }
        };
        if fresh.same(&self.snapshot()) {
            return false;
        }
        *self.snapshot.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(fresh);
        self.version.send_modify(|version| *version += 1);
        tracing::debug!(version = *self.version.borrow(), "the tool list changed");
        true
    }
}

impl Rebuild for Live {
    fn rebuild(&self) -> bool {
        Live::rebuild(self)
    }
}

fn collect<'a>(
    sources: &'a [Arc<dyn ToolSource>],
    offer: Option<&Offer>,
) -> Vec<(&'a str, Vec<Arc<dyn DynTool>>)> {
    sources
        .iter()
        .map(|source| {
            let mut tools = source.tools();
            if let Some(offer) = offer {
                tools.retain(|tool| offer(tool.spec()));
            }
            (source.name(), tools)
        })
        .collect()
}

/// Refreshes a [`Registry`] ([`Registry::refresh`]) while it lives; see [`Registry::refresher`].
#[derive(Clone)]
pub struct Refresher(Weak<Live>);

impl Refresher {
    /// [`Registry::refresh`] when the registry still exists: true when its list changed.
    pub fn refresh(&self) -> bool {
        self.0.upgrade().is_some_and(|live| live.check(Refresh::Config))
    }

    /// False once the registry is gone.
    pub fn alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// The tool registry.
pub struct Registry {
    live: Arc<Live>,
    chain: Vec<Arc<dyn DynMiddleware>>,
    endpoint: SandboxEndpoint,
    services: Services,
}

impl Registry {
    /// A builder with `config` (timeouts, output cap, recovery).
    pub fn builder(config: CoreConfig) -> RegistryBuilder {
        RegistryBuilder {
            config,
            conditions: Arc::new(Conditions::default),
            provider: Arc::new(LocalProvider),
            tools: Vec::new(),
            sources: Vec::new(),
            layers: Vec::new(),
            services: Services::default(),
            spill_hint: middleware::truncate::DEFAULT_SPILL_HINT,
            tools_only: false,
            project_root: None,
            offer: None,
        }
    }

    /// The service of type `T` a tool crate installed ([`RegistryBuilder::service`]).
    pub fn service<T: Clone + 'static>(&self) -> Option<T> {
        self.services.get()
    }

    /// The tools `mode` offers, in listing order (built-ins first, then each source's). Sources
    /// that watch the project look again first (throttled), so a new preview shows up here.
    pub fn list(&self, mode: Mode) -> Vec<ToolSpec> {
        self.recheck();
        self.offered(mode)
    }

    /// Let the sources that watch the project look again (throttled by them: at most about once
    /// a second), as before a listing. True when the list changed. For front ends that cache the
    /// list by [`Registry::version`].
    pub fn recheck(&self) -> bool {
        self.live.check(Refresh::Listing)
    }

    /// [`Registry::list`] without asking the sources to look again.
    fn offered(&self, mode: Mode) -> Vec<ToolSpec> {
        self.live
            .snapshot()
            .tools
            .iter()
            .map(|tool| tool.spec())
            .filter(|spec| spec.offered(mode))
            .cloned()
            .collect()
    }

    /// The tool called `name` (canonical or alias), whatever the mode.
    pub fn get(&self, name: &str) -> Option<Arc<dyn DynTool>> {
        self.live.snapshot().get(name).cloned()
    }

    /// True when a tool answers to `name` (canonical or alias), whatever the mode.
    pub fn contains(&self, name: &str) -> bool {
        self.live.snapshot().get(name).is_some()
    }

    /// Re-read what the sources depend on (configuration, environment, stored secrets) and
    /// rebuild the list. Front ends call it when the configuration changes. True when the list
    /// changed; subscribers hear of it either way.
    pub fn refresh(&self) -> bool {
        self.live.check(Refresh::Config)
    }

    /// A handle that refreshes this registry from elsewhere (a secret store's change hook) without
    /// keeping it alive.
    pub fn refresher(&self) -> Refresher {
        let live: Weak<Live> = Arc::downgrade(&self.live);
        Refresher(live)
    }

    /// The list's version: it grows by one each time the tool list changes.
    pub fn version(&self) -> u64 {
        *self.live.version.borrow()
    }

    /// A receiver that sees the version each time the tool list changes: an MCP server sends
    /// `notifications/tools/list_changed`, a session API emits `tools_changed`.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.live.version.subscribe()
    }

    /// Run `call` in `session`: [`prepare`](Registry::prepare) it, then [`run`](Registry::run) it
    /// through the chain. Tool failures come back as results with `is_error`; only a broken
    /// runtime is an `Err`.
    pub async fn dispatch(
        &self,
        session: &Session,
        call: ToolCall,
    ) -> Result<ToolOutput, DispatchError> {
        self.dispatch_with(session, call, CallOptions::default()).await
    }

    /// [`Registry::dispatch`] with what a front end adds to one call: where its progress reports
    /// go, and a token that cancels this call alone (MCP's `notifications/cancelled`).
    pub async fn dispatch_with(
        &self,
        session: &Session,
        call: ToolCall,
        options: CallOptions,
    ) -> Result<ToolOutput, DispatchError> {
        let prepared = self.prepare(session, call);
        self.run(session, prepared, options).await
    }

    /// Prepare `call` once, as it arrives: resolve the name, check the mode, parse the arguments
    /// into the tool's typed `Args` and ask the tool what this call asks, changes and may reuse.
    /// A call that cannot run (an unknown name, a tool of the other mode, arguments that do not
    /// parse) is answered here, before anybody is asked about it. The agent loop reads the
    /// prepared calls' policies to decide which run together; [`Registry::run`] runs one.
    pub fn prepare(&self, session: &Session, call: ToolCall) -> PreparedCall {
        let Some(tool) = self.resolve(&call.name) else {
            return PreparedCall::answer(ToolOutput::error(
                self.unknown(&call.name, session.mode()),
            ));
        };
        let name = tool.spec().name.as_str();
        let mode = session.mode();
        if !tool.spec().offered(mode) {
            return PreparedCall::answer(ToolOutput::error(match mode {
                Mode::Plan => format!(
                    "{name} is not available in plan mode, which is read-only. Finish the plan and \
                     {} to get the build tools back.",
                    self.leave_plan_mode()
                ),
                Mode::Build => format!("{name} is only available in plan mode."),
            }));
        }
        let prepared = match tool.prepare(&call.args) {
            Ok(prepared) => prepared,
            // The message may quote what the model sent: redacted like every result.
            Err(err) => {
                return PreparedCall::answer(ToolOutput::error(
                    crate::redact::text(&err.to_string()).into_owned(),
                ));
            }
        };
        let call = ToolCall { name: name.to_owned(), ..call };
        PreparedCall(Ready::Run { tool, call, prepared })
    }

    /// Run a call [`prepare`](Registry::prepare)d in `session` through the chain. Tool failures
    /// come back as results with `is_error`; only a broken runtime is an `Err`.
    pub async fn run(
        &self,
        session: &Session,
        prepared: PreparedCall,
        options: CallOptions,
    ) -> Result<ToolOutput, DispatchError> {
        let (tool, call, prepared) = match prepared.0 {
            Ready::Answer(output) => return Ok(with_notices(session, output)),
            Ready::Run { tool, call, prepared } => (tool, call, prepared),
        };
        let ctx = Context::new(session, call.id.as_str(), call.turn.clone())
            .with_progress(options.progress);
        let token = ctx.cancel_token().clone();
        let span = crate::telemetry::tool_span(session, &call);
        let started = std::time::Instant::now();
        let watch = ctx.clone();
        let req = Request { ctx, call: &call, tool: tool.as_ref(), prepared: &prepared };
        let run = tracing::Instrument::instrument(
            Next::new(&self.chain, &self.endpoint).run(req),
            span.clone(),
        );
        let result = match options.cancel {
            None => run.await,
            Some(cancel) => {
                // Cancelling the request fires the call's own token; the chain then answers
                // "aborted" with whatever the tool had.
                tokio::pin!(run);
                tokio::select! {
                    biased;
                    result = &mut run => result,
                    () = cancel.cancelled() => {
                        token.cancel();
                        run.await
                    }
                }
            }
        };
        let output = result.as_ref().ok();
        let outcome =
            crate::telemetry::tool_outcome(output, watch.was_denied(), token.is_cancelled());
        crate::telemetry::record_tool_end(&span, output, outcome, started.elapsed());
        drop(span);
        if prepared.policy().mutates {
            // The call may have changed the project (a new index.html): sources look again.
            self.live.check(Refresh::Mutation);
        }
        match result {
            Ok(output) => Ok(with_notices(session, output)),
            Err(ChainError::Fatal(message)) => Err(DispatchError::Fatal(message)),
            Err(ChainError::SandboxGone(reason)) => {
                Err(DispatchError::Fatal(format!("the sandbox is gone: {reason}")))
            }
        }
    }

    /// The tool answering to `name`; when none does, the sources look again first (a preview
    /// tool called right after the project gained its `index.html`).
    fn resolve(&self, name: &str) -> Option<Arc<dyn DynTool>> {
        self.get(name).or_else(|| {
            self.recheck();
            self.get(name)
        })
    }

    /// How the model leaves plan mode: by calling the tool only plan mode offers.
    fn leave_plan_mode(&self) -> String {
        self.live
            .snapshot()
            .tools
            .iter()
            .map(|tool| tool.spec())
            .find(|spec| spec.policy.modes == Modes::PLAN)
            .map_or_else(|| "leave plan mode".to_owned(), |spec| format!("call {}", spec.name))
    }

    fn unknown(&self, name: &str, mode: Mode) -> String {
        let specs = self.offered(mode);
        let offered: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        let lower = name.to_ascii_lowercase();
        let mut close: Vec<(f64, &str)> = specs
            .iter()
            .map(|spec| {
                let candidate = &spec.name.as_str();
                // Compare with the whole name, its first word and its aliases: `reed` is close
                // to `read`, which is read_file.
                let stem = candidate.split('_').next().unwrap_or(candidate);
                let aliases = spec.policy.aliases.iter().copied();
                let score = std::iter::once(*candidate)
                    .chain(std::iter::once(stem))
                    .chain(aliases)
                    .map(|n| strsim::jaro_winkler(&lower, n))
                    .fold(0.0, f64::max);
                let bonus =
                    if candidate.contains(&lower) || lower.contains(candidate) { 0.2 } else { 0.0 };
                (score + bonus, *candidate)
            })
            .filter(|(score, _)| *score >= 0.8)
            .collect();
        close.sort_by(|a, b| b.0.total_cmp(&a.0));
        let close: Vec<&str> = close.into_iter().take(3).map(|(_, n)| n).collect();
        // The name is the caller's text: it may hold a secret, and this answer passes no
        // redaction step of the chain.
        let name = crate::redact::text(name);
        if close.is_empty() {
            format!("Unknown tool `{name}`. Available tools: {}.", offered.join(", "))
        } else {
            format!(
                "Unknown tool `{name}`. Did you mean {}? Available tools: {}.",
                close.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" or "),
                offered.join(", ")
            )
        }
    }
}

/// Move the session's queued notices (finished background processes, …) onto a result.
fn with_notices(session: &Session, mut output: ToolOutput) -> ToolOutput {
    output.notices.extend(session.take_notices());
    output
}

struct SandboxEndpoint {
    provider: Arc<dyn SandboxProvider>,
}

impl Endpoint for SandboxEndpoint {
    fn invoke<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ChainError>> {
        Box::pin(async move {
            let sandbox = match self.provider.get(req.ctx.session().project()).await {
                Ok(sandbox) => sandbox,
                Err(err) => return ToolError::into_chain(Err(err)),
            };
            // Converted here, innermost, so that every middleware sees model errors as results.
            ToolError::into_chain(
                sandbox.run(req.tool, req.ctx, &req.call.args, req.prepared).await,
            )
        })
    }
}

/// A call [`Registry::prepare`]d: ready to run, or already answered.
pub struct PreparedCall(Ready);

enum Ready {
    /// Answered without running a tool (unknown name, wrong mode, bad arguments).
    Answer(ToolOutput),
    /// The tool, the call with its canonical name, and its parsed arguments.
    Run { tool: Arc<dyn DynTool>, call: ToolCall, prepared: Prepared },
}

impl PreparedCall {
    fn answer(output: ToolOutput) -> Self {
        Self(Ready::Answer(output))
    }

    /// What the tool says of this call; an answered call asks nothing and changes nothing.
    pub fn policy(&self) -> CallPolicy {
        match &self.0 {
            Ready::Answer(_) => CallPolicy::ANSWER,
            Ready::Run { prepared, .. } => prepared.policy(),
        }
    }

    /// The tool's canonical name, when the call resolved to one.
    pub fn tool_name(&self) -> Option<&str> {
        match &self.0 {
            Ready::Answer(_) => None,
            Ready::Run { call, .. } => Some(&call.name),
        }
    }
}
