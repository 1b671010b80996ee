//! The conversation as hands keeps it, independent of any provider's wire format, and the
//! [`Provider`] trait every model backend implements (Anthropic Messages, OpenAI-compatible chat
//! completions, MCP sampling). Providers translate these types to and from their exact wire format;
//! the loop and the store only ever see these.

use std::time::Duration;

use hands_core::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The user, and tool results (both providers send tool results on the user side or as
    /// their own role; the provider decides).
    User,
    /// The model.
    Assistant,
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image the user attached.
    Image {
        /// `image/png`, `image/jpeg`, `image/gif`, `image/webp`.
        media_type: String,
        /// Base64 of the bytes.
        data: String,
    },
    /// The model asks for a tool call.
    ToolUse {
        /// The provider's id for the call (echoed back in the result).
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments (a JSON object).
        input: Value,
    },
    /// The result of a tool call, sent back to the model.
    ToolResult {
        /// The id of the `ToolUse` it answers.
        tool_use_id: String,
        /// Text and images.
        content: Vec<ResultPart>,
        /// The call failed (the text says why).
        is_error: bool,
    },
}

/// Part of a tool result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResultPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (a screenshot, a read_file of a PNG).
    Image {
        /// `image/png`, …
        media_type: String,
        /// Base64 of the bytes.
        data: String,
    },
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<Block>,
}

impl Message {
    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self { role: Role::User, content: vec![Block::Text { text: text.into() }] }
    }

    /// The text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: String,
    /// The conversation so far, oldest first; the last message is the user's (or tool results).
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: Vec<ToolDef>,
    /// Output token limit for this response.
    pub max_tokens: u32,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its answer.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// It hit `max_tokens`.
    MaxTokens,
    /// Anything else the provider said (`stop_sequence`, `content_filter`, …).
    Other(String),
}

/// Tokens used by one response.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

/// The whole of one model response, assembled from the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResponse {
    /// The assistant message: text blocks and tool uses, in the order streamed.
    pub message: Message,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens used.
    pub usage: Usage,
}

/// Receives the text as it streams (called once per delta, in order).
pub type TextSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// Why a model call failed. Each says what the user should do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// 401/403: the key is missing or wrong.
    #[error("the model provider refused the API key: {0}")]
    Auth(String),
    /// 404 or the provider's "model not found".
    #[error("the model provider does not know this model: {0}")]
    UnknownModel(String),
    /// The conversation is longer than the model's context window.
    #[error("the conversation is too long for the model's context window: {0}")]
    ContextOverflow(String),
    /// 429 after the retries ran out.
    #[error("the model provider is rate limiting us: {message}")]
    RateLimited {
        /// What the provider asked us to wait, when it said.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// 5xx (or 529 overloaded) after the retries ran out.
    #[error("the model provider failed (HTTP {status}): {message}")]
    Server {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Any other 4xx: the request was bad.
    #[error("the model provider rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Connection refused, reset, DNS, TLS, timeout.
    #[error("could not reach the model provider: {0}")]
    Transport(String),
    /// The stream did not follow the provider's format.
    #[error("the model provider sent something unexpected: {0}")]
    Protocol(String),
    /// The call's cancel token fired.
    #[error("the model call was cancelled")]
    Cancelled,
}

/// A model backend.
pub trait Provider: Send + Sync {
    /// `anthropic`, `openai`, `mcp-sampling`, …
    fn name(&self) -> &str;
    /// The model's name as configured.
    fn model(&self) -> &str;
    /// The model's context window in tokens (from config, or a known default for the model).
    fn context_window(&self) -> u64;
    /// Stream one response: text deltas go to `on_text` as they arrive; the assembled response
    /// is returned at the end. Retries (429/5xx with backoff, honouring `retry-after`) happen
    /// inside, but only before the first delta was passed on. Returns `Cancelled` promptly when
    /// `cancel` fires.
    fn complete<'a>(
        &'a self,
        request: &'a ModelRequest,
        on_text: TextSink<'a>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<ModelResponse, ProviderError>>;
}
