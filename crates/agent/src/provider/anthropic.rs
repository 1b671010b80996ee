//! Anthropic's Messages API: `POST {base_url}/v1/messages` with `stream: true`. The request carries
//! the system prompt, the messages as content blocks and the tools; the answer is an event stream
//! (`message_start`, `content_block_start`/`_delta`/`_stop` per block, `message_delta` with the
//! stop reason and usage, `message_stop`; `ping` and `error` anywhere) that [`Stream`] assembles.

use std::collections::BTreeMap;

use hands_core::BoxFuture;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::error::{Caller, ErrorInfo, classify};
use super::exchange::{self, Decoder, Dialect, Endpoint, Failure, Flow, Text};
use super::retry;
use super::sse::SseEvent;
use super::{ConfigError, ProviderOptions, secret_header};
use crate::model::{
    Block, Message, ModelRequest, ModelResponse, Provider, ProviderError, ResultPart, Role,
    StopReason, TextSink, Usage,
};

/// The API version we speak.
const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; used when the request leaves it at 0.
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// A model behind Anthropic's Messages API.
#[derive(Debug)]
pub struct Anthropic {
    endpoint: Endpoint,
    context_window: u64,
    /// The model, URL and key variable, for error messages.
    caller: Caller,
}

impl Anthropic {
    /// A provider for `options` (the key goes in `x-api-key`).
    pub fn new(options: ProviderOptions) -> Result<Self, ConfigError> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        if let Some(key) = &options.api_key {
            headers.insert("x-api-key", secret_header("x-api-key", key)?);
        }
        // `https://api.anthropic.com` and `https://api.anthropic.com/v1` both work.
        let path = if options.base_url.trim_end_matches('/').ends_with("/v1") {
            "/messages"
        } else {
            "/v1/messages"
        };
        let endpoint = options.endpoint(path, headers)?;
        let caller = Caller {
            model: options.model,
            url: endpoint.url.clone(),
            key_env: options.api_key_env,
            key_set: options.api_key.is_some(),
        };
        Ok(Self { endpoint, context_window: options.context_window, caller })
    }
}

impl Provider for Anthropic {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn model(&self) -> &str {
        &self.caller.model
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
            let body =
                serde_json::to_vec(&request_body(&self.caller.model, request)).map_err(|e| {
                    ProviderError::Protocol(format!("could not encode the request: {e}"))
                })?;
            exchange::call(&self.endpoint, self, body, on_text, cancel).await
        })
    }
}

impl Dialect for Anthropic {
    type Decoder = Stream;

    fn decoder(&self) -> Stream {
        Stream { caller: self.caller.clone(), ..Stream::default() }
    }

    fn http_error(&self, status: u16, headers: &HeaderMap, body: &str) -> Failure {
        let info = error_info(body).unwrap_or_else(|| ErrorInfo::raw(status, body));
        let overflow = status == 400 && is_overflow(&info);
        classify(status, &info, overflow, retry::retry_after(headers), &self.caller)
    }
}

/// The request body: `{model, max_tokens, stream, system?, messages, tools?}`.
pub(crate) fn request_body(model: &str, request: &ModelRequest) -> Value {
    let max_tokens = if request.max_tokens == 0 { DEFAULT_MAX_TOKENS } else { request.max_tokens };
    let mut body = json!({ "model": model, "max_tokens": max_tokens, "stream": true });
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    body["messages"] = request
        .messages
        .iter()
        .filter_map(|message| {
            let content: Vec<Value> = message.content.iter().filter_map(block).collect();
            // The API refuses a message without content (all its text blocks were empty).
            (!content.is_empty()).then(|| json!({ "role": role(message.role), "content": content }))
        })
        .collect();
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema }))
            .collect();
    }
    body
}

