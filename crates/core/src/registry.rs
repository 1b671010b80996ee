//! The registry: the list of tools, their aliases, which ones each mode offers, and `dispatch`, which
//! resolves a call and runs it through the middleware chain into the project's sandbox.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use crate::middleware::{self, Endpoint, Middleware, Next, Request};
use crate::tool::Erased;
use crate::{
    BoxFuture, Context, CoreConfig, DispatchError, DynTool, LocalProvider, Mode, SandboxProvider,
    Session, Tool, ToolCall, ToolError, ToolOutput, ToolSpec,
};

/// The tools plan mode offers (TOOLS.md); everything else is build-only.
pub const PLAN_MODE_TOOLS: &[&str] = &[
    "read_file",
    "list_files",
    "glob",
    "grep",
    "web_search",
    "web_scrape",
    "db_schema",
    "read_runtime_errors",
    "mcp_list",
    "mcp_call",
    "spawn_subagent",
    "use_skill",
    "ask_user",
    "exit_plan_mode",
];

/// Tools never offered in build mode.
const BUILD_EXCLUDED: &[&str] = &["exit_plan_mode"];

/// Short names of the second source, accepted in calls and never listed.
const ALIASES: &[(&str, &str)] =
    &[("read", "read_file"), ("write", "write_file"), ("edit", "edit_file")];

/// What conditional registration can look at: the merged configuration and the environment.
#[derive(Debug, Clone, Default)]
pub struct Conditions {
    /// The merged configuration, as JSON.
    pub config: Value,
    /// Environment variables.
    pub env: BTreeMap<String, String>,
}

impl Conditions {
    /// From `config` and this process's environment.
    pub fn from_process(config: Value) -> Self {
        Self { config, env: std::env::vars().collect() }
    }

    /// True when the variable is set and not empty.
    pub fn has_env(&self, name: &str) -> bool {
        self.env.get(name).is_some_and(|v| !v.is_empty())
    }
}

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
    conditions: Conditions,
    provider: Arc<dyn SandboxProvider>,
    tools: Vec<Arc<dyn DynTool>>,
}

impl RegistryBuilder {
    /// Register `tool`.
    #[must_use]
    pub fn tool<T: Tool>(mut self, tool: T) -> Self {
        self.tools.push(Arc::new(Erased::new(tool)));
        self
    }

    /// Register `tool` only when `predicate` holds for the configuration and environment.
    #[must_use]
    pub fn tool_if<T: Tool>(self, predicate: impl FnOnce(&Conditions) -> bool, tool: T) -> Self {
        if predicate(&self.conditions) { self.tool(tool) } else { self }
    }

    /// Register an already-erased tool (MCP proxies and other dynamic tools).
    #[must_use]
    pub fn dyn_tool(mut self, tool: Arc<dyn DynTool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// What conditional registration sees.
    #[must_use]
    pub fn conditions(mut self, conditions: Conditions) -> Self {
        self.conditions = conditions;
        self
    }

    /// Where tools run (default: [`LocalProvider`]).
    #[must_use]
    pub fn sandbox(mut self, provider: Arc<dyn SandboxProvider>) -> Self {
        self.provider = provider;
        self
    }

    /// Finish. A later tool with the same name replaces an earlier one.
    pub fn build(self) -> Registry {
        let chain = middleware::standard(&self.config, Arc::clone(&self.provider));
        let mut order = Vec::new();
        let mut tools = HashMap::new();
        for tool in self.tools {
            let name = tool.spec().name.clone();
            if tools.insert(name.clone(), tool).is_none() {
                order.push(name);
            }
        }
        Registry { order, tools, chain, endpoint: SandboxEndpoint { provider: self.provider } }
    }
}

/// The tool registry.
pub struct Registry {
    order: Vec<String>,
    tools: HashMap<String, Arc<dyn DynTool>>,
    chain: Vec<Arc<dyn Middleware>>,
    endpoint: SandboxEndpoint,
}

impl Registry {
    /// A builder with `config` (timeouts, output cap, recovery).
    pub fn builder(config: CoreConfig) -> RegistryBuilder {
        RegistryBuilder {
            config,
            conditions: Conditions::default(),
            provider: Arc::new(LocalProvider),
            tools: Vec::new(),
        }
    }

