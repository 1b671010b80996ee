//! The `Tool` trait (typed arguments, derived schema) and its object-safe form for the registry.

use std::borrow::Cow;
use std::future::Future;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::approval::Review;
use crate::{
    Annotations, BoxFuture, CallPolicy, Context, Mode, Policy, Prepared, ToolError, ToolOutput,
    args, schema_for,
};

/// A tool as data: what the model and the front ends see.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Canonical name.
    pub name: String,
    /// The description the model reads (from the `.md` file beside the tool).
    pub description: String,
    /// JSON schema of the arguments, derived from `Args`.
    pub input_schema: Value,
    /// JSON schema of the structured output, when the tool has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// MCP annotations.
    pub annotations: Annotations,
    /// Under `approval = "ask"`, calls wait for the user's yes.
    pub needs_approval: bool,
    /// Identical calls within a turn may be served from the dedup cache.
    pub cacheable: bool,
    /// Modes, aliases, sub-agent use, label, family: what the registry and front ends decide by.
    pub policy: Policy,
}

impl ToolSpec {
    /// True when `mode` offers the tool.
    pub fn offered(&self, mode: Mode) -> bool {
        self.policy.offered(mode)
    }

    /// The tool's own policy, as the spec says (every call alike): what a call of a tool without
    /// a per-call policy of its own asks, changes and may reuse.
    pub fn call_policy(&self) -> CallPolicy {
        CallPolicy {
            needs_approval: self.needs_approval,
            mutates: !self.annotations.read_only,
            cacheable: self.cacheable,
            outlasts: false,
        }
    }

    /// The main argument of a call with `args`, for a terminal line (see [`crate::Label`]).
    pub fn label_text(&self, args: &Value) -> Option<String> {
        self.policy.label.text(args)
    }
}

/// A tool: a small type with typed arguments.
///
/// Arguments are deserialized once into `Args`, when the call arrives ([`DynTool::prepare`]);
/// the tool's per-call policy, its review for the approval and the call itself read the parsed
/// arguments. The schema the model sees is derived from `Args` by [`schema_for`].
pub trait Tool: Send + Sync + 'static {
    /// The typed arguments (use `#[serde(deny_unknown_fields)]` so that typos are reported).
    type Args: DeserializeOwned + JsonSchema + Send + Sync + 'static;

    /// Canonical name.
    fn name(&self) -> &'static str;

    /// The description the model reads; usually `include_str!("<tool>.md")`.
    fn description(&self) -> Cow<'static, str>;

    /// MCP annotations.
    fn annotations(&self) -> Annotations;

    /// Schema of the structured output, if the tool returns one (derive it with
    /// [`output_schema_for`](crate::output_schema_for)). A tool that declares one returns a
    /// structured result on every success, and that result is the complete result: everything
    /// its text says, in fields (clients such as Claude Code and Codex show the model only the
    /// structured result when there is one). A tool whose result has no natural structure
    /// returns text only and declares no schema.
    fn output_schema(&self) -> Option<Value> {
        None
    }

    /// Whether calls need the user's yes under `approval = "ask"`. By default: every tool that is
    /// not read-only. Session tools that only change the conversation's state say no.
    fn needs_approval(&self) -> bool {
        !self.annotations().read_only
    }

    /// Whether identical calls within a turn may be answered from the dedup cache. By default:
    /// every read-only tool. A read-only tool whose answer changes by itself (a process's new
    /// output, the process list) says no.
    fn cacheable(&self) -> bool {
        self.annotations().read_only
    }

    /// Modes, aliases, sub-agent use, label and family. By default derived from the annotations
    /// ([`Policy::from_annotations`]): read-only tools in plan and build mode, others in build
    /// mode only. A tool overrides what differs, e.g. `Policy::from_annotations(a).alias("read")`.
    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations())
    }

    /// What this call asks, changes and may reuse, from its parsed arguments. By default the
    /// tool's ([`needs_approval`](Self::needs_approval), not read-only,
    /// [`cacheable`](Self::cacheable)); a tool whose calls differ overrides it (connector_call's
    /// GET needs no approval, its POST does).
    fn call_policy(&self, args: &Self::Args) -> CallPolicy {
        let _ = args;
        CallPolicy {
            needs_approval: self.needs_approval(),
            mutates: !self.annotations().read_only,
            cacheable: self.cacheable(),
            outlasts: false,
        }
    }

    /// Whether this call may outlast a client's request timeout (about a minute), so that a
    /// front end may run it as a task ([`CallPolicy::outlasts`]). By default no.
    fn outlasts(&self, args: &Self::Args) -> bool {
        let _ = args;
        false
    }

    /// What the user should see before approving this call, beyond the one-line summary made
    /// from the arguments: a better summary, the resolved argv and the program's origin, the
    /// target, a write's content or diff (see [`Review`]). Computed only when the call is asked
    /// about, before asking; it must not change anything. An error refuses the call before
    /// anybody is asked (a write outside the project, a database that cannot be reached). By
    /// default nothing beyond the summary.
    fn review(
        &self,
        ctx: &Context,
        args: &Self::Args,
    ) -> impl Future<Output = Result<Review, ToolError>> + Send {
        let _ = (ctx, args);
        async { Ok(Review::default()) }
    }

    /// Run the tool. `ctx` carries the root, the session, and the call's cancellation token.
    fn call(
        &self,
        ctx: Context,
        args: Self::Args,
    ) -> impl Future<Output = Result<ToolOutput, ToolError>> + Send;
}

