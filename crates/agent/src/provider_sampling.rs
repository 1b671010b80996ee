//! [`SamplingProvider`]: a [`Provider`] over the MCP client's sampling (`sampling/createMessage`),
//! so that spawn_subagent works over MCP with the client's own model and no `[model]` of ours.
//!
//! The whole conversation goes in each request (sampling is stateless); tools go along only when
//! the client declared `sampling.tools` (SEP-1577), otherwise the model answers from the prompt
//! alone. Sampling does not stream: the text arrives at once and is passed on as one delta.
//!
//! The hook the MCP server needs: after `initialize` (once the peer's info is set), call
//! [`install`] with the connection's session and peer; it installs a
//! [`SubagentEnv`] with this provider when the client offers
//! sampling, and does nothing otherwise (spawn_subagent then says that the session has no model).
// Sampling is marked deprecated in rmcp (SEP-2577), but it is what MCP clients offer today.
#![allow(deprecated)]

use std::sync::Arc;

use hands_core::{BoxFuture, CancellationToken, Registry, Session};
use rmcp::model::{
    ContentBlock, CreateMessageRequestParams, CreateMessageResult, Role as McpRole,
    SamplingMessage, SamplingMessageContentBlock, Tool as McpTool, ToolResultContent,
};
use rmcp::service::{Peer, RoleServer, ServiceError};
use serde_json::Value;

use crate::model::{
    Block, Message, ModelRequest, ModelResponse, Provider, ProviderError, ResultPart, Role,
    StopReason, TextSink, Usage,
};
use crate::subagent::SubagentEnv;
use crate::turn::Limits;

/// The context window assumed for the client's model (sampling does not say).
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// A provider that asks the MCP client's model.
#[derive(Clone)]
pub struct SamplingProvider {
    peer: Peer<RoleServer>,
    context_window: u64,
}

impl SamplingProvider {
    /// Over `peer`, assuming `context_window` tokens.
    pub fn new(peer: Peer<RoleServer>, context_window: u64) -> Self {
        Self { peer, context_window }
    }

    /// True when the client declared the sampling capability.
    pub fn offered(peer: &Peer<RoleServer>) -> bool {
        peer.peer_info().is_some_and(|info| info.capabilities.sampling.is_some())
    }
}

/// Install spawn_subagent's environment on `session` with the client's sampling as its model,
/// when the client offers sampling. Returns whether it did.
pub fn install(
    session: &Session,
    peer: &Peer<RoleServer>,
    registry: Arc<Registry>,
    limits: Limits,
) -> bool {
    if !SamplingProvider::offered(peer) {
        return false;
    }
    SubagentEnv {
        provider: Arc::new(SamplingProvider::new(peer.clone(), DEFAULT_CONTEXT_WINDOW)),
        registry,
        limits,
        source: crate::subagent::ModelSource::ClientSampling,
    }
    .install(session);
    true
}

fn result_part(part: &ResultPart) -> ContentBlock {
    match part {
        ResultPart::Text { text } => ContentBlock::text(text.clone()),
        ResultPart::Image { media_type, data } => ContentBlock::image(data.clone(), media_type),
    }
}

/// A tool call or result as text, for clients without sampling tools.
fn as_text(block: &Block) -> Option<String> {
    match block {
        Block::ToolUse { name, input, .. } => Some(format!("[called {name} with {input}]")),
        Block::ToolResult { content, is_error, .. } => {
            let text: Vec<&str> = content
                .iter()
                .filter_map(|p| match p {
                    ResultPart::Text { text } => Some(text.as_str()),
                    ResultPart::Image { .. } => None,
                })
                .collect();
            let label = if *is_error { "tool error" } else { "tool result" };
            Some(format!("[{label}]\n{}", text.join("\n")))
        }
        _ => None,
    }
}

