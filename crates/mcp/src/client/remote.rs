//! A remote tool as its server lists it, and the listing itself.

use rmcp::{Peer, RoleClient};
use serde_json::Value;

/// A remote tool as listed by its server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteTool {
    /// Its name on the server.
    pub(crate) name: String,
    /// Its description.
    pub(crate) description: String,
    /// Its input schema.
    pub(crate) input_schema: Value,
    /// Its output schema, when it returns structured content.
    pub(crate) output_schema: Option<Value>,
    /// The server says it only reads (`readOnlyHint`): a hint that decides the modes that offer
    /// its proxy, never approval.
    pub(crate) read_only_hint: bool,
}

/// Every tool the server lists.
pub(crate) async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<RemoteTool>, String> {
    let tools = peer.list_all_tools().await.map_err(|err| format!("tools/list failed: {err}"))?;
    Ok(tools
        .into_iter()
        .map(|tool| RemoteTool {
            name: tool.name.to_string(),
            description: tool.description.map(|d| d.to_string()).unwrap_or_default(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            output_schema: tool.output_schema.map(|schema| Value::Object((*schema).clone())),
            read_only_hint: tool.annotations.and_then(|a| a.read_only_hint).unwrap_or(false),
        })
        .collect())
}
