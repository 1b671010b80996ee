//! spawn_subagent: a nested loop with the read-only tools and its own step budget, returning its
//! final text.
//!
//! The tool needs a model and the registry, which it cannot hold itself (it is inside the registry,
//! and the model may differ per session: the host's configured provider, or an MCP client's
//! sampling). It reads them from the session's [`SubagentEnv`] extension, which the host installs
//! on each of its sessions when it has a provider (and which an MCP server installs on a
//! connection whose client offers sampling, with a
//! [`SamplingProvider`](crate::provider_sampling::SamplingProvider)). Registration is the front
//! end's choice: [`register`] adds the tool only when `has_model` is true (the host has a
//! provider, or the MCP server will install sampling); a session that has the tool but no
//! `SubagentEnv` gets an error result that says why, never a hang.

use std::borrow::Cow;
use std::sync::Arc;

use hands_core::{
    Annotations, BoxFuture, Context, Mode, Registry, RegistryBuilder, Tool, ToolError, ToolOutput,
};
use hands_core::{Family, Label, Policy};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::model::{Message, Provider};
use crate::turn::{EndReason, Limits, Observer, ToolScope, ToolUse, Turn};

/// What spawn_subagent needs from the session: the model, the tools, the limits.
#[derive(Clone)]
pub struct SubagentEnv {
    /// The model the sub-agent talks to.
    pub provider: Arc<dyn Provider>,
    /// The registry whose read-only tools it gets.
    pub registry: Arc<Registry>,
    /// Its limits: `max_steps` is `[agent] subagent_max_steps`.
    pub limits: Limits,
    /// Whose model `provider` is, said in every result.
    pub source: ModelSource,
}

/// Whose model a sub-agent runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// The model configured for hands (`[model]`).
    Configured,
    /// The MCP client's model, through sampling (a client without a configured model here).
    ClientSampling,
}

impl ModelSource {
    /// The line a result ends with.
    fn line(self) -> &'static str {
        match self {
            Self::Configured => "[sub-agent model: the one configured for hands]",
            Self::ClientSampling => "[sub-agent model: the MCP client's, through sampling]",
        }
    }
}

impl SubagentEnv {
    /// Install on `session` (replacing any previous one).
    pub fn install(self, session: &hands_core::Session) {
        session.insert_extension(self);
    }
}

/// Register spawn_subagent when `has_model` (the front end has a provider, or will install one per
/// session through [`SubagentEnv`]).
pub fn register(builder: RegistryBuilder, has_model: bool) -> RegistryBuilder {
    if has_model { builder.tool(SpawnSubagent) } else { builder }
}

/// The tools a sub-agent gets: the plan-mode tools of `registry` whose policy allows sub-agents
/// (not spawn_subagent itself, ask_user or the mode switches).
pub fn tools(registry: &Registry) -> Vec<String> {
    registry
        .list(Mode::Plan)
        .into_iter()
        .filter(|spec| spec.policy.subagent)
        .map(|spec| spec.name)
        .collect()
}

/// The `spawn_subagent` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct SpawnSubagent;

/// spawn_subagent's arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpawnArgs {
    /// Everything the sub-agent should know: what to find out, where to look, what to report.
    #[serde(alias = "task")]
    pub prompt: String,
    /// A few words naming the job, for the user's view of the call (e.g. "find the DB calls").
    #[serde(default)]
    pub description: Option<String>,
}

fn system_prompt(root: &std::path::Path, tools: &[String], max_steps: u32) -> String {
    format!(
        "You are a research sub-agent of hands, a coding agent. Another agent gave you one task. \
         Investigate it in the project at {} with the read-only tools you have ({}), then answer \
         with a concise, self-contained report: what you found, with file paths and line numbers, \
         and short excerpts where they help. You cannot change files, run commands or ask the \
         user. You have at most {max_steps} steps (model calls); calls in one step run in \
         parallel, so batch independent reads. Your final message (without tool calls) is the \
         report.",
        root.display(),
        tools.join(", ")
    )
}

/// Reports each step and call of the sub-agent as progress of the spawn_subagent call.
struct Progress<'a> {
    ctx: &'a Context,
    max_steps: u32,
}

