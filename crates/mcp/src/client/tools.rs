//! The client's tools: one proxy per remote tool (`mcp__SERVER__TOOL`), plus `mcp_list` and
//! `mcp_call`. Remote annotations are hints from a server we do not control, so they are ignored
//! for safety: every remote tool is treated as not read-only, destructive, open-world and needing
//! approval. Only `readOnlyHint` is used, to offer the proxy in plan mode (where mcp_call already
//! reaches every remote tool).

use std::borrow::Cow;
use std::sync::Arc;

use hands_core::{
    Annotations, BoxFuture, Context, DynTool, Prepared, Tool, ToolError, ToolOutput, ToolSpec,
};
use hands_core::{Family, Modes, Policy, RegistryBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::McpClients;
use super::remote::RemoteTool;

/// The longest tool name most model APIs accept.
const MAX_NAME: usize = 64;

/// What every remote tool is taken to be, whatever it claims: its annotations are untrusted hints.
const REMOTE: Annotations =
    Annotations { read_only: false, destructive: true, idempotent: false, open_world: true };

/// The hands name of `tool` on `server`: `mcp__SERVER__TOOL`, characters outside `[A-Za-z0-9_-]`
/// replaced by `_`, at most 64 characters (a longer name is cut and given a short hash of the
/// whole name, so that two long names stay apart).
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect()
    };
    let full = format!("mcp__{}__{}", clean(server), clean(tool));
    if full.len() <= MAX_NAME {
        return full;
    }
    // FNV-1a over the original names: stable across runs and builds.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in server.bytes().chain([0]).chain(tool.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let suffix = format!("_{:08x}", hash as u32);
    format!("{}{suffix}", &full[..MAX_NAME - suffix.len()])
}

/// Register mcp_list and mcp_call (the remote tools themselves come from the live source).
pub(super) fn register_builtins(clients: &McpClients, builder: RegistryBuilder) -> RegistryBuilder {
    builder.tool(McpList { clients: clients.clone() }).tool(McpCall { clients: clients.clone() })
}

/// The proxy of `tool` on `server`, with a policy from its annotations: a tool that says it only
/// reads is offered in plan mode too; approval and caching ignore the hint.
pub(super) fn proxy(clients: &McpClients, server: &str, tool: &RemoteTool) -> Arc<dyn DynTool> {
    let spec = ToolSpec {
        name: tool_name(server, &tool.name),
        description: if tool.description.is_empty() {
            format!("Tool `{}` of MCP server `{server}`.", tool.name)
        } else {
            format!("{} (MCP server `{server}`)", tool.description)
        },
        input_schema: tool.input_schema.clone(),
        // A result cut to the size limit gets `full_output` (hands' truncation).
        output_schema: tool
            .output_schema
            .clone()
            .map(hands_core::middleware::truncate::with_full_output),
        annotations: REMOTE,
        needs_approval: true,
        cacheable: false,
        policy: Policy::from_annotations(REMOTE)
            .modes(if tool.read_only_hint { Modes::BOTH } else { Modes::BUILD })
            .family(Family::Mcp)
            .on_host(),
    };
    Arc::new(RemoteToolProxy {
        clients: clients.clone(),
        server: server.to_owned(),
        tool: tool.name.clone(),
        spec,
    })
}

/// One remote tool.
struct RemoteToolProxy {
    clients: McpClients,
    server: String,
    tool: String,
    spec: ToolSpec,
}

impl DynTool for RemoteToolProxy {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Arguments that are not an object are refused when the call arrives, before anybody is
    /// asked about it; the server checks the rest.
    fn prepare(&self, args: &Value) -> Result<Prepared, ToolError> {
        match args {
            Value::Null | Value::Object(_) => Ok(Prepared::untyped(self.spec.call_policy())),
            other => Err(not_an_object(&self.spec.name, other)),
        }
    }

    fn run<'a>(
        &'a self,
        ctx: Context,
        args: &'a Value,
        _prepared: &'a Prepared,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args = object_args(&self.spec.name, args.clone())?;
            if self.clients.server(&self.server).is_some_and(|s| !s.offers(&self.tool)) {
                return Err(ToolError::model(format!(
                    "MCP server `{}` no longer offers `{}` (it changed its tool list). Call \
                     mcp_list to see its tools now, and mcp_call to call one.",
                    self.server, self.tool
                )));
            }
            self.clients.call(&self.server, &self.tool, args, &ctx).await
        })
    }
}

/// Remote servers take an object (or nothing) as arguments.
fn object_args(tool: &str, args: Value) -> Result<Option<Map<String, Value>>, ToolError> {
    match args {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(not_an_object(tool, &other)),
    }
}

fn not_an_object(tool: &str, args: &Value) -> ToolError {
    ToolError::model(format!("{tool}: the arguments must be a JSON object, not {args}"))
}

/// `mcp_list`: the configured servers and their tools.
struct McpList {
    clients: McpClients,
}

/// Arguments of mcp_list.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Only this server (default: all).
    #[serde(default)]
    server: Option<String>,
}

/// The structured result of mcp_list: the servers, each with its tools in full.
#[derive(Debug, Serialize, JsonSchema)]
struct ServerList {
    /// The configured servers asked for.
    servers: Vec<ServerEntry>,
}

