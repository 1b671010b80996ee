//! The `Tool` trait (typed arguments, derived schema) and its object-safe form for the registry.

use std::borrow::Cow;
use std::future::Future;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    Annotations, BoxFuture, Context, Mode, Policy, ToolError, ToolOutput, args, schema_for,
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

    /// The main argument of a call with `args`, for a terminal line (see [`crate::Label`]).
    pub fn label_text(&self, args: &Value) -> Option<String> {
        self.policy.label.text(args)
    }
}

/// A tool: a small type with typed arguments.
///
/// Arguments are deserialized once into `Args`; nothing downstream sees raw JSON. The schema the
/// model sees is derived from `Args` by [`schema_for`].
pub trait Tool: Send + Sync + 'static {
    /// The typed arguments (use `#[serde(deny_unknown_fields)]` so that typos are reported).
    type Args: DeserializeOwned + JsonSchema + Send + 'static;

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

    /// What the user should see, beyond the one-line summary, before approving this call: the
    /// resolved argv and the program's origin, the target, a write's content or diff (see
    /// [`ApprovalRequest::details`](crate::approval::ApprovalRequest::details)). Computed only
    /// when the call is asked about, before asking; it must not change anything. `None` (the
    /// default) when the arguments say it all.
    fn approval_details(
        &self,
        ctx: &Context,
        args: &Self::Args,
    ) -> impl Future<Output = Option<String>> + Send {
        let _ = (ctx, args);
        async { None }
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

    /// Parse `args` into the tool's `Args` and run it. Malformed arguments give
    /// [`ToolError::RespondToModel`] naming the field and the expected type.
    fn call_json(&self, ctx: Context, args: Value) -> BoxFuture<'_, Result<ToolOutput, ToolError>>;

    /// Parse `args` and compute [`Tool::approval_details`]. Malformed arguments give the same
    /// error [`call_json`](Self::call_json) would, so that a call that cannot run is refused
    /// before anybody is asked about it. By default (a tool proxied from elsewhere) nothing more
    /// than the summary.
    fn approval_details_json<'a>(
        &'a self,
        ctx: &'a Context,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Option<String>, ToolError>> {
        let _ = (ctx, args);
        Box::pin(async { Ok(None) })
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
}

impl<T: Tool> DynTool for Erased<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call_json(&self, ctx: Context, args: Value) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let typed =
                args::parse_with_schema::<T::Args>(&self.spec.name, args, &self.spec.input_schema)?;
            self.tool.call(ctx, typed).await
        })
    }

    fn approval_details_json<'a>(
        &'a self,
        ctx: &'a Context,
        args: &'a Value,
    ) -> BoxFuture<'a, Result<Option<String>, ToolError>> {
        Box::pin(async move {
            let typed = args::parse_with_schema::<T::Args>(
                &self.spec.name,
                args.clone(),
                &self.spec.input_schema,
            )?;
            Ok(self.tool.approval_details(ctx, &typed).await)
        })
    }
}