fn role(role: Role) -> &'static str {
    match role {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn block(block: &Block) -> Option<Value> {
    Some(match block {
        // The API refuses empty text blocks (a model may stream one before a tool call).
        Block::Text { text } if text.is_empty() => return None,
        Block::Text { text } => json!({ "type": "text", "text": text }),
        Block::Image { media_type, data } => image(media_type, data),
        Block::ToolUse { id, name, input } => {
            json!({ "type": "tool_use", "id": id, "name": name, "input": input })
        }
        Block::ToolResult { tool_use_id, content, is_error } => {
            let content: Vec<Value> = content
                .iter()
                .filter_map(|part| match part {
                    ResultPart::Text { text } if text.is_empty() => None,
                    ResultPart::Text { text } => Some(json!({ "type": "text", "text": text })),
                    ResultPart::Image { media_type, data } => Some(image(media_type, data)),
                })
                .collect();
            let mut result = json!({ "type": "tool_result", "tool_use_id": tool_use_id });
            // `content` is optional; an empty list is left out rather than sent.
            if !content.is_empty() {
                result["content"] = Value::Array(content);
            }
            result["is_error"] = json!(is_error);
            result
        }
    })
}

fn image(media_type: &str, data: &str) -> Value {
    json!({ "type": "image", "source": { "type": "base64", "media_type": media_type, "data": data } })
}

/// `{"type": "error", "error": {"type": ..., "message": ...}}`, in a body or an `error` event.
fn error_info(body: &str) -> Option<ErrorInfo> {
    #[derive(Deserialize)]
    struct Envelope {
        error: Inner,
    }
    #[derive(Deserialize)]
    struct Inner {
        #[serde(rename = "type", default)]
        kind: String,
        #[serde(default)]
        message: String,
    }
    let envelope: Envelope = serde_json::from_str(body).ok()?;
    let Inner { kind, message } = envelope.error;
    let message = if message.is_empty() { kind.clone() } else { message };
    Some(ErrorInfo { message, kind, code: String::new() })
}

/// "prompt is too long: 210000 tokens > 200000 maximum", "input length and `max_tokens` exceed
/// context limit", …
fn is_overflow(info: &ErrorInfo) -> bool {
    let message = info.message.to_ascii_lowercase();
    info.kind == "invalid_request_error"
        && (message.contains("prompt is too long") || message.contains("context"))
}

/// The HTTP status an error type stands for, so that an `error` event mid-stream is mapped (and
/// retried) like the same error as a response.
fn status_of(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => 500, // api_error and anything new
    }
}

/// One content block while it streams.
#[derive(Debug)]
enum Partial {
    Text(String),
    Tool {
        id: String,
        name: String,
        json: String,
    },
    /// A block type we do not use (`thinking`, server tools): its deltas are skipped.
    Other,
}

/// The stream decoder: blocks by index, finished blocks in index order.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    caller: Caller,
    started: bool,
    open: BTreeMap<u64, Partial>,
    done: BTreeMap<u64, Block>,
    stop: Option<StopReason>,
    usage: Usage,
}

/// The parts of an event's data we read (unknown fields ignored: the API adds fields).
#[derive(Debug, Deserialize)]
struct Data {
    #[serde(rename = "type", default)]
    kind: String,
    index: Option<u64>,
    message: Option<StartMessage>,
    content_block: Option<Value>,
    delta: Option<Value>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

fn protocol(message: impl Into<String>) -> Failure {
    Failure::fatal(ProviderError::Protocol(message.into()))
}

fn str_field<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

impl Stream {
    fn usage(&mut self, usage: &WireUsage) {
        // The prompt is what was sent, cached or not: the sum is what fills the context window.
        let cached = usage.cache_creation_input_tokens.unwrap_or(0)
            + usage.cache_read_input_tokens.unwrap_or(0);
        if let Some(input) = usage.input_tokens {
            self.usage.input_tokens = input + cached;
        }
        // `message_delta` counts are cumulative: the last one is the total.
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
    }

    fn index(&self, data: &Data) -> Result<u64, Failure> {
        data.index.ok_or_else(|| protocol(format!("{} without an index", data.kind)))
    }