/// The object-safe form of [`Tool`] that the registry stores.
pub trait DynTool: Send + Sync {
    /// The tool's spec (computed once at registration).
    fn spec(&self) -> &ToolSpec;

    /// Parse `args` once, when the call arrives, and say what this call asks, changes and may
    /// reuse. Malformed arguments give [`ToolError::RespondToModel`] naming the field and the
    /// expected type, so that a call that cannot run is refused before anybody is asked about
    /// it. By default (a tool proxied from elsewhere, taking raw JSON) nothing is parsed and the
    /// policy is the spec's.
    fn prepare(&self, args: &Value) -> Result<Prepared, ToolError> {
        let _ = args;
        Ok(Prepared::untyped(self.spec().call_policy()))
    }

    /// Run a prepared call. `args` are the raw arguments `prepared` was made from.
    fn run<'a>(
        &'a self,
        ctx: Context,
        args: &'a Value,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;

    /// [`Tool::review`] of a prepared call. By default nothing beyond the summary.
    fn review<'a>(
        &'a self,
        ctx: &'a Context,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<Review, ToolError>> {
        let _ = (ctx, prepared);
        Box::pin(async { Ok(Review::default()) })
    }

    /// Prepare and run `args` in one step (a call outside the registry's chain: a test, a tool
    /// that runs on the host of a proxy sandbox).
    fn call_json(&self, ctx: Context, args: Value) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let prepared = self.prepare(&args)?;
            self.run(ctx, &args, &prepared).await
        })
    }
}

/// `tool` in the form the registry stores, for a [`ToolSource`](crate::ToolSource) that offers
/// typed tools.
pub fn erase<T: Tool>(tool: T) -> std::sync::Arc<dyn DynTool> {
    std::sync::Arc::new(Erased::new(tool))
}

pub(crate) struct Erased<T: Tool> {
    tool: T,
    spec: ToolSpec,
}

impl<T: Tool> Erased<T> {
    pub(crate) fn new(tool: T) -> Self {
        let spec = ToolSpec {
            name: tool.name().to_owned(),
            description: tool.description().into_owned(),
            input_schema: schema_for::<T::Args>(),
            output_schema: tool.output_schema().map(crate::schema::with_full_output),
            annotations: tool.annotations(),
            needs_approval: tool.needs_approval(),
            cacheable: tool.cacheable(),
            policy: tool.policy(),
        };
        Self { tool, spec }
    }

    fn parse(&self, args: &Value) -> Result<T::Args, ToolError> {
        args::parse_with_schema::<T::Args>(&self.spec.name, args.clone(), &self.spec.input_schema)
    }
}

impl<T: Tool> DynTool for Erased<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn prepare(&self, args: &Value) -> Result<Prepared, ToolError> {
        let typed = self.parse(args)?;
        let policy =
            CallPolicy { outlasts: self.tool.outlasts(&typed), ..self.tool.call_policy(&typed) };
        Ok(Prepared::typed(policy, typed))
    }

    fn run<'a>(
        &'a self,
        ctx: Context,
        args: &'a Value,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            // Taken as parsed at dispatch; parsed again only when a step runs the call twice.
            let typed = match prepared.take_args::<T::Args>() {
                Some(typed) => typed,
                None => self.parse(args)?,
            };
            self.tool.call(ctx, typed).await
        })
    }

    fn review<'a>(
        &'a self,
        ctx: &'a Context,
        prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<Review, ToolError>> {
        Box::pin(async move {
            match prepared.args::<T::Args>() {
                Some(typed) => self.tool.review(ctx, &typed).await,
                None => Ok(Review::default()),
            }
        })
    }
}