fn block(block: &Block, tools: bool) -> SamplingMessageContentBlock {
    match block {
        Block::Text { text } => SamplingMessageContentBlock::text(text.clone()),
        Block::Image { media_type, data } => SamplingMessageContentBlock::Image(
            rmcp::model::ImageContent::new(data.clone(), media_type.clone()),
        ),
        Block::ToolUse { id, name, input } if tools => {
            let input = input.as_object().cloned().unwrap_or_default();
            SamplingMessageContentBlock::tool_use(id.clone(), name.clone(), input)
        }
        Block::ToolResult { tool_use_id, content, is_error } if tools => {
            let content = content.iter().map(result_part).collect();
            let mut result = if *is_error {
                ToolResultContent::error(tool_use_id.clone(), content)
            } else {
                ToolResultContent::new(tool_use_id.clone(), content)
            };
            if !*is_error {
                result.is_error = Some(false);
            }
            SamplingMessageContentBlock::ToolResult(result)
        }
        other => SamplingMessageContentBlock::text(as_text(other).unwrap_or_default()),
    }
}

/// `params` with stored values and key shapes replaced: the last pass before a request leaves
/// for the client's model, as for every provider.
fn redacted(
    params: CreateMessageRequestParams,
) -> Result<CreateMessageRequestParams, ProviderError> {
    let mut value = serde_json::to_value(&params).map_err(|e| {
        ProviderError::Protocol(format!("a sampling request did not serialize: {e}"))
    })?;
    if !hands_core::redact::json(&mut value) {
        return Ok(params);
    }
    serde_json::from_value(value).map_err(|e| {
        ProviderError::Protocol(format!("a redacted sampling request did not parse back: {e}"))
    })
}

/// The request as sampling parameters. A user message that carries tool results and other
/// content (notices, the next user message) becomes two: sampling wants tool results alone.
pub fn to_params(request: &ModelRequest, tools: bool) -> CreateMessageRequestParams {
    let mut messages = Vec::new();
    for message in crate::turn::merged(&request.messages) {
        let role = match message.role {
            Role::User => McpRole::User,
            Role::Assistant => McpRole::Assistant,
        };
        let (results, rest): (Vec<&Block>, Vec<&Block>) =
            message.content.iter().partition(|b| tools && matches!(b, Block::ToolResult { .. }));
        for group in [results, rest] {
            if !group.is_empty() {
                let blocks = group.into_iter().map(|b| block(b, tools)).collect();
                messages.push(SamplingMessage::new_multiple(role.clone(), blocks));
            }
        }
    }
    let mut params = CreateMessageRequestParams::new(messages, request.max_tokens);
    if !request.system.is_empty() {
        params.system_prompt = Some(request.system.clone());
    }
    if tools && !request.tools.is_empty() {
        params.tools = Some(
            request
                .tools
                .iter()
                .map(|t| {
                    let schema = t.input_schema.as_object().cloned().unwrap_or_default();
                    McpTool::new(t.name.clone(), t.description.clone(), Arc::new(schema))
                })
                .collect(),
        );
    }
    params
}

/// The client's answer as a model response.
pub fn from_result(result: CreateMessageResult) -> Result<ModelResponse, ProviderError> {
    if result.message.role != McpRole::Assistant {
        return Err(ProviderError::Protocol(
            "the MCP client answered the sampling request with a user message".into(),
        ));
    }
    let content: Vec<Block> = result
        .message
        .content
        .into_vec()
        .into_iter()
        .filter_map(|c| match c {
            SamplingMessageContentBlock::Text(t) => Some(Block::Text { text: t.text }),
            SamplingMessageContentBlock::ToolUse(t) => {
                Some(Block::ToolUse { id: t.id, name: t.name, input: Value::Object(t.input) })
            }
            SamplingMessageContentBlock::Image(i) => {
                Some(Block::Image { media_type: i.mime_type, data: i.data })
            }
            _ => None,
        })
        .collect();
    let has_tools = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    let stop = match result.stop_reason.as_deref() {
        Some(CreateMessageResult::STOP_REASON_TOOL_USE) => StopReason::ToolUse,
        Some(CreateMessageResult::STOP_REASON_END_MAX_TOKEN) => StopReason::MaxTokens,
        Some(CreateMessageResult::STOP_REASON_END_TURN) => StopReason::EndTurn,
        _ if has_tools => StopReason::ToolUse,
        None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_owned()),
    };
    Ok(ModelResponse {
        message: Message { role: Role::Assistant, content },
        stop,
        usage: Usage::default(),
    })
}