    fn block_start(&mut self, data: &Data, text: &mut Text<'_>) -> Result<(), Failure> {
        let index = self.index(data)?;
        let block = data
            .content_block
            .as_ref()
            .ok_or_else(|| protocol("content_block_start without a content_block"))?;
        let partial = match str_field(block, "type") {
            Some("text") => {
                // Always "" from the API today; passed on should that change.
                let start = str_field(block, "text").unwrap_or("");
                text.push(start);
                Partial::Text(start.to_owned())
            }
            Some("tool_use") => Partial::Tool {
                id: str_field(block, "id")
                    .ok_or_else(|| protocol("a tool_use block without an id"))?
                    .to_owned(),
                name: str_field(block, "name")
                    .ok_or_else(|| protocol("a tool_use block without a name"))?
                    .to_owned(),
                json: String::new(),
            },
            _ => Partial::Other,
        };
        if self.open.insert(index, partial).is_some() || self.done.contains_key(&index) {
            return Err(protocol(format!("content block {index} started twice")));
        }
        Ok(())
    }

    fn block_delta(&mut self, data: &Data, text: &mut Text<'_>) -> Result<(), Failure> {
        let index = self.index(data)?;
        let delta =
            data.delta.as_ref().ok_or_else(|| protocol("content_block_delta without a delta"))?;
        let partial = self.open.get_mut(&index).ok_or_else(|| {
            protocol(format!("a delta for content block {index}, which is not open"))
        })?;
        match (partial, str_field(delta, "type")) {
            (Partial::Text(acc), Some("text_delta")) => {
                let piece = str_field(delta, "text")
                    .ok_or_else(|| protocol("a text_delta without text"))?;
                acc.push_str(piece);
                text.push(piece);
            }
            (Partial::Tool { json, .. }, Some("input_json_delta")) => {
                let piece = str_field(delta, "partial_json")
                    .ok_or_else(|| protocol("an input_json_delta without partial_json"))?;
                json.push_str(piece);
            }
            (Partial::Other, _) => {}
            // Deltas we do not use on blocks we do (`citations_delta` on text).
            (_, Some(kind)) if kind != "text_delta" && kind != "input_json_delta" => {}
            (_, kind) => {
                return Err(protocol(format!(
                    "a {} delta for content block {index} of another type",
                    kind.unwrap_or("untyped")
                )));
            }
        }
        Ok(())
    }

    fn block_stop(&mut self, data: &Data) -> Result<(), Failure> {
        let index = self.index(data)?;
        let partial = self
            .open
            .remove(&index)
            .ok_or_else(|| protocol(format!("content block {index} stopped but was not open")))?;
        let block = match partial {
            Partial::Text(text) if text.is_empty() => return Ok(()),
            Partial::Text(text) => Block::Text { text },
            Partial::Tool { id, name, json } => {
                let input = if json.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(&json).map_err(|e| {
                        protocol(format!("the input of tool call {name} ({id}) is not JSON: {e}"))
                    })?
                };
                Block::ToolUse { id, name, input }
            }
            Partial::Other => return Ok(()),
        };
        self.done.insert(index, block);
        Ok(())
    }
}