    /// True when `mode` offers `name` (a canonical name).
    pub fn offered(name: &str, mode: Mode) -> bool {
        match mode {
            Mode::Build => !BUILD_EXCLUDED.contains(&name),
            Mode::Plan => PLAN_MODE_TOOLS.contains(&name),
        }
    }

    /// The tools `mode` offers, in registration order.
    pub fn list(&self, mode: Mode) -> Vec<&ToolSpec> {
        self.order
            .iter()
            .filter(|name| Self::offered(name, mode))
            .filter_map(|name| self.tools.get(name.as_str()))
            .map(|tool| tool.spec())
            .collect()
    }

    /// The tool called `name` (canonical or alias), whatever the mode.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(canonical(name))
    }

    /// Run `call` in `session`: resolve the name, check the mode, and pass it through the chain.
    /// Tool failures come back as results with `is_error`; only a broken runtime is an `Err`.
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
        let name = canonical(&call.name);
        let Some(tool) = self.tools.get(name) else {
            return Ok(ToolOutput::error(self.unknown(&call.name, session.mode())));
        };
        let mode = session.mode();
        if !Self::offered(name, mode) {
            return Ok(ToolOutput::error(match mode {
                Mode::Plan => format!(
                    "{name} is not available in plan mode, which is read-only. Finish the plan and \
                     call exit_plan_mode to get the build tools back."
                ),
                Mode::Build => format!("{name} is only available in plan mode."),
            }));
        }
        let call = ToolCall { name: name.to_owned(), ..call };
        let ctx = Context::new(session, call.id.clone(), call.turn.clone())
            .with_progress(options.progress);
        let token = ctx.cancel_token().clone();
        let req = Request { ctx, call: &call, tool: tool.as_ref() };
        let run = Next::new(&self.chain, &self.endpoint).run(req);
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
        match result {
            Ok(output) => Ok(with_notices(session, output)),
            Err(ToolError::RespondToModel(message)) => Ok(ToolOutput::error(message)),
            Err(ToolError::Fatal(message)) => Err(DispatchError::Fatal(message)),
            Err(ToolError::SandboxGone(reason)) => {
                Err(DispatchError::Fatal(format!("the sandbox is gone: {reason}")))
            }
        }
    }

    fn unknown(&self, name: &str, mode: Mode) -> String {
        let offered: Vec<&str> =
            self.list(mode).into_iter().map(|spec| spec.name.as_str()).collect();
        let lower = name.to_ascii_lowercase();
        let mut close: Vec<(f64, &str)> = offered
            .iter()
            .map(|candidate| {
                // Compare with the whole name, its first word and its aliases: `reed` is close
                // to `read`, which is read_file.
                let stem = candidate.split('_').next().unwrap_or(candidate);
                let aliases = ALIASES.iter().filter(|(_, c)| c == candidate).map(|(a, _)| *a);
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

/// Append the session's queued notices (finished background processes, …) to a result.
fn with_notices(session: &Session, mut output: ToolOutput) -> ToolOutput {
    for notice in session.take_notices() {
        output = output.with_text(format!("[notice] {notice}"));
    }
    output
}

fn canonical(name: &str) -> &str {
    ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, canonical)| canonical)
}

struct SandboxEndpoint {
    provider: Arc<dyn SandboxProvider>,
}

impl Endpoint for SandboxEndpoint {
    fn invoke<'a>(&'a self, req: Request<'a>) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let sandbox = self.provider.get(req.ctx.session().project()).await?;
            match sandbox.run(req.tool, req.ctx, req.call.args.clone()).await {
                // Converted here, innermost, so that every middleware sees model errors as results.
                Err(ToolError::RespondToModel(message)) => Ok(ToolOutput::error(message)),
                other => other,
            }
        })
    }
}