/// One server in mcp_list's result.
#[derive(Debug, Serialize, JsonSchema)]
struct ServerEntry {
    /// Its name in the configuration.
    server: String,
    /// Why it is unavailable, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The tools it lists.
    tools: Vec<RemoteToolEntry>,
}

/// One tool of a server in mcp_list's result.
#[derive(Debug, Serialize, JsonSchema)]
struct RemoteToolEntry {
    /// Its name on the server.
    name: String,
    /// The name it is called by in hands (`mcp__SERVER__TOOL`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hands_name: Option<String>,
    /// Its description, whole.
    description: String,
    /// Its input schema, as the server gives it.
    #[serde(rename = "inputSchema")]
    input_schema: Value,
    /// Its output schema, when it has one.
    #[serde(rename = "outputSchema", default, skip_serializing_if = "Option::is_none")]
    output_schema: Option<Value>,
}

impl Tool for McpList {
    type Args = ListArgs;

    fn name(&self) -> &'static str {
        "mcp_list"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("mcp_list.md"))
    }

    fn annotations(&self) -> Annotations {
        Annotations::READ_ONLY
    }

    fn policy(&self) -> Policy {
        Policy::from_annotations(self.annotations()).family(Family::Mcp).on_host()
    }

    fn output_schema(&self) -> Option<Value> {
        Some(hands_core::output_schema_for::<ServerList>())
    }

    async fn call(&self, _ctx: Context, args: ListArgs) -> Result<ToolOutput, ToolError> {
        let servers: Vec<_> = self
            .clients
            .servers()
            .iter()
            .filter(|s| args.server.as_deref().is_none_or(|name| s.name() == name))
            .collect();
        if servers.is_empty() {
            return Err(ToolError::model(format!(
                "No MCP server named `{}`. Call mcp_list without arguments to see them all.",
                args.server.unwrap_or_default()
            )));
        }
        let mut text = String::new();
        let mut structured = Vec::new();
        for server in servers {
            let listed = server.tools();
            match server.error() {
                Some(error) => {
                    text.push_str(&format!("{}: unavailable ({error})\n", server.name()));
                }
                None => text.push_str(&format!("{}: {} tools\n", server.name(), listed.len())),
            }
            let mut tools = Vec::new();
            for tool in listed {
                let summary = tool.description.lines().next().unwrap_or("");
                // Every listed tool is offered under its own name (the list follows the server's).
                let hands_name = Some(tool_name(server.name(), &tool.name));
                let how = match &hands_name {
                    Some(name) => format!("as {name}"),
                    None => "through mcp_call".to_owned(),
                };
                text.push_str(&format!(
                    "  {} — {summary}\n    {how}; input schema: {}\n",
                    tool.name, tool.input_schema
                ));
                tools.push(RemoteToolEntry {
                    name: tool.name.clone(),
                    hands_name,
                    description: tool.description.clone(),
                    input_schema: tool.input_schema.clone(),
                    output_schema: tool.output_schema.clone(),
                });
            }
            structured.push(ServerEntry {
                server: server.name().to_owned(),
                error: server.error().map(|e| e.to_string()),
                tools,
            });
        }
        let structured = serde_json::to_value(ServerList { servers: structured })
            .map_err(|err| ToolError::Fatal(format!("mcp_list result did not serialize: {err}")))?;
        Ok(ToolOutput::text(text.trim_end()).with_structured(structured))
    }
}

/// `mcp_call`: call a tool of a configured server by name.
struct McpCall {
    clients: McpClients,
}

/// Arguments of mcp_call.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CallArgs {
    /// The server's name (see mcp_list).
    server: String,
    /// The tool's name on that server.
    tool: String,
    /// The tool's arguments (an object matching its input schema).
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
}

impl Tool for McpCall {
    type Args = CallArgs;

    fn name(&self) -> &'static str {
        "mcp_call"
    }

    fn description(&self) -> Cow<'static, str> {
        Cow::Borrowed(include_str!("mcp_call.md"))
    }

    fn annotations(&self) -> Annotations {
        // Whatever the remote tool claims: see REMOTE.
        REMOTE
    }

    fn policy(&self) -> Policy {
        // Offered in plan mode too: the remote server's own annotations are unknown until the call.
        Policy::from_annotations(self.annotations())
            .modes(Modes::BOTH)
            .family(Family::Mcp)
            .on_host()
            .session_scope(&["server", "tool"])
    }

    async fn call(&self, ctx: Context, args: CallArgs) -> Result<ToolOutput, ToolError> {
        self.clients.call(&args.server, &args.tool, args.arguments, &ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_cleaned_and_capped() {
        assert_eq!(tool_name("echo", "say"), "mcp__echo__say");
        assert_eq!(tool_name("my server", "a.b"), "mcp__my_server__a_b");
        let long = tool_name("server", &"x".repeat(80));
        assert_eq!(long.len(), 64);
        assert!(long.starts_with("mcp__server__xxx"));
        let other = tool_name("server", &format!("{}y", "x".repeat(80)));
        assert_ne!(long, other, "two long names must stay apart");
        assert_eq!(long, tool_name("server", &"x".repeat(80)), "stable");
    }
}