impl Decoder for Stream {
    fn event(&mut self, event: SseEvent, text: &mut Text<'_>) -> Result<Flow, Failure> {
        let data: Data = serde_json::from_str(&event.data).map_err(|e| {
            protocol(format!(
                "an event's data is not the expected JSON ({e}): {}",
                exchange::snippet(&event.data)
            ))
        })?;
        // `type` in the data names the event; the `event:` line repeats it.
        let kind = if data.kind.is_empty() { event.event.clone() } else { data.kind.clone() };
        if !self.started && !matches!(kind.as_str(), "message_start" | "ping" | "error") {
            return Err(protocol(format!("{kind} before message_start")));
        }
        match kind.as_str() {
            "message_start" => {
                self.started = true;
                if let Some(usage) = data.message.as_ref().and_then(|m| m.usage.as_ref()) {
                    self.usage(usage);
                }
            }
            "content_block_start" => self.block_start(&data, text)?,
            "content_block_delta" => self.block_delta(&data, text)?,
            "content_block_stop" => self.block_stop(&data)?,
            "message_delta" => {
                if let Some(reason) = data.delta.as_ref().and_then(|d| str_field(d, "stop_reason"))
                {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(usage) = &data.usage {
                    self.usage(usage);
                }
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => {
                let info =
                    error_info(&event.data).unwrap_or_else(|| ErrorInfo::raw(500, &event.data));
                let status = status_of(&info.kind);
                let overflow = status == 400 && is_overflow(&info);
                return Err(classify(status, &info, overflow, None, &self.caller));
            }
            // `ping`, and event types added after this was written (the API's versioning policy
            // says to ignore them).
            _ => {}
        }
        Ok(Flow::More)
    }

    fn finish(self, done: bool) -> Result<ModelResponse, Failure> {
        if !done {
            return Err(Failure::transport("the response stream ended before message_stop"));
        }
        if let Some(index) = self.open.keys().next() {
            return Err(protocol(format!(
                "message_stop while content block {index} is still open"
            )));
        }
        let stop = self.stop.ok_or_else(|| protocol("message_stop without a stop_reason"))?;
        Ok(ModelResponse {
            message: Message { role: Role::Assistant, content: self.done.into_values().collect() },
            stop,
            usage: self.usage,
        })
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        other => StopReason::Other(other.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolDef;

    #[test]
    fn the_request_has_the_wire_shape() {
        let request = ModelRequest {
            system: "be brief".into(),
            messages: vec![
                Message {
                    role: Role::User,
                    content: vec![
                        Block::Text { text: "look".into() },
                        Block::Image { media_type: "image/png".into(), data: "iVBO".into() },
                    ],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Block::Text { text: String::new() },
                        Block::ToolUse {
                            id: "toolu_1".into(),
                            name: "read_file".into(),
                            input: json!({"path": "a"}),
                        },
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![Block::ToolResult {
                        tool_use_id: "toolu_1".into(),
                        content: vec![
                            ResultPart::Text { text: "no such file".into() },
                            ResultPart::Image {
                                media_type: "image/jpeg".into(),
                                data: "/9j/".into(),
                            },
                        ],
                        is_error: true,
                    }],
                },
            ],
            tools: vec![ToolDef {
                name: "read_file".into(),
                description: "Read a file.".into(),
                input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            max_tokens: 1000,
        };
        assert_eq!(
            request_body("claude-x", &request),
            json!({
                "model": "claude-x", "max_tokens": 1000, "stream": true, "system": "be brief",
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true, "content": [
                            {"type": "text", "text": "no such file"},
                            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
                        ]},
                    ]},
                ],
                "tools": [{"name": "read_file", "description": "Read a file.",
                           "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
            })
        );
        let empty = ModelRequest {
            messages: vec![Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    tool_use_id: "toolu_2".into(),
                    content: vec![ResultPart::Text { text: String::new() }],
                    is_error: false,
                }],
            }],
            max_tokens: 10,
            ..ModelRequest::default()
        };
        assert_eq!(
            request_body("m", &empty)["messages"][0]["content"],
            json!([{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": false}])
        );
        let bare = ModelRequest { messages: vec![Message::user("hi")], ..ModelRequest::default() };
        assert_eq!(
            request_body("m", &bare),
            json!({"model": "m", "max_tokens": 8192, "stream": true,
                   "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
        );
    }

    #[test]
    fn error_types_map_to_statuses() {
        assert_eq!(status_of("overloaded_error"), 529);
        assert_eq!(status_of("rate_limit_error"), 429);
        assert_eq!(status_of("something_new"), 500);
        let info = error_info(r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#).unwrap();
        assert!(is_overflow(&info));
        assert!(error_info("<html>").is_none());
    }
}