fn error(err: ServiceError) -> ProviderError {
    match err {
        ServiceError::McpError(e) => ProviderError::BadRequest {
            status: 400,
            message: format!("the MCP client refused the sampling request: {}", e.message),
        },
        ServiceError::Cancelled { .. } => ProviderError::Cancelled,
        ServiceError::Timeout { timeout } => ProviderError::Transport(format!(
            "the MCP client did not answer the sampling request within {} s",
            timeout.as_secs()
        )),
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
            ProviderError::Transport(format!("the MCP client is gone: {err}"))
        }
        other => ProviderError::Protocol(other.to_string()),
    }
}

impl Provider for SamplingProvider {
    fn name(&self) -> &str {
        "mcp-sampling"
    }

    fn model(&self) -> &str {
        "the MCP client's model"
    }

    fn context_window(&self) -> u64 {
        self.context_window
    }

    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        on_text: TextSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>> {
        Box::pin(async move {
            let params = redacted(to_params(request, self.peer.supports_sampling_tools()))?;
            let result = tokio::select! {
                result = self.peer.create_message(params) => result.map_err(error)?,
                () = cancel.cancelled() => return Err(ProviderError::Cancelled),
            };
            let response = from_result(result)?;
            let text = response.message.text();
            if !text.is_empty() {
                on_text(&text);
            }
            Ok(response)
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::ToolDef;

    fn request() -> ModelRequest {
        ModelRequest {
            system: "be brief".into(),
            messages: vec![
                Message::user("find it"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::Text { text: "looking".into() },
                        Block::ToolUse {
                            id: "t1".into(),
                            name: "grep".into(),
                            input: json!({"pattern": "x"}),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![
                        Block::ToolResult {
                            tool_use_id: "t1".into(),
                            content: vec![ResultPart::Text { text: "a.rs:1: x".into() }],
                            is_error: false,
                        },
                        Block::Text { text: "[notice] p1 exited".into() },
                    ],
                },
            ],
            tools: vec![ToolDef {
                name: "grep".into(),
                description: "search".into(),
                input_schema: json!({"type": "object"}),
            }],
            max_tokens: 100,
        }
    }

    #[test]
    fn tool_results_go_alone_and_the_request_validates() {
        let params = to_params(&request(), true);
        assert_eq!(params.messages.len(), 4);
        assert!(params.validate().is_ok(), "{:?}", params.validate());
        assert_eq!(params.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(params.tools.as_ref().map(Vec::len), Some(1));
        assert!(matches!(
            params.messages[2].content.first(),
            Some(SamplingMessageContentBlock::ToolResult(_))
        ));
        assert_eq!(params.messages[3].role, McpRole::User);
    }

    #[test]
    fn without_sampling_tools_calls_become_text() {
        let params = to_params(&request(), false);
        assert!(params.tools.is_none());
        assert!(params.validate().is_ok());
        assert_eq!(params.messages.len(), 3);
        let texts: Vec<String> = params.messages[2]
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        assert!(texts[0].contains("a.rs:1: x"), "{texts:?}");
    }

    #[test]
    fn results_come_back_as_blocks() {
        let message = SamplingMessage::new_multiple(
            McpRole::Assistant,
            vec![
                SamplingMessageContentBlock::text("reading"),
                SamplingMessageContentBlock::tool_use(
                    "u1",
                    "read_file",
                    json!({"path": "a"}).as_object().cloned().unwrap_or_default(),
                ),
            ],
        );
        let result = CreateMessageResult::new(message, "m".into())
            .with_stop_reason(CreateMessageResult::STOP_REASON_TOOL_USE);
        let response = from_result(result).unwrap();
        assert_eq!(response.stop, StopReason::ToolUse);
        assert_eq!(response.message.text(), "reading");
        assert!(
            matches!(&response.message.content[1], Block::ToolUse { name, .. } if name == "read_file")
        );
        let user = CreateMessageResult::new(SamplingMessage::user_text("hi"), "m".into());
        assert!(matches!(from_result(user), Err(ProviderError::Protocol(_))));
    }
}