impl Observer for Progress<'_> {
    fn step(&self, step: u32) -> BoxFuture<'_, ()> {
        self.ctx.progress(f64::from(step), Some(f64::from(self.max_steps)), None);
        Box::pin(std::future::ready(()))
    }

    fn call_started<'a>(&'a self, call: &'a ToolUse) -> BoxFuture<'a, ()> {
        if self.ctx.wants_progress() {
            let summary = hands_core::approval::summary(&call.name, &call.input);
            self.ctx.progress(0.0, None, Some(format!("sub-agent: {summary}")));
        }
        Box::pin(std::future::ready(()))
    }
}

impl Tool for SpawnSubagent {
    type Args = SpawnArgs;

    /// It waits for work that can take minutes.
    fn outlasts(&self, _args: &Self::Args) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "spawn_subagent"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("spawn_subagent.md"))
    }

    fn annotations(&self) -> Annotations {
        // It reads the project and talks to the model; it changes nothing.
        Annotations { read_only: true, destructive: false, idempotent: false, open_world: true }
    }

    fn policy(&self) -> Policy {
        // A sub-agent cannot start another.
        Policy::from_annotations(self.annotations())
            .subagent(false)
            .label(Label::FirstOf { keys: &["description", "prompt"] })
            .family(Family::Delegation)
            .on_host()
            .needs_model()
            // A sub-agent runs up to `[agent] subagent_max_steps` model calls and their tools.
            .timeout_ms(900_000)
    }

    fn needs_approval(&self) -> bool {
        false
    }

    fn cacheable(&self) -> bool {
        false
    }

    async fn call(&self, ctx: Context, args: SpawnArgs) -> Result<ToolOutput, ToolError> {
        if args.prompt.trim().is_empty() {
            return Err(ToolError::model(
                "`prompt` is empty: describe what the sub-agent should find out and report.",
            ));
        }
        let Some(env) = ctx.session().get_extension::<SubagentEnv>() else {
            return Err(ToolError::model(
                "spawn_subagent needs a model, and this session has none (no [model] is configured, \
                 or the MCP client does not offer sampling). Do the research yourself with \
                 the read-only tools.",
            ));
        };
        let names = tools(&env.registry);
        let root = ctx.root().to_owned();
        let max_steps = env.limits.max_steps;
        let prompt = move |_: Mode| system_prompt(&root, &names, max_steps);
        let observer = Progress { ctx: &ctx, max_steps };
        let turn_id = ctx.turn().unwrap_or(ctx.call_id()).to_owned();
        let turn = Turn {
            provider: env.provider.as_ref(),
            registry: &env.registry,
            session: ctx.session(),
            turn_id: &turn_id,
            cancel: ctx.cancel_token().clone(),
            limits: env.limits,
            prompt: &prompt,
            scope: ToolScope::Only(tools(&env.registry)),
            call_prefix: Some(format!("{}.", ctx.call_id())),
            observer: &observer,
            checkpoints: None,
        };
        let mut messages = Vec::new();
        let outcome = turn.run(&mut messages, Message::user(args.prompt)).await;
        let text = outcome.text.unwrap_or_default();
        let source = env.source.line();
        let said = |output: ToolOutput| output.with_text(source);
        let result = match outcome.reason {
            EndReason::Completed if text.trim().is_empty() => Ok(ToolOutput::text(
                "The sub-agent finished without a report. Give it a more specific task, or do the \
                 research yourself.",
            )),
            EndReason::Completed => Ok(ToolOutput::text(text)),
            EndReason::MaxSteps => Ok(ToolOutput::text(format!(
                "{text}\n\n[The sub-agent used all its {} steps before it finished; this report may \
                 be incomplete. Narrow the task, or continue the research yourself.]",
                outcome.steps
            ))),
            // The timeout middleware answers "aborted"/"timed out" and keeps this text.
            EndReason::Aborted => Ok(ToolOutput::text(text)),
            EndReason::Error => Err(ToolError::model(format!(
                "The sub-agent failed: {}\n{source}",
                outcome.error.unwrap_or_default()
            ))),
        };
        result.map(said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_example_parses() {
        let md = include_str!("spawn_subagent.md");
        let example = md.split("```json\n").nth(1).and_then(|s| s.split("```").next()).unwrap();
        let args: SpawnArgs = serde_json::from_str(example).unwrap();
        assert!(!args.prompt.is_empty());
    }
}
